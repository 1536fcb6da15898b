"""Airline-specific properties of the generated task set (the common ones are in test_generate.py)."""

from __future__ import annotations

import re
import sqlite3

from tests.client.tasks.generation import seed7, snapshot_dir


def test_the_user_is_introduced_by_user_id():
    for task in seed7("airline").tasks:
        assert re.search(r"your user id is [a-z_]+_\d+\.", task.user_scenario.instructions.known_info), task.id


def test_later_goals_act_on_what_earlier_goals_booked():
    """Missions of one task share its episode: a reservation booked by an earlier goal is changed, cancelled or
    given bags by a later one, and the user knows it from the conversation, not from known_info."""
    db = sqlite3.connect(snapshot_dir("airline") / "db.sqlite")
    try:
        snapshot_ids = {row[0] for row in db.execute("SELECT reservation_id FROM reservations")}
    finally:
        db.close()
    chained = 0
    for task in seed7("airline").tasks:
        new_ids = {a.allowed_tools[0].params.get("reservation_id") for a in task.evaluation_criteria.action_sets
                   if a.allowed_tools[0].function_name != "book_reservation"} - snapshot_ids - {None}
        if new_ids:
            chained += 1
            assert "book_reservation" in {a.allowed_tools[0].function_name
                                          for a in task.evaluation_criteria.action_sets}, task.id
            assert not any(rid in task.user_scenario.instructions.known_info for rid in new_ids), task.id
    assert chained >= 5
