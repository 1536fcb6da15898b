"""The one rule for when each goal is current (`goal_spans`), with the two readings of a stacked request."""

from __future__ import annotations

from shiftbox.trajectory import GoalShift, GoalSpan, Message, goal_spans


def conversation(*turns: tuple[str, str | None]) -> list[Message]:
    """Messages from (role, goal) pairs; the goal is kept on user messages only."""
    return [Message(index=i, role=role, content=f"m{i}", goal=goal if role == "user" else None)
            for i, (role, goal) in enumerate(turns)]


def shift(k: int, a: str, b: str, at: int) -> GoalShift:
    return GoalShift(shift_index=k, from_goal=a, to_goal=b, message_index=at)


PLAIN = conversation(("user", "A"), ("assistant", None), ("user", "B"), ("assistant", None), ("user", "C"),
                     ("assistant", None))
PLAIN_SHIFTS = [shift(2, "B", "C", 4), shift(1, "A", "B", 2)]  # out of order on purpose: spans follow the messages

# message 2 asks for B and stacks C; the user turns to C at message 4
STACKED = PLAIN
STACKED_SHIFTS = [shift(1, "A", "B", 2), shift(2, "B", "C", 2)]


def test_one_goal_after_another_is_the_same_span_in_every_reading():
    expected = [GoalSpan("A", 0, 2), GoalSpan("B", 2, 4, "A", PLAIN_SHIFTS[1]), GoalSpan("C", 4, 6, "B", PLAIN_SHIFTS[0])]
    assert goal_spans(PLAIN, PLAIN_SHIFTS, goals=["A", "B", "C"], stacked="turned_to") == expected
    assert goal_spans(PLAIN, PLAIN_SHIFTS, stacked="shared") == expected
    assert goal_spans(PLAIN, None) == [GoalSpan("A", 0, 2), GoalSpan("B", 2, 4, "A"), GoalSpan("C", 4, 6, "B")]


def test_a_stacked_request_shares_its_message_or_waits_until_the_user_turns_to_the_goal():
    ab, bc = STACKED_SHIFTS
    assert goal_spans(STACKED, STACKED_SHIFTS, stacked="shared") == [
        GoalSpan("A", 0, 2), GoalSpan("B", 2, 6, "A", ab), GoalSpan("C", 2, 6, "B", bc)]
    assert goal_spans(STACKED, STACKED_SHIFTS, goals=["A", "B", "C"], stacked="turned_to") == [
        GoalSpan("A", 0, 2), GoalSpan("B", 2, 4, "A", ab), GoalSpan("C", 4, 6, "B", bc)]


def test_a_stacked_goal_the_user_never_turns_to_has_an_empty_span():
    short = STACKED[:4]
    assert [(s.goal, s.start, s.end) for s in goal_spans(short, STACKED_SHIFTS, goals=["A", "B", "C"])] == [
        ("A", 0, 2), ("B", 2, 4), ("C", 4, 4)]


def test_the_task_names_the_goals_when_given():
    assert [s.goal for s in goal_spans(PLAIN, PLAIN_SHIFTS, goals=["x", "y"])] == ["x", "y", "C"]


def test_read_off_the_messages_a_goal_changes_where_a_user_message_names_another():
    messages = conversation(("assistant", None), ("user", None), ("user", "A"), ("assistant", None), ("user", "A"),
                            ("user", "B"))
    # a user message without a goal before the first goal changes nothing; A -> B at message 5
    assert goal_spans(messages, None) == [GoalSpan("A", 0, 5), GoalSpan("B", 5, 6, "A")]


def test_no_messages_no_spans():
    assert goal_spans([], None) == []
    assert goal_spans([], [], stacked="shared") == []
    # a simulation lost before its first message (a killed worker) has no spans in the path reading either
    assert goal_spans([], [], goals=["A", "B"], stacked="turned_to") == []
