"""Each metric on hand-built trajectories; every expected value is worked out by hand here."""

from __future__ import annotations

import pytest

from shiftbox.llm import Usage
from shiftbox.metrics import (
    Judge,
    NLVerdicts,
    aggregate,
    compute_run_metrics,
    simulation_metrics,
)
from shiftbox.metrics._passk import pass_family
from shiftbox.metrics._tcrr import tcrr_score
from shiftbox.metrics._tsr import tsr_score
from tests.client.metrics.build import Builder, action, task


class FixedJudge(Judge):
    name = "fixed"

    def __init__(self, met=None, ack=None):
        self.met, self.ack = met, ack

    def nl_assertions(self, trajectory, assertions):
        return None if self.met is None else NLVerdicts(met=self.met, judge="fixed")

    def acknowledges(self, trajectory, message, goal):
        return self.ack


# -- TSR ----------------------------------------------------------------------------------------


def test_communicate_info_ignores_case_currency_and_thousands_separators():
    t = Builder().user().agent("The charge of 1234.50 was by ACME Corp.").build()
    score = tsr_score(t, task(info=["$1,234.50", "acme corp", "tx_999"])).communicate_info
    assert score == pytest.approx(2 / 3)


def test_action_channel_partial_credit_and_errored_calls_score_zero():
    sets = [
        action("a", "dispute", "file_dispute", {"account_id": "acc_1", "tx_id": "tx_1", "reason_code": "fraudulent"}),
        action("b", "dispute", "get_transactions", {"account_id": "acc_1"}),
        action("c", "dispute", "lock_card", {"card_id": "card_1"}),
    ]
    t = (Builder().user()
         .agent(calls=[("file_dispute", {"account_id": "acc_1", "tx_id": "tx_1", "reason_code": "other"})])  # 0.5
         .agent(calls=[("get_transactions", {"account_id": "acc_1"})])                                        # 1.0
         .agent(calls=[("lock_card", {"card_id": "card_1"})], errors=[0])                                     # 0.0
         .build())
    assert tsr_score(t, task(actions=sets)).action == pytest.approx((0.5 + 1.0 + 0.0) / 3)


def test_action_params_compare_canonically():
    sets = [action("a", "x", "get_transactions", {"account_id": "acc_1", "limit": 5, "start_time": "2025-06-01"})]
    t = Builder().user().agent(calls=[("get_transactions", {"limit": 5.0, "account_id": " acc_1",
                                                            "start_time": "2025-06-01"})]).build()
    assert tsr_score(t, task(actions=sets)).action == 1.0


def test_required_parameters_limit_what_must_match():
    sets = [action("a", "x", "get_customer_by_phone", {"phone_number": "+1555", "note": "x"},
                   required=["phone_number"])]
    t = Builder().user().agent(calls=[("get_customer_by_phone", {"phone_number": "+1555"})]).build()
    assert tsr_score(t, task(actions=sets)).action == 1.0


def test_tsr_weights_renormalize_over_present_channels():
    sets = [action("a", "x", "get_account", {"account_id": "acc_1"})]
    t = Builder().user().agent("balance is 10", calls=[("get_account", {"account_id": "acc_9"})]).build()
    tk = task(actions=sets, info=["10", "20"], nl=["polite", "verified", "brief", "clear"])
    no_judge = tsr_score(t, tk)
    assert (no_judge.communicate_info, no_judge.action, no_judge.nl_status) == (0.5, 0.5, "not_judged")
    assert no_judge.score == pytest.approx((0.25 * 0.5 + 0.45 * 0.5) / (0.25 + 0.45))
    judged = tsr_score(t, tk, FixedJudge(met=[True, True, True, False]))
    assert judged.nl_assertion == 0.75
    assert judged.score == pytest.approx(0.25 * 0.5 + 0.45 * 0.5 + 0.30 * 0.75)


def test_state_match_compares_final_digest_with_expected():
    t = Builder().user().agent("ok").build(final="abc")
    assert tsr_score(t, task(expected="abc")).state_match is True
    assert tsr_score(t, task(expected="xyz")).state_match is False
    assert tsr_score(t, task()).state_match is None


# -- TUE ----------------------------------------------------------------------------------------


def test_tue_t_and_p_from_errors_and_schema():
    t = (Builder().user()
         .agent(calls=[("get_account", {"account_id": "acc_1"}),               # ok, valid
                       ("get_account", {"account_id": "acc_1", "x": 1}),       # ok?, invalid schema (extra key)
                       ("get_statements", {"account_id": "acc_1", "limit": "3"}),  # invalid type
                       ("no_such_tool", {})], errors=[1, 2, 3])
         .build())
    s = simulation_metrics(t, task())
    assert (s.tue.calls, s.tue.executed, s.tue.schema_valid) == (4, 1, 1)
    assert s.tue.tue == pytest.approx(0.6 * 1 / 4 + 0.4 * 1 / 4)


# -- TCRR ---------------------------------------------------------------------------------------


def acc(n="acc_1"):
    return ("get_account", {"account_id": n})


