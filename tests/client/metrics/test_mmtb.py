"""Multi-Mission Tool Bench's path evaluation: one hand-built case per branch of its decision tree
(`bench_test/tool_call_graph.py`, `eval_by_tool_call_graph`) and of its argument rules (`bench_test/
analysis_result.py`, `check_arguments` / `check_single_arguments` / `check_every_function_arguments`), and its
reports (`main2`, `matrix_calculate_variance`, `matrix_calculate_triangle_data`). Every expected verdict is worked
out by hand from MMTB's rule, quoted in each test's comment."""

from __future__ import annotations

import pytest

from shiftbox.metrics import compute_run_metrics, simulation_metrics
from shiftbox.metrics._mmtb_aggregate import every_prefix
from shiftbox.metrics._mmtb_arguments import (
    arguments_pass,
    call_score,
    rouge_l,
    tokens,
    value_score,
)
from shiftbox.metrics._mmtb_walk import AgentStep, GoldCall, Mission, walk
from shiftbox.tasks import ActionSet, ToolCallSpec
from tests.client.metrics.build import Builder, task

S = {"type": "string"}


def gold(key, name, after=(), **args):
    return GoldCall(key, {name: [args]}, frozenset(after))


def calls(*names):
    return AgentStep(calls=tuple((n, {}) for n in names))


def say(text="ok"):
    return AgentStep(text=text)


A, B, C = gold("a", "get_a"), gold("b", "get_b"), gold("c", "get_c")
SERIAL = Mission((A, gold("b", "get_b", after=["a"])))  # a -> b -> answer
PARALLEL = Mission((A, B))  # {a, b} -> answer
BOTH = Mission((A, B, gold("c", "get_c", after=["a", "b"])))  # {a, b} -> c -> answer


# -- the decision tree: one case per branch ------------------------------------------------------------------------


def test_calls_matching_a_candidate_step_then_text_at_the_answer_step_is_correct():
    # tool step: sorted names == a candidate's -> advance; text where prepare_to_answer is the candidate -> correct.
    w = walk(SERIAL, [calls("get_a"), calls("get_b"), say()])
    assert (w.ending, w.steps, w.items) == ("answered", 3, 3)


def test_text_while_a_call_is_due_ends_the_mission():
    # text step whose candidates hold neither ask_user nor prepare_to_answer -> error (a confirmation question too).
    w = walk(SERIAL, [calls("get_a"), say("Shall I go on?"), calls("get_b"), say()])
    assert (w.ending, w.items) == ("text_instead_of_call", 1)


def test_answering_without_the_call_ends_the_mission():
    w = walk(Mission((A,)), [say("done")])
    assert (w.ending, w.items) == ("text_instead_of_call", 0)


def test_an_empty_reply_ends_the_mission():
    # no tool calls and no content -> error.
    assert walk(Mission((A,)), [AgentStep(text="")]).ending == "empty_reply"


def test_a_wrong_tool_ends_the_mission():
    w = walk(Mission((A,)), [calls("get_z"), calls("get_a"), say()])
    assert (w.ending, w.items) == ("unmatched_call", 0)


def test_a_repeated_call_ends_the_mission():
    # after a, the only candidate is prepare_to_answer: calling get_a again matches nothing.
    w = walk(Mission((A,)), [calls("get_a"), calls("get_a"), say()])
    assert (w.ending, w.items) == ("unmatched_call", 1)


def test_an_extra_call_in_the_same_step_ends_the_mission():
    # the step's names [get_a, get_z] equal no candidate's.
    assert walk(Mission((A,)), [calls("get_a", "get_z"), say()]).ending == "unmatched_call"


def test_a_call_before_its_dependency_ends_the_mission():
    # b is not a candidate while a is not done.
    assert walk(SERIAL, [calls("get_b"), calls("get_a"), say()]).ending == "unmatched_call"


def test_a_dependent_call_in_the_same_step_as_its_dependency_ends_the_mission():
    # {a, b} is no candidate step of the serial mission.
    assert walk(SERIAL, [calls("get_a", "get_b"), say()]).ending == "unmatched_call"


def test_steps_that_run_out_before_the_answer_leave_the_mission_unfinished():
    # live conversation only: the goal's span ended with no final answer.
    w = walk(SERIAL, [calls("get_a")])
    assert (w.ending, w.items) == ("unfinished", 1)


def test_steps_after_the_answer_are_not_looked_at():
    assert walk(Mission((A,)), [calls("get_a"), say(), calls("get_z")]).ending == "answered"


