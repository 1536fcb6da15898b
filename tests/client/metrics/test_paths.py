"""Multi-Mission Tool Bench path evaluation and mission types on hand-built trajectories; every expected value is
worked out by hand in the test."""

from __future__ import annotations

import pytest

from shiftbox.metrics import (
    compute_run_metrics,
    execution_paths,
    fewest_steps,
    goal_paths,
    optimal_paths,
)
from shiftbox.metrics._missions import mission_type
from shiftbox.tasks import ActionSet, ToolCallSpec
from tests.client.metrics.build import Builder, task

PHONE = ("get_customer_by_phone", {"phone_number": "555"})
ACCOUNTS = ("get_accounts", {"customer_id": "c1"})
TRANSACTIONS = ("get_transactions", {"account_id": "a1"})
STATEMENTS = ("get_statements", {"account_id": "a1"})


def gold(action_id: str, goal: str, call: tuple[str, dict], after=(), required=None) -> ActionSet:
    name, params = call
    return ActionSet(action_id=action_id, goal=goal, allowed_tools=[ToolCallSpec(function_name=name, params=params)],
                     depends_on=list(after), required_parameters=required)


def labelled(t, types: str):
    """The task with the generator's mission labels: "goal=type, goal=type"."""
    t.user_scenario.goal_shifts.action_types = dict(item.split("=") for item in types.split(", "))
    return t


def one(path):
    """An execution path written as strings: "ab,c" is ({a, b}, {c})."""
    return tuple(frozenset(step) for step in path.split(","))


# -- execution paths -------------------------------------------------------------------------------


def test_a_parallel_group_then_its_dependent_has_three_paths_and_one_optimal():
    graph = {"a": [], "b": [], "c": ["a", "b"]}
    # a and b together then c; a, b, c; b, a, c
    assert set(execution_paths(graph)) == {one("ab,c"), one("a,b,c"), one("b,a,c")}
    assert fewest_steps(graph) == 2 and optimal_paths(graph) == [one("ab,c")]


def test_one_tool_per_turn_leaves_two_equally_optimal_orders():
    graph = {"a": [], "b": [], "c": ["a", "b"]}
    assert fewest_steps(graph, parallel=False) == 3
    assert sorted(optimal_paths(graph, parallel=False), key=str) == sorted([one("a,b,c"), one("b,a,c")], key=str)


def test_a_fan_out_and_independent_sets_count_as_by_hand():
    fan = {"r": [], "x": ["r"], "y": ["r"]}
    assert set(execution_paths(fan)) == {one("r,xy"), one("r,x,y"), one("r,y,x")}
    assert optimal_paths(fan) == [one("r,xy")]
    # three independent sets: 1 path in one step, 6 in two (3 ways to pick the lone set x 2 orders), 6 in three
    assert len(list(execution_paths({"a": [], "b": [], "c": []}))) == 13
    assert optimal_paths({"a": [], "b": [], "c": []}) == [one("abc")]


def test_dependencies_outside_the_graph_are_not_steps_and_a_circle_is_refused():
    assert fewest_steps({"x": ["other_goal.auth"], "y": ["x"]}) == 2
    with pytest.raises(ValueError, match="circle"):
        fewest_steps({"a": ["b"], "b": ["a"]})


# -- mission types ---------------------------------------------------------------------------------


def test_mission_type_from_the_graph_and_the_generators_chat_and_clarify_labels():
    sets = [gold("s.1", "single", PHONE),
            gold("c.1", "chain", ACCOUNTS), gold("c.2", "chain", TRANSACTIONS, ["c.1"]),
            gold("p.1", "fan", ACCOUNTS), gold("p.2", "fan", TRANSACTIONS),
            gold("f.review", "fraud", TRANSACTIONS, ["s.1"]), gold("f.lock", "fraud", ACCOUNTS, ["f.review"]),
            gold("f.dispute", "fraud", STATEMENTS, ["f.review"]),
            gold("t.1", "talk", STATEMENTS), gold("q.1", "ask", TRANSACTIONS)]
    t = labelled(task(goals=("single", "chain", "fan", "fraud", "talk", "ask", "nothing"), actions=sets),
                 "single=single, chain=serial, fan=parallel, fraud=parallel, talk=chat, ask=clarify")
    kinds = {g: mission_type(t, g) for g in t.goals}
    # fraud: labelled parallel by the generator, but review comes before lock and dispute (the dependency on
    # another goal's set is not a step of this goal); nothing: no action set, so no tool is needed
    assert kinds == {"single": "single", "chain": "serial", "fan": "parallel", "fraud": "serial+parallel",
                     "talk": "chat", "ask": "clarify", "nothing": "chat"}


