"""Rubric items derived from a task's goals (`rubric_from_goals`), on a hand-built task: expected items written by
hand from the rule (each goal's final gold calls with their checked arguments, then its values to tell)."""

from __future__ import annotations

from shiftbox.generation import rubric_from_goals
from shiftbox.tasks import ActionSet, EvaluationCriteria, ToolCallSpec


def action(action_id: str, goal: str, tool: str, params: dict, depends_on: tuple[str, ...] = (),
           required: list[str] | None = None, error: str | None = None) -> ActionSet:
    return ActionSet(action_id=action_id, goal=goal, depends_on=list(depends_on), required_parameters=required,
                     allowed_tools=[ToolCallSpec(function_name=tool, params=params, expected_error=error)])


def test_items_name_each_goals_final_calls_and_values_to_tell() -> None:
    criteria = EvaluationCriteria(
        action_sets=[
            action("order_exchange.check", "order_exchange", "get_order", {"order_id": "#W1"}),
            action("order_exchange.swap", "order_exchange", "exchange_items",
                   {"order_id": "#W1", "item_ids": ["i1", "i2"], "payment": "gift"}, ("order_exchange.check",),
                   required=["item_ids", "order_id"]),
            action("refund.card", "refund", "refund_card", {"card": 'the "blue" card', "note": ""}, error="precondition_failed"),
            action("refund.ask", "refund", "ask_manager", {}),
        ],
        communicate_info_by_goal={"order_exchange": ["-3.50"], "refund": ["7 days", "-3.50"]})
    assert rubric_from_goals(["order_exchange", "refund"], criteria) == [
        # get_order is needed by exchange_items, so only the final call is checked, with its required arguments
        'Request 1 (order exchange): the agent calls "exchange_items" with item_ids [\'i1\', \'i2\'], '
        "order_id #W1, and the call succeeds.",
        'Request 1 (order exchange): the agent tells the user "-3.50".',
        # two independent calls: both final; a double quote in an argument becomes a single one, "" is (empty)
        "Request 2 (refund): the agent calls \"refund_card\" with card the 'blue' card, note (empty), and the call "
        "is refused as expected (precondition_failed).",
        'Request 2 (refund): the agent calls "ask_manager", and the call succeeds.',
        'Request 2 (refund): the agent tells the user "7 days".',
        'Request 2 (refund): the agent tells the user "-3.50".',
    ]


def test_a_goal_without_calls_or_values_has_no_item_and_repeats_are_dropped() -> None:
    same = action("a.x", "a", "t", {"k": 1})
    twice = action("a.y", "a", "t", {"k": 1})
    assert rubric_from_goals(["a", "b"], EvaluationCriteria(action_sets=[same, twice])) == [
        'Request 1 (a): the agent calls "t" with k 1, and the call succeeds.']