def test_tcrr_same_turn_duplicate_is_redundant():
    s = tcrr_score(Builder().user().agent(calls=[acc(), acc()]).build())
    assert (s.calls, s.redundant, s.window, s.batch) == (2, 1, 1, 0)


def test_tcrr_window_edge_three_turns_back_counts_four_does_not():
    b = Builder().user().agent(calls=[acc()])
    for _ in range(2):
        b.agent("...")
    b.agent(calls=[acc()])            # turn 3: within the window of turn 0
    assert tcrr_score(b.build()).redundant == 1
    b = Builder().user().agent(calls=[acc()])
    for _ in range(3):
        b.agent("...")
    b.agent(calls=[acc()])            # turn 4: outside
    assert tcrr_score(b.build()).redundant == 0


def test_tcrr_batch_beyond_two_same_tool_calls_in_a_turn():
    s = tcrr_score(Builder().user().agent(calls=[acc("a"), acc("b"), acc("c"), acc("d")]).build())
    assert (s.redundant, s.window, s.batch) == (2, 0, 2)


def test_tcrr_counts_a_call_once_so_ratio_never_exceeds_one():
    s = tcrr_score(Builder().user().agent(calls=[acc(), acc(), acc(), acc()]).build())
    # call 2-4 are window duplicates; they are also past the batch threshold, but count once
    assert (s.calls, s.redundant, s.window, s.batch, s.ratio) == (4, 3, 3, 0, 0.75)


def test_tcrr_identity_uses_canonical_arguments():
    b = Builder().user().agent(calls=[("get_statements", {"account_id": "a", "limit": 3})])
    b.agent(calls=[("get_statements", {"limit": 3.0, "account_id": "a"})])
    assert tcrr_score(b.build()).redundant == 1


def test_state_aware_tcrr_forgives_a_reread_after_a_write():
    b = Builder().user().agent(calls=[acc()]).agent(calls=[("make_payment", {"request_id": "r"})]).agent(calls=[acc()])
    s = tcrr_score(b.build(), read_only={"get_account"})
    assert (s.redundant, s.state_aware_redundant) == (1, 0)


# -- GSRT ---------------------------------------------------------------------------------------


def test_gsrt_never_reached_stages_and_transfer_means_not_recovered():
    tk = task(goals=("authentication", "dispute"), actions=[action("f", "dispute", "file_dispute", {"tx_id": "t"})])
    b = (Builder().user("hi", goal="authentication").agent("Hello.")
         .user("I want to contest a charge", goal="dispute", shift_from="authentication")
         .agent("Let me transfer you.", calls=[("transfer_to_human_agents", {"summary": "x"})]))
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert (r.ack, r.tool, r.outcome, r.transferred, r.recovered) == (None, None, None, True, False)


def test_gsrt_search_stops_at_the_next_shift():
    tk = task(goals=("authentication", "cards", "dispute"))
    b = (Builder().user("hi", goal="authentication").agent("Hello.")
         .user("my card", goal="cards", shift_from="authentication").agent("Sure.")
         .user("a charge", goal="dispute", shift_from="cards").agent("Your card is locked now."))
    first, second = simulation_metrics(b.build(), tk).gsrt
    assert first.ack is None                 # the mention of 'card' came after the next shift
    assert second.ack is None and second.outcome_measured is False


def test_an_echo_of_the_customer_is_not_an_acknowledgment():
    # An agent that quotes the customer back (a2a-samples' helloworld) repeats the goal's words without
    # acknowledging anything: the detector looks for them only outside whole user messages quoted verbatim.
    tk = task(goals=("authentication", "dispute"))
    request = "I want to dispute   a charge on my card"
    b = (Builder().user("hi there, it's me", goal="authentication").agent("Hello.")
         .user(request, goal="dispute", shift_from="authentication")
         .agent("I have received your request (Customer: I want to dispute a charge on my card)."))
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert (r.ack, r.recovered) == (None, False)
    # The same echo with the agent's own words about the goal is an acknowledgment at that turn.
    b.agent("You said: I want to dispute a charge on my card. I'll open a dispute for it.")
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert (r.ack, r.recovered) == (2, True)


def test_a_short_reply_is_not_taken_for_an_echo():
    # A one- or two-word customer message is not an echo to strip: "Dispute." from the agent is its own word.
    tk = task(goals=("authentication", "dispute"))
    b = (Builder().user("hi", goal="authentication").agent("Hello.")
         .user("dispute", goal="dispute", shift_from="authentication").agent("Dispute: which charge?"))
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert r.ack == 1


def test_a_judge_overrides_the_detector_for_acknowledgment():
    tk = task(goals=("authentication", "dispute"))
    b = (Builder().user("hi", goal="authentication").agent("Hello.")
         .user("a charge", goal="dispute", shift_from="authentication").agent("Mm.").agent("Right."))
    (r,) = simulation_metrics(b.build(), tk, judge=FixedJudge(ack=True)).gsrt
    assert r.ack == 1
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert r.ack is None