# -- path evaluation per goal ----------------------------------------------------------------------


def insights_task():
    sets = [gold("auth.id", "authentication", PHONE),
            gold("i.acc", "insights", ACCOUNTS, ["auth.id"]), gold("i.tx", "insights", TRANSACTIONS, ["auth.id"]),
            gold("i.st", "insights", STATEMENTS, ["auth.id"])]
    return task(goals=("authentication", "insights"), actions=sets)


def authenticated() -> Builder:
    """Goal 1 done in one turn: messages 0-5; the shift to insights is message 6."""
    return (Builder().user("hi", goal="authentication").agent("Your phone number?").user("555", goal="authentication")
            .agent(calls=[PHONE]).agent("Verified.")
            .user("Where is my money going?", goal="insights", shift_from="authentication"))


def test_a_parallel_group_batched_in_one_turn_is_optimal():
    t = authenticated().agent(calls=[ACCOUNTS, TRANSACTIONS, STATEMENTS]).agent("Here it is.").build()
    auth, insights = goal_paths(t, insights_task())
    assert (auth.mission_type, auth.position, auth.steps, auth.fewest_steps) == ("single", 1, 1, 1)
    assert auth.success and auth.optimal and auth.progress == 1.0 and auth.errors == []
    assert (insights.mission_type, insights.position, insights.steps, insights.fewest_steps) == ("parallel", 2, 1, 1)
    assert insights.matched == 3 and insights.progress == 1.0 and insights.valid_order
    assert insights.success and insights.optimal and insights.errors == []


def test_the_parallel_group_done_in_two_turns_succeeds_but_is_not_optimal():
    t = authenticated().agent(calls=[TRANSACTIONS, STATEMENTS]).agent(calls=[ACCOUNTS]).build()
    insights = goal_paths(t, insights_task())[1]
    # 2 turns against the 1 of the optimal path; every call on the path, so no error class
    assert (insights.steps, insights.fewest_steps, insights.success, insights.optimal) == (2, 1, True, False)
    assert insights.errors == []


def test_with_one_tool_per_turn_three_turns_are_optimal_in_either_order():
    for order in ([ACCOUNTS, TRANSACTIONS, STATEMENTS], [STATEMENTS, ACCOUNTS, TRANSACTIONS]):
        b = authenticated()
        for call in order:
            b.agent(calls=[call])
        t = b.build().model_copy(update={"one_tool_per_turn": True})
        insights = goal_paths(t, insights_task())[1]
        assert (insights.steps, insights.fewest_steps, insights.optimal) == (3, 3, True)


def serial_task(goal="payments", kind=None):
    sets = [gold("p.create", goal, ACCOUNTS), gold("p.pay", goal, TRANSACTIONS, ["p.create"])]
    t = task(goals=(goal,), actions=sets)
    return labelled(t, f"{goal}={kind}") if kind else t


def test_a_call_before_its_dependency_is_wrong_order_and_not_progress():
    t = Builder().user("pay", goal="payments").agent(calls=[TRANSACTIONS]).agent(calls=[ACCOUNTS]).build()
    path = goal_paths(t, serial_task())[0]
    # p.pay met before p.create: off the path (progress counts p.create only); explained, so not also missing
    assert path.mission_type == "serial" and path.errors == ["wrong_order"]
    assert (path.valid_order, path.completed, path.success, path.optimal) == (False, False, False, False)
    assert (path.matched, path.progress, path.steps, path.fewest_steps) == (1, 0.5, 2, 2)


def test_dependent_calls_in_the_same_turn_are_wrong_order():
    t = Builder().user("pay", goal="payments").agent(calls=[ACCOUNTS, TRANSACTIONS]).build()
    path = goal_paths(t, serial_task())[0]
    assert path.errors == ["wrong_order"] and path.progress == 0.5 and path.steps == 1


def test_a_dependency_on_another_goal_never_met_is_wrong_order():
    sets = [gold("auth.id", "authentication", PHONE), gold("acct", "account_info", ACCOUNTS, ["auth.id"])]
    t = (Builder().user("hi", goal="authentication").agent("Sure.")
         .user("balances?", goal="account_info", shift_from="authentication").agent(calls=[ACCOUNTS]).build())
    auth, info = goal_paths(t, task(goals=("authentication", "account_info"), actions=sets))
    assert auth.errors == ["missing_call"] and auth.progress == 0.0 and auth.steps == 0
    assert info.errors == ["wrong_order"] and info.progress == 0.0 and not info.valid_order


