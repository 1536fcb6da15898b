"""A goal's action type is a field of the task (`goal_shifts.action_types`); task files written before it had the
field carry the types in their notes (`...; action types: goal=type, ...`), which the model reads when the field is
absent, and those files stay byte-identical when written back."""

from __future__ import annotations

import json

import pytest

from shiftbox.tasks import Task, action_types_from_notes, load_task_file
from shiftbox_servers.kit import task_domains
from tests.client.harness import REPO

OLD_NOTES = "generator v2 seed=7; subject c1; action types: authentication=single, insights=chat, dispute=clarify"
GENERATED = [REPO / "snapshots" / d / "v1" / "tasks.json" for d in task_domains()] + \
    [REPO / "tasks" / "cross-domain.json"]


def task(notes: str | None = None, action_types: dict | None = None) -> Task:
    shifts = {"required_shifts": 2, "goals": ["authentication", "insights", "dispute"]}
    if action_types is not None:
        shifts["action_types"] = action_types
    return Task.model_validate({"id": "t1", "domain": "banking", "description": {"notes": notes},
                                "user_scenario": {"instructions": {"reason_for_call": "x"}, "goal_shifts": shifts}})


def test_the_old_notes_form_is_read_when_the_field_is_absent():
    assert action_types_from_notes(OLD_NOTES) == {"authentication": "single", "insights": "chat", "dispute": "clarify"}
    assert task(OLD_NOTES).action_types == {"authentication": "single", "insights": "chat", "dispute": "clarify"}


def test_notes_without_the_old_form_give_no_types():
    assert action_types_from_notes(None) == {}
    assert action_types_from_notes("hand-written") == {}
    assert task("hand-written").action_types == {}


def test_an_unknown_type_or_a_malformed_item_in_old_notes_is_left_out():
    assert action_types_from_notes("x; action types: a=chat, b=teleport, c") == {"a": "chat"}


def test_the_field_wins_over_the_notes():
    assert task(OLD_NOTES, {"insights": "single"}).action_types == {"insights": "single"}


def test_a_type_that_is_no_action_type_is_refused():
    with pytest.raises(ValueError, match="action_types"):
        task(action_types={"insights": "teleport"})


def test_the_field_is_written_unless_the_notes_already_say_it():
    dumped = task("hand-written", {"insights": "chat"}).model_dump(mode="json")
    assert dumped["user_scenario"]["goal_shifts"]["action_types"] == {"insights": "chat"}
    assert "action_types" not in task("hand-written").model_dump(mode="json")["user_scenario"]["goal_shifts"]
    assert "action_types" not in task(OLD_NOTES).model_dump(mode="json")["user_scenario"]["goal_shifts"]
    changed = task(OLD_NOTES)
    changed.user_scenario.goal_shifts.action_types = {"insights": "single"}
    assert changed.model_dump(mode="json")["user_scenario"]["goal_shifts"]["action_types"] == {"insights": "single"}


@pytest.mark.parametrize("path", GENERATED, ids=lambda p: p.parent.parent.name if p.name == "tasks.json" else p.stem)
def test_a_committed_generated_file_reads_its_types_and_is_written_back_unchanged(path):
    text = path.read_text(encoding="utf-8")
    task_file = load_task_file(path)
    assert all(t.action_types and set(t.action_types) == set(t.goals) for t in task_file.tasks)
    assert task_file.model_dump_json(indent=2) + "\n" == text
    assert task_file.model_dump(mode="json") == json.loads(text)