def test_parallel_calls_in_one_step_are_the_shortest_walk():
    w = walk(PARALLEL, [calls("get_b", "get_a"), say()])  # names compared sorted
    assert (w.ending, w.steps, PARALLEL.fewest_steps()) == ("answered", 2, 2)


def test_parallel_calls_one_per_step_are_valid_but_longer():
    w = walk(PARALLEL, [calls("get_b"), calls("get_a"), say()])
    assert (w.ending, w.steps, PARALLEL.fewest_steps()) == ("answered", 3, 2)


def test_serial_and_parallel_calls_take_three_steps_at_least():
    w = walk(BOTH, [calls("get_a", "get_b"), calls("get_c"), say()])
    assert (w.ending, w.steps, w.items, BOTH.fewest_steps(), BOTH.length) == ("answered", 3, 4, 3, 4)


def test_a_clarify_mission_asks_then_calls_then_answers():
    clarify = Mission((A,), clarify=True)
    w = walk(clarify, [say("Which account?"), calls("get_a"), say()])
    assert (w.ending, w.steps, w.items, clarify.length, clarify.fewest_steps()) == ("answered", 3, 3, 3, 3)


def test_a_call_before_asking_ends_a_clarify_mission():
    assert walk(Mission((A,), clarify=True), [calls("get_a"), say()]).ending == "unmatched_call"


def test_a_clarify_mission_that_asks_and_then_answers_without_the_call_fails():
    w = walk(Mission((A,), clarify=True), [say("Which?"), say("done")])
    assert (w.ending, w.items) == ("text_instead_of_call", 1)


def test_a_chat_mission_is_answered_with_text_and_fails_with_a_call():
    chat = Mission(())
    assert walk(chat, [say("Hello!")]).ending == "answered"
    assert walk(chat, [calls("get_a"), say()]).ending == "unmatched_call"


SAME = Mission((gold("x1", "get_x"), gold("x2", "get_x"), gold("y", "get_y")))


def test_neighbouring_calls_of_one_tool_go_all_in_one_step():
    w = walk(SAME, [calls("get_x", "get_x", "get_y"), say()])
    assert (w.ending, w.steps, SAME.fewest_steps()) == ("answered", 2, 2)


def test_neighbouring_calls_of_one_tool_may_go_one_per_step():
    # the first alone commits the walk to the rest of the run, one per step.
    assert walk(SAME, [calls("get_x"), calls("get_x"), calls("get_y"), say()]).ending == "answered"


def test_part_of_a_run_of_one_tool_with_another_call_matches_nothing():
    assert walk(SAME, [calls("get_x", "get_y"), calls("get_x"), say()]).ending == "unmatched_call"


def test_after_the_first_of_a_run_alone_the_next_step_holds_only_the_next_of_the_run():
    assert walk(SAME, [calls("get_x"), calls("get_x", "get_y"), say()]).ending == "unmatched_call"


def test_a_gold_call_allowing_two_tools_is_matched_by_either():
    either = Mission((GoldCall("a", {"get_a": [{}], "find_a": [{}]}), B))
    assert walk(either, [calls("find_a", "get_b"), say()]).ending == "answered"
    assert walk(either, [calls("get_a", "get_b"), say()]).ending == "answered"
    assert walk(either, [calls("get_a", "find_a"), say()]).ending == "unmatched_call"  # both on the one gold call


def test_many_parallel_calls_in_one_step_are_matched_without_trying_every_order():
    wide = Mission(tuple(gold(f"k{i}", f"tool_{i}") for i in range(12)))
    names = [f"tool_{i}" for i in reversed(range(12))]
    assert walk(wide, [calls(*names), say()]).ending == "answered"


def test_the_call_structure_is_mmtbs_layering_of_the_gold_calls():
    assert [m.structure() for m in (Mission((A,)), SERIAL, PARALLEL, BOTH)] == [
        None, "serial", "parallel", "serial+parallel"]


# -- argument rules --------------------------------------------------------------------------------------------------


def test_tokens_cut_as_jieba_cuts_text_without_chinese():
    assert tokens("New York, 3.5% off-peak") == ["New", " ", "York", ",", " ", "3.5%", " ", "off", "-", "peak"]


def test_rouge_l_is_the_lcs_f_measure():
    # "New York City" (5 tokens with the spaces) vs "New York" (3): LCS 3, P 3/3, R 3/5 -> F = 2*1*0.6/1.6 = 0.75.
    assert rouge_l("New York City", "New York") == pytest.approx(0.75)
    # "card lost" (3) vs "lost" (1): LCS 1, P 1, R 1/3 -> F = 0.5.
    assert rouge_l("card lost", "lost") == pytest.approx(0.5)