def test_gsrt_aggregate_medians_and_never_share():
    tk = task(goals=("authentication", "dispute"))

    def sim(ack_turn: int | None, i: int):
        b = Builder().user("hi", goal="authentication").agent("Hello.").user("charge", goal="dispute",
                                                                              shift_from="authentication")
        for k in range(1, 5):
            b.agent("About your dispute." if k == ack_turn else "Hmm.")
        return simulation_metrics(b.build(task_id="t1", trial=i), tk)

    run = aggregate([sim(1, 0), sim(3, 1), sim(4, 2), sim(None, 3)])
    assert run.gsrt.shifts == 4
    assert run.gsrt.median_ack == 3.5         # median of 1, 3, 4, never (infinitely late): (3 + 4) / 2
    assert run.gsrt.never_ack == 0.25 and run.gsrt.recovery_rate == 0.75


# -- pass^k and aggregation ----------------------------------------------------------------------


def test_pass_family_by_hand():
    hat, at, avg = pass_family({"a": [True, True, False], "b": [True, True, True]})
    # task a: n=3, c=2 -> pass^1 2/3, pass^2 C(2,2)/C(3,2)=1/3, pass^3 0; pass@2 = 1 - C(1,2)/C(3,2) = 1
    assert hat == pytest.approx({1: (2 / 3 + 1) / 2, 2: (1 / 3 + 1) / 2, 3: (0 + 1) / 2})
    assert at[1] == pytest.approx((2 / 3 + 1) / 2) and at[2] == pytest.approx(1.0)
    assert avg[3] == pytest.approx((2 / 3 + 1) / 2)


def test_failures_not_the_agents_are_excluded_and_counted():
    tk = task(actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
    good = Builder().user().agent(calls=[acc()]).build(trial=0)
    broken = Builder().user().build(trial=1, reason="user_error", blame="user")
    run, sims = compute_run_metrics([good, broken], {"t1": tk})
    assert (run.simulations, run.scored_simulations, run.excluded) == (2, 1, {"user_error": 1})
    assert run.tsr.mean == 1.0 and run.pass_hat_k == {1: 1.0}


def test_tcrr_pooled_and_mean_differ_as_defined():
    tk = task()
    a = Builder().user().agent(calls=[acc(), acc()]).build(trial=0)                   # 1/2
    b = Builder().user().agent(calls=[acc("1"), acc("2"), acc("3"), acc("4")]).build(trial=1)  # 2/4 by batch
    c = Builder().user().agent(calls=[acc("x")] ).build(trial=2)                       # 0/1
    run, _ = compute_run_metrics([a, b, c], {"t1": tk})
    assert run.tcrr.pooled == pytest.approx(3 / 7) and run.tcrr.mean == pytest.approx((0.5 + 0.5 + 0) / 3)


def test_pass_hat_k_never_pools_trials_of_different_agents():
    """Regression: two agents' trials of one task were pooled, so k ran up to their sum."""
    from shiftbox.metrics import score_by_agent

    tk = task(actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
    trajectories = []
    for agent, ok_call in (("good", True), ("bad", False)):
        for trial in range(2):
            t = Builder().user().agent(calls=[acc() if ok_call else acc("nope")]).build(trial=trial)
            trajectories.append(t.model_copy(update={"agent": agent}))
    scored = score_by_agent(trajectories, {"t1": tk})
    assert scored["good"].metrics.pass_hat_k == {1: 1.0, 2: 1.0}
    assert scored["bad"].metrics.pass_hat_k == {1: 0.0, 2: 0.0}    # action 0.5 < threshold


def test_retention_and_drop_by_hand():
    from shiftbox.metrics import retention

    tk = task(actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"}),
                       action("b", "authentication", "get_statements", {"account_id": "acc_1"})])
    shifted_t = Builder().user().agent(calls=[acc()]).build()                       # action 0.5 -> TSR 0.5
    clean_t = (Builder().user().agent(calls=[acc(), ("get_statements", {"account_id": "acc_1"})]).build())
    shifted, _ = compute_run_metrics([shifted_t], {"t1": tk})
    clean, _ = compute_run_metrics([clean_t], {"t1": tk})
    rows = {(r.metric, r.slice): r for r in retention(shifted, clean)}
    assert (rows[("tsr", "all")].retention, rows[("tsr", "all")].drop) == (0.5, 0.5)
    assert rows[("tsr", "persona=EASY_1")].retention == 0.5 and rows[("tue", "all")].retention == 1.0


def test_judge_usage_is_reported_apart():
    class CountingJudge(FixedJudge):
        usage = Usage(calls=2, prompt_tokens=100, completion_tokens=10, cost_usd=0.001)

    tk = task(nl=["polite"])
    run, _ = compute_run_metrics([Builder().user().agent("hi").build()], {"t1": tk},
                                 judge=CountingJudge(met=[True]))
    assert run.judge == {"name": "fixed", "usage": CountingJudge.usage.model_dump()}
    assert run.tsr.nl_assertion == 1.0 and run.tsr.nl_judged == 1