def test_missing_call_when_a_set_is_never_attempted():
    t = Builder().user("pay", goal="payments").agent(calls=[ACCOUNTS]).agent("Done!").build()
    path = goal_paths(t, serial_task())[0]
    assert path.errors == ["missing_call"] and path.progress == 0.5 and path.valid_order and not path.success


def lock_task():
    return task(goals=("cards",), actions=[gold("lock", "cards", ("lock_card", {"card_id": "k1"}))])


def test_another_tool_instead_of_the_gold_one_is_wrong_tool():
    t = Builder().user("lock it", goal="cards").agent(calls=[("unlock_card", {"card_id": "k1"})]).build()
    path = goal_paths(t, lock_task())[0]
    assert path.errors == ["wrong_tool"] and path.progress == 0.0 and not path.completed


def test_wrong_arguments_then_the_right_call_succeeds_without_an_optimal_path():
    t = (Builder().user("lock it", goal="cards").agent(calls=[("lock_card", {"card_id": "k2"})])
         .agent(calls=[("lock_card", {"card_id": "k1"})]).build())
    path = goal_paths(t, lock_task())[0]
    assert path.errors == ["wrong_arguments"] and path.success and not path.optimal
    assert (path.steps, path.fewest_steps, path.progress) == (2, 1, 1.0)


def test_a_call_refused_for_invalid_arguments_is_wrong_arguments_even_with_the_gold_values():
    b = Builder().user("lock it", goal="cards").agent(calls=[("lock_card", {"card_id": "k1", "note": "x"})], errors=[0])
    b.calls[-1].error_kind = "invalid_arguments"
    path = goal_paths(b.build(), lock_task())[0]
    assert path.errors == ["wrong_arguments"] and path.progress == 0.0


def test_repeats_and_calls_after_the_goal_is_met_are_extra_calls():
    t = (Builder().user("pay", goal="payments").agent(calls=[ACCOUNTS]).agent(calls=[ACCOUNTS])
         .agent(calls=[TRANSACTIONS]).agent(calls=[("get_customer_by_phone", {"phone_number": "555"})]).build())
    path = goal_paths(t, serial_task())[0]
    assert path.errors == ["extra_call"] and path.success and not path.optimal
    assert (path.steps, path.fewest_steps) == (4, 2)


def clarify_task():
    t = task(goals=("transactions",), actions=[gold("tx", "transactions", TRANSACTIONS)])
    return labelled(t, "transactions=clarify")


def test_a_gold_call_before_the_user_clarified_is_premature():
    t = Builder().user("my latest transactions", goal="transactions").agent(calls=[TRANSACTIONS]).build()
    path = goal_paths(t, clarify_task())[0]
    # the set is met (progress 1.0) but the goal fails: the agent never asked which account
    assert path.mission_type == "clarify" and path.errors == ["premature_call"]
    assert path.completed and path.progress == 1.0 and not path.success and not path.optimal


def test_asking_first_then_calling_is_an_optimal_clarification():
    t = (Builder().user("my latest transactions", goal="transactions").agent("Which account do you mean?")
         .user("Checking, a1.", goal="transactions").agent(calls=[TRANSACTIONS]).build())
    path = goal_paths(t, clarify_task())[0]
    assert path.errors == [] and path.success and path.optimal and (path.steps, path.fewest_steps) == (1, 1)


def test_a_reply_to_a_turn_that_asked_nothing_is_no_clarification():
    t = (Builder().user("my latest transactions", goal="transactions").agent("Let me first finish what we did.")
         .user("Fine.", goal="transactions").agent(calls=[TRANSACTIONS]).build())
    assert goal_paths(t, clarify_task())[0].errors == ["premature_call"]


def test_calling_at_once_is_not_premature_when_the_user_already_gave_the_detail():
    t = Builder().user("My latest transactions on account A1, please.", goal="transactions").agent(
        calls=[TRANSACTIONS]).build()
    path = goal_paths(t, clarify_task())[0]
    assert path.errors == [] and path.optimal