@pytest.mark.parametrize(("value", "gold_value", "schema", "expected"), [
    ("New  york", "new York", S, 1.0),  # case- and whitespace-insensitive equality
    ("New York City", "New York", S, 0.75),  # else ROUGE-L F
    # not both "d.d,d.d": ROUGE-L; [40.7 , - 74.0] vs [40.7 , 74.0]: LCS 3, P 3/3, R 3/4 -> F = 2*0.75/1.75 = 6/7
    ("40.7,-74.0", "40.7,74.0", S, 6 / 7),
    ("40.71,74.00", "40.70,74.01", S, 1.0),  # both coordinate pairs: 1
    (5, 5.0, {"type": "number"}, 1.0),  # integers read as floats
    ("5", 5, S, 0.0),  # type mismatch
    (True, 1, {"type": "boolean"}, 0.0),  # a bool is no number
    (6, 5, {"type": "integer"}, 0.0),  # unequal scalars
    (["b", "a"], ["a", "b"], {"type": "array", "items": S}, 1.0),  # arrays sorted, element-wise
    (["a"], ["a", "b"], {"type": "array", "items": S}, 0.0),  # lengths differ
    (["a", "x"], ["a", "b"], {"type": "array", "items": S}, 0.5),  # mean of the elements: (1 + 0) / 2
    ({"x": "A", "y": 1}, {"x": "a", "y": 2}, {"type": "object", "properties": {"x": S, "y": {"type": "integer"}}}, 0.5),
    ({"z": "a"}, {"z": "a", "x": "b"}, {"type": "object", "properties": {"x": S}}, 0.0),  # key not declared: 0
])
def test_argument_values_score_by_mmtbs_rules(value, gold_value, schema, expected):
    assert value_score(value, gold_value, schema) == pytest.approx(expected)


CARD = {"type": "object", "required": ["card_id"], "properties": {
    "card_id": {"type": "string"}, "reason": {"type": "string", "description": "why, e.g. 'lost' or 'stolen'"},
    "note": {"type": "string", "description": "free text"}}}


@pytest.mark.parametrize(("arguments", "gold_args", "expected"), [
    ({"card_id": "c1"}, {"card_id": "c1", "reason": "lost"}, 1.0),  # a gold parameter left out is not scored
    ({"card_id": "c1", "bogus": 1}, {"card_id": "c1"}, 0.5),  # a parameter the tool lacks scores 0: (1 + 0) / 2
    ({"card_id": "c1", "reason": "stolen"}, {"card_id": "c1"}, 1.0),  # not in gold, named in its description: 1
    ({"card_id": "c1", "note": "hurry"}, {"card_id": "c1"}, 0.5),  # not in gold, not described: 0
    ({"reason": "lost"}, {"card_id": "c1", "reason": "lost"}, 0.0),  # a required parameter missing: 0
    ({"card_id": "c1", "reason": "card lost"}, {"card_id": "c1", "reason": "lost"}, 0.75),  # (1 + 0.5) / 2
])
def test_a_call_scores_the_mean_of_its_arguments(arguments, gold_args, expected):
    assert call_score(arguments, gold_args, CARD) == pytest.approx(expected)


def test_no_arguments_score_1_against_no_gold_arguments_and_0_against_some():
    assert call_score({}, {}, {"properties": {}}) == 1.0
    assert call_score({}, {"q": "x"}, {"properties": {"q": S}}) == 0.0


def test_a_call_under_0_7_fails_the_mission_and_one_at_0_75_passes():
    schemas = {"lock_card": CARD}
    lock = [{"lock_card": [{"card_id": "c1", "reason": "lost"}]}]
    assert arguments_pass([("lock_card", {"card_id": "c1", "reason": "card lost"})], lock, schemas)  # 0.75
    assert not arguments_pass([("lock_card", {"card_id": "c1", "note": "hurry"})], lock, schemas)  # 0.5


def test_calls_of_one_tool_pair_with_the_gold_call_they_score_best_against():
    schemas = {"get": {"properties": {"id": S}}}
    two = [{"get": [{"id": "a1"}]}, {"get": [{"id": "b2"}]}]
    assert arguments_pass([("get", {"id": "b2"}), ("get", {"id": "a1"})], two, schemas)
    assert not arguments_pass([("get", {"id": "b2"}), ("get", {"id": "b2"})], two, schemas)  # 2nd pairs with a1: 0


