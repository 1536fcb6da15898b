"""Retail-specific properties of the generated task set (the common ones are in test_generate.py)."""

from __future__ import annotations

from tests.client.tasks.generation import seed7

IDENTIFY = ("find_user_id_by_email", "find_user_id_by_name_zip")


def test_the_customer_is_identified_once_before_anything_about_them():
    for task in seed7("retail").tasks:
        sets = task.evaluation_criteria.action_sets
        tools = [a.allowed_tools[0].function_name for a in sets]
        customer_specific = [g for g in task.goals if g != "product_inquiry"]
        assert sum(t in IDENTIFY for t in tools) == (1 if customer_specific else 0), task.id
        if customer_specific:
            identify = next(a for a in sets if a.allowed_tools[0].function_name in IDENTIFY)
            assert identify.goal == customer_specific[0], task.id
            mine = [a for a in sets if a.goal == identify.goal and a is not identify]
            assert all(a.depends_on for a in mine), task.id