def test_another_tool_on_a_chat_goal_is_tool_for_chat():
    t = task(goals=("insights", "smalltalk"), actions=[gold("read", "insights", STATEMENTS)])
    t = labelled(t, "insights=chat")
    traj = (Builder().user("tips?", goal="insights").agent(calls=[STATEMENTS, ("make_payment", {"request_id": "r1"})])
            .user("nice weather", goal="smalltalk", shift_from="insights").agent(calls=[ACCOUNTS]).build())
    chat, smalltalk = goal_paths(traj, t)
    assert chat.mission_type == "chat" and chat.errors == ["tool_for_chat"] and chat.completed and not chat.success
    # a goal without action sets is a chat goal: no call is expected, so any call answers it with a tool
    assert (smalltalk.mission_type, smalltalk.action_sets, smalltalk.progress) == ("chat", 0, None)
    assert smalltalk.errors == ["tool_for_chat"] and not smalltalk.success


def test_a_set_met_before_the_goal_began_needs_no_step():
    sets = [gold("a.acc", "account_info", ACCOUNTS), gold("i.acc", "insights", ACCOUNTS),
            gold("i.st", "insights", STATEMENTS)]
    t = (Builder().user("balances", goal="account_info").agent(calls=[ACCOUNTS])
         .user("summary", goal="insights", shift_from="account_info").agent(calls=[STATEMENTS]).build())
    info = goal_paths(t, task(goals=("account_info", "insights"), actions=sets))[1]
    assert (info.done_before, info.matched, info.progress, info.steps, info.fewest_steps) == (1, 2, 1.0, 1, 1)
    assert info.optimal


def test_a_goal_the_conversation_never_reached_is_not_evaluated():
    t = Builder().user("hi", goal="authentication").agent(calls=[PHONE]).build()
    auth, insights = goal_paths(t, insights_task())
    assert auth.reached and auth.optimal
    assert not insights.reached and insights.mission_type == "parallel" and insights.errors == []


# -- reports ---------------------------------------------------------------------------------------


def test_run_aggregates_by_mission_type_position_and_transition():
    optimal = authenticated().agent(calls=[ACCOUNTS, TRANSACTIONS, STATEMENTS]).build(trial=0)
    partial = authenticated().agent(calls=[ACCOUNTS, TRANSACTIONS]).build(trial=1)
    cut_short = Builder().user("hi", goal="authentication").agent(calls=[PHONE]).build(trial=2)
    run, sims = compute_run_metrics([optimal, partial, cut_short], {"t1": insights_task()})
    p = run.goal_walks
    # reached goals: auth x3 (all optimal), insights x2 (one optimal, one missing i.st: progress 2/3)
    assert (p.goals, p.not_reached) == (5, 1)
    assert p.success == pytest.approx(4 / 5) and p.optimal == pytest.approx(4 / 5)
    assert p.progress == pytest.approx((1 + 1 + 1 + 1 + 2 / 3) / 5) and p.valid_order == 1.0
    assert p.errors == {"missing_call": 1}
    assert list(p.by_mission_type) == ["single", "parallel"]
    assert (p.by_mission_type["single"].goals, p.by_mission_type["single"].success) == (3, 1.0)
    parallel = p.by_mission_type["parallel"]
    assert (parallel.goals, parallel.success, parallel.optimal) == (2, 0.5, 0.5)
    assert parallel.progress == pytest.approx((1 + 2 / 3) / 2)
    assert {k: v.goals for k, v in p.by_position.items()} == {"1": 3, "2": 2}
    assert {t: {k: v.goals for k, v in cells.items()} for t, cells in p.by_type_and_position.items()} == {
        "single": {"1": 3}, "parallel": {"2": 2}}
    assert list(p.by_transition) == ["single->parallel"]
    assert (p.by_transition["single->parallel"].goals, p.by_transition["single->parallel"].success) == (2, 0.5)
    assert [len(s.goal_walks) for s in sims] == [2, 2, 2]


def test_a_simulations_calls_are_matched_and_its_goals_spanned_once_for_both_path_evaluations(monkeypatch):
    from shiftbox.metrics import _goal_paths
    from shiftbox.metrics._aggregate import simulation_metrics

    made: list[str] = []
    matched, spans = _goal_paths.MatchedCalls.of, _goal_paths.goal_spans
    monkeypatch.setattr(_goal_paths.MatchedCalls, "of", classmethod(
        lambda cls, *a: made.append("matched") or matched(*a)))
    monkeypatch.setattr(_goal_paths, "goal_spans", lambda *a, **kw: made.append("spans") or spans(*a, **kw))
    t = authenticated().agent(calls=[ACCOUNTS, TRANSACTIONS, STATEMENTS]).agent("Here it is.").build()
    sim = simulation_metrics(t, insights_task())
    assert sorted(made) == ["matched", "spans"]   # not twice each (goal walks, then MMTB's missions)
    assert [p.success for p in sim.goal_walks] == [True, True] and [p.reached for p in sim.paths] == [True, True]