# -- goals of a conversation -----------------------------------------------------------------------------------------

PHONE = ("get_customer_by_phone", {"phone_number": "555"})
ACCOUNTS = ("get_accounts", {"customer_id": "c1"})
TRANSACTIONS = ("get_transactions", {"account_id": "a1"})
STATEMENTS = ("get_statements", {"account_id": "a1"})


def act(action_id, goal, call, after=()):
    name, params = call
    return ActionSet(action_id=action_id, goal=goal, allowed_tools=[ToolCallSpec(function_name=name, params=params)],
                     depends_on=list(after))


def test_a_goal_is_walked_from_its_user_message_and_the_greeting_is_no_step():
    t = task(goals=("authentication", "accounts"),
             actions=[act("id", "authentication", PHONE),
                      act("acc", "accounts", ACCOUNTS, after=["id"]),
                      act("tx", "accounts", TRANSACTIONS, after=["acc"])])
    trajectory = (Builder().agent("Hi, how can I help?").user("hi", goal="authentication").agent(calls=[PHONE]).tool()
                  .agent("Found you.").user("accounts", goal="accounts", shift_from="authentication")
                  .agent(calls=[ACCOUNTS]).tool().agent(calls=[("get_transactions", {"account_id": "zz9"})]).tool()
                  .agent("Here.").build())
    first, second = simulation_metrics(trajectory, t).paths
    assert (first.ending, first.success, first.relation) == ("answered", True, "none")
    # second: serial acc -> tx; the walk reaches the answer (3 steps), but "zz9" vs "a1" scores 0 -> fails.
    assert (second.structure, second.relation, second.steps, second.matched, second.gold_steps) == (
        "serial", "previous", 3, 3, 3)
    assert (second.ending, second.arguments_pass, second.success, second.optimal) == ("answered", False, False, False)


def test_a_set_met_before_the_goal_began_is_no_gold_step_of_it():
    t = task(goals=("authentication", "accounts"),
             actions=[act("id", "authentication", PHONE), act("acc", "accounts", ACCOUNTS)])
    trajectory = (Builder().user("hi", goal="authentication").agent(calls=[PHONE, ACCOUNTS]).tool().tool()
                  .agent("Done.").user("accounts", goal="accounts", shift_from="authentication")
                  .agent("You have one account.").build())
    first, second = simulation_metrics(trajectory, t).paths
    assert first.ending == "unmatched_call"  # the extra get_accounts in goal 1's step
    assert (second.gold_steps, second.ending, second.success) == (1, "answered", True)


def test_relation_types_come_from_dependencies_on_earlier_goals():
    t = task(goals=("g1", "g2", "g3"),
             actions=[act("a", "g1", PHONE), act("b", "g2", ACCOUNTS, after=["a"]), act("c", "g3", STATEMENTS,
                                                                                          after=["a"])])
    trajectory = Builder().user("x", goal="g1").build()
    assert [v.relation for v in simulation_metrics(trajectory, t).paths] == ["none", "previous", "long_term"]


# -- reports ---------------------------------------------------------------------------------------------------------


def _run(*trajectories_and_tasks):
    trajectories, tasks = [], {}
    for i, (build, t) in enumerate(trajectories_and_tasks):
        tid = f"t{i}"
        trajectories.append(build.build(task_id=tid))
        tasks[tid] = t.model_copy(update={"id": tid})
    return compute_run_metrics(trajectories, tasks)[0].paths


def test_optimal_rate_is_over_parallel_goals_and_progress_pooled_over_serial_ones():
    parallel = task(goals=("p",), actions=[act("s", "p", STATEMENTS), act("t", "p", TRANSACTIONS)])
    serial = task(goals=("s",), actions=[act("a", "s", PHONE), act("b", "s", ACCOUNTS, after=["a"])])
    single = task(goals=("one",), actions=[act("a", "one", PHONE)])
    p = _run(
        # parallel, in one step: correct and optimal
        (Builder().user("x", goal="p").agent(calls=[STATEMENTS, TRANSACTIONS]).tool().tool().agent("ok"), parallel),
        # parallel, one per step: correct, not optimal
        (Builder().user("x", goal="p").agent(calls=[STATEMENTS]).tool().agent(calls=[TRANSACTIONS]).tool()
         .agent("ok"), parallel),
        # serial, fails at its 2nd step (a text): matched 1 of 3 gold steps (a, b, answer)
        (Builder().user("x", goal="s").agent(calls=[PHONE]).tool().agent("Proceed?"), serial),
        # serial, correct: 3 of 3
        (Builder().user("x", goal="s").agent(calls=[PHONE]).tool().agent(calls=[ACCOUNTS]).tool().agent("ok"), serial),
        # single, wrong: counts for accuracy only
        (Builder().user("x", goal="one").agent("no"), single),
    )
    assert (p.goals, p.accuracy) == (5, 3 / 5)
    assert (p.optimal_goals, p.optimal) == (2, 1 / 2)
    assert (p.progress_goals, p.progress) == (2, (1 + 3) / (3 + 3))
    assert p.by_structure["parallel"].accuracy == 1.0 and p.by_structure["serial"].accuracy == 1 / 2
    assert p.endings == {"answered": 3, "text_instead_of_call": 2}


def test_the_prefix_table_has_every_full_prefix_and_the_layer_variance_is_mmtbs():
    assert len(every_prefix()) == 4 + 16 + 64 + 256
    assert every_prefix()[:5] == ["single", "multiple", "clarify", "chat", "single->single"]
    two = task(goals=("a", "b"), actions=[act("x", "a", PHONE), act("y", "b", ACCOUNTS)])
    chat_first = task(goals=("c", "b"), actions=[act("y", "b", ACCOUNTS)])
    chat_first.user_scenario.goal_shifts.action_types = {"c": "chat"}
    ok = (Builder().user("x", goal="a").agent(calls=[PHONE]).tool().agent("ok")
          .user("y", goal="b", shift_from="a").agent(calls=[ACCOUNTS]).tool().agent("ok"))
    bad_second = (Builder().user("x", goal="a").agent(calls=[PHONE]).tool().agent("ok")
                  .user("y", goal="b", shift_from="a").agent("no"))
    chat_then_ok = (Builder().user("x", goal="c").agent("hello").user("y", goal="b", shift_from="c")
                    .agent(calls=[ACCOUNTS]).tool().agent("ok"))
    p = _run((ok, two), (bad_second, two), (chat_then_ok, chat_first))
    cells = {k: (v.goals, v.accuracy) for k, v in p.prefixes.items() if v.goals}
    assert cells == {"single": (2, 1.0), "chat": (1, 1.0), "single->single": (2, 0.5), "chat->single": (1, 1.0)}
    assert p.prefixes["clarify->chat"].accuracy is None
    # after "single": 1 of 2 correct (0.5); after "chat": 1 of 1 (1.0); mean 0.75 -> (0.25^2 + 0.25^2) / (2 - 1)
    assert p.layer_variance == {"1": pytest.approx(0.125), "2": None, "3": None}
    # single goals: the two first goals (both right) and the three second goals (two right) -> 4 / 5
    assert {k: v.accuracy for k, v in p.by_type.items()} == {"single": 4 / 5, "chat": 1.0}


def test_the_metrics_name_a_goals_mmtb_type_as_the_task_does():
    # one mapping: the task's MMTB types (what --cover types plans and type_sequence_coverage counts) are the names
    # the verdicts and the prefix table use, in MMTB's order single, multiple, clarify, chat.
    from shiftbox.tasks import MMTB_TYPES

    t = task(goals=("s", "c"), actions=[act("a", "s", PHONE), act("b", "s", ACCOUNTS, after=["a"])])
    t.user_scenario.goal_shifts.action_types = {"s": "serial", "c": "chat"}
    trajectory = Builder().user("x", goal="s").build()
    assert tuple(v.mission_type for v in simulation_metrics(trajectory, t).paths) == t.mmtb_types() == (
        "multiple", "chat")
    assert every_prefix(1) == list(MMTB_TYPES) == ["single", "multiple", "clarify", "chat"]


def test_a_mission_type_the_task_states_is_used_before_the_derived_one():
    # the graph a -> b is serial; the task says serial+parallel (as an MMTB import may): its structure is that one,
    # so the goal counts for the optimal path rate (over parallel and serial+parallel goals only).
    t = task(goals=("g",), actions=[act("a", "g", PHONE), act("b", "g", ACCOUNTS, after=["a"])])
    trajectory = Builder().user("x", goal="g").agent(calls=[PHONE]).tool().agent(calls=[ACCOUNTS]).tool().agent("ok")
    derived = simulation_metrics(trajectory.build(), t).paths[0]
    t.user_scenario.goal_shifts.mission_types = {"g": "serial+parallel"}
    stated = simulation_metrics(trajectory.build(), t).paths[0]
    assert (derived.structure, stated.structure, stated.mission_type) == ("serial", "serial+parallel", "multiple")
