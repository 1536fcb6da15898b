"""Issue 14's defects: scores that moved for reasons not the agent's, or hid a skipped goal.

One regression test per defect; every expected value is worked out by hand here.
"""

from __future__ import annotations

import pytest

from shiftbox.metrics import aggregate, compute_run_metrics, simulation_metrics
from tests.client.metrics.build import Builder, action, task


def acc(account="acc_1"):
    return ("get_account", {"account_id": account})


# -- 2. a skipped goal never passes ---------------------------------------------------------------


def test_a_goal_nothing_measured_is_unscored_and_never_a_success():
    """authentication has an action set; dispute only an NL assertion and no judge: dispute is unscored."""
    tk = task(goals=("authentication", "dispute"), nl=["the agent filed the dispute"],
              actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
    b = (Builder().user("hi", goal="authentication").agent(calls=[acc()])
         .user("a charge", goal="dispute", shift_from="authentication").agent("Goodbye."))
    s = simulation_metrics(b.build(), tk)
    assert s.tsr.unscored_goals == ["dispute"]
    assert s.tsr.score is None                    # never reported as 1.0
    assert s.success is False
    run = aggregate([s])
    assert run.tsr.unscored == 1 and run.tsr.mean is None
    assert run.pass_hat_k == {1: 0.0}             # counted, as not passed


def test_communicate_info_tagged_with_a_goal_measures_it():
    tk = task(goals=("authentication", "dispute"),
              actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
    tk.evaluation_criteria.communicate_info = ["DSP-1"]
    tk.evaluation_criteria.communicate_info_by_goal = {"dispute": ["DSP-1"]}
    b = (Builder().user("hi", goal="authentication").agent(calls=[acc()])
         .user("a charge", goal="dispute", shift_from="authentication").agent("Your dispute is DSP-1."))
    s = simulation_metrics(b.build(), tk)
    assert s.tsr.unscored_goals == [] and s.tsr.score == 1.0 and s.success is True


# -- 3. GSRT outcome counts only what happened after the shift ---------------------------------------


def test_outcome_needs_calls_after_the_shift():
    """The new goal's only action set was met before the shift: no stage is reached by doing nothing."""
    tk = task(goals=("authentication", "account_info"),
              actions=[action("a", "authentication", "get_customer_by_id", {"customer_id": "c1"}),
                       action("b", "account_info", "get_account", {"account_id": "acc_1"})])
    b = (Builder().user("hi", goal="authentication")
         .agent(calls=[("get_customer_by_id", {"customer_id": "c1"}), acc()])
         .user("what is my balance?", goal="account_info", shift_from="authentication")
         .agent("Hmm."))
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert (r.ack, r.tool, r.outcome) == (None, None, None)
    assert r.outcome_measured is False and r.outcome_before_shift is True
    assert r.recovered is False


def test_outcome_counts_the_remaining_sets_from_the_shift_on():
    """A read met before the shift still counts as done; the outcome is the turn the write lands."""
    tk = task(goals=("authentication", "dispute"), actions=[
        action("txs", "dispute", "get_transactions", {"account_id": "acc_1"}),
        action("file", "dispute", "file_dispute", {"account_id": "acc_1", "tx_id": "tx_1"})])
    b = (Builder().user("hi", goal="authentication").agent(calls=[("get_transactions", {"account_id": "acc_1"})])
         .user("contest a charge", goal="dispute", shift_from="authentication")
         .agent("I will open a dispute.")                                                      # turn 1
         .agent(calls=[("file_dispute", {"account_id": "acc_1", "tx_id": "tx_1"})]))           # turn 2
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert (r.ack, r.tool, r.outcome, r.outcome_measured) == (1, 2, 2, True)


def test_worked_example_in_a_real_conversation_counts_agent_turns_not_messages():
    """The paper's example as real runs have it: user replies and tool results between assistant turns.

    Shift at message 10; assistant messages at 11, 13, 15, 17, 19 are agent turns 1-5; ack at 13
    (turn 2), first relevant tool at 15 (turn 3), outcome at 19 (turn 5). The paper's turn-index
    differences would be 13-10=3, 15-10=5 and 19-10=9 messages."""
    tk = task(goals=("authentication", "dispute"), actions=[
        action("txs", "dispute", "get_transactions", {"account_id": "acc_1"}),
        action("file", "dispute", "file_dispute", {"account_id": "acc_1", "tx_id": "tx_1"})])
    b = Builder().user("hello", goal="authentication")
    while len(b.messages) < 10:
        b.agent("Let me look at that.") if len(b.messages) % 2 else b.user("ok", goal="authentication")
    b.user("Actually, I need to contest a charge.", goal="dispute", shift_from="authentication")    # 10
    b.agent("One moment please.").user("sure", goal="dispute")                                       # 11, 12
    b.agent("I can help you file a dispute.").user("thanks", goal="dispute")                         # 13: ack
    b.agent(calls=[("get_transactions", {"account_id": "acc_1"})]).tool('[{"tx_id": "tx_1"}]')       # 15: tool, 16
    b.agent("Which one?").user("tx_1", goal="dispute")                                               # 17, 18
    b.agent(calls=[("file_dispute", {"account_id": "acc_1", "tx_id": "tx_1"})]).tool("{}")           # 19: outcome
    trajectory = b.build()
    assert [m.role for m in trajectory.messages[10:]] == ["user", "assistant", "user", "assistant", "user",
                                                          "assistant", "tool", "assistant", "user", "assistant",
                                                          "tool"]
    (r,) = simulation_metrics(trajectory, tk).gsrt
    assert (r.ack, r.tool, r.outcome, r.recovered) == (2, 3, 5, True)


# -- 4. acknowledgment needs evidence tied to the new goal -------------------------------------------


@pytest.mark.parametrize(("text", "calls", "acked"), [
    ("Let me first make sure everything on your account from before is complete.", (), False),   # stalling
    ("Before that, one more thing about your account.", (), False),                               # stalling
    ("The weather is lovely today.", (), False),                                                  # off-topic
    ("I have locked your card as requested.", (), False),                                         # another goal
    ("Your balance is 1,234.50.", (), True),                                                      # genuine
    ("Here are your account details.", (), True),                                                 # genuine
    (None, (("get_account", {"account_id": "acc_1"}),), True),                                    # relevant tool
])
def test_acknowledgment_detector(text, calls, acked):
    tk = task(goals=("cards", "account_info"))
    b = (Builder().user("lock my card", goal="cards").agent("Done.")
         .user("and my account balance?", goal="account_info", shift_from="cards").agent(text, calls=calls))
    (r,) = simulation_metrics(b.build(), tk).gsrt
    assert (r.ack == 1) is acked


def test_goal_lexicons_hold_no_generic_or_shared_terms():
    """A term that names several goals, or the domain's everyday nouns, is no evidence for one goal."""
    from shiftbox_servers.kit import get_domain, task_domains

    for name in task_domains():
        domain = get_domain(name)
        generic = {w.lower() for w in domain.generic_terms}
        assert generic, f"{name} names no generic terms"
        for goal, words in domain.goal_lexicon.items():
            for word in words:
                assert word.lower().strip() not in generic, (name, goal, word)
                others = [g for g, ws in domain.goal_lexicon.items() if g != goal and word.lower() in
                          {w.lower() for w in ws}]
                assert not others, (name, goal, word, others)


# -- 5. medians count never-reached stages ---------------------------------------------------------


def _acked_at(ack_turn, trial):
    tk = task(goals=("authentication", "dispute"))
    b = Builder().user("hi", goal="authentication").agent("Hello.").user("charge", goal="dispute",
                                                                          shift_from="authentication")
    for k in range(1, 5):
        b.agent("About your dispute." if k == ack_turn else "Hmm.")
    return simulation_metrics(b.build(task_id="t1", trial=trial), tk)


def test_median_lands_on_never_when_most_shifts_are_never_acknowledged():
    sims = [_acked_at(1, 0), _acked_at(1, 1)] + [_acked_at(None, i) for i in range(2, 10)]
    g = aggregate(sims).gsrt
    assert g.median_ack == "never" and g.p90_ack == "never" and g.never_ack == pytest.approx(0.8)


def test_median_includes_never_as_infinite():
    g = aggregate([_acked_at(1, 0), _acked_at(3, 1), _acked_at(4, 2), _acked_at(None, 3)]).gsrt
    # sorted: 1, 3, 4, inf -> median (3 + 4) / 2; p90 at rank 0.9 * 3 = 2.7 lies between 4 and inf
    assert g.median_ack == 3.5 and g.p90_ack == "never"
    g = aggregate([_acked_at(1, 0), _acked_at(2, 1), _acked_at(4, 2), _acked_at(4, 3), _acked_at(None, 4)]).gsrt
    # sorted: 1, 2, 4, 4, inf -> median 4; p90 at rank 3.6 between 4 and inf -> never
    assert g.median_ack == 4 and g.p90_ack == "never"


def test_never_share_stands_beside_every_median_in_the_terminal():
    from rich.console import Console

    from shiftbox.report import summary

    run = aggregate([_acked_at(1, 0), _acked_at(None, 1)])
    console = Console(width=250, record=True)
    console.print(summary(run))
    text = console.export_text()
    by_domain = text[text.index("by domain"):]
    assert "50% never" in by_domain.split("by persona")[0]
    assert "50% never" in text[text.index("by persona"):]


# -- 6. one definition per name ---------------------------------------------------------------------


def test_breakdown_tue_is_the_pooled_tue_of_the_headline():
    tk = task()
    a = Builder().user().agent(calls=[acc()], errors=[0]).build(trial=0)           # T 0/1, P 1/1 -> 0.4
    b = Builder().user().agent(calls=[acc("2"), acc("3"), acc("4")]).build(trial=1)  # T 3/3, P 3/3 -> 1.0
    run, _ = compute_run_metrics([a, b], {"t1": tk})
    pooled = 0.6 * 3 / 4 + 0.4 * 4 / 4                                               # 0.85
    assert run.tue.tue == pytest.approx(pooled)
    assert run.tue.mean_per_simulation == pytest.approx((0.4 + 1.0) / 2)
    assert run.by_domain["banking"].tue == pytest.approx(pooled)
    assert run.by_persona["EASY_1"].tue == pytest.approx(pooled)


# -- 7. headlines are per agent ---------------------------------------------------------------------


def _two_agents():
    tk = task(goals=("authentication",), actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
    trajectories = []
    for agent, account in (("good", "acc_1"), ("bad", "nope")):
        for trial in range(2):
            t = Builder().user().agent(calls=[acc(account)]).build(trial=trial)
            trajectories.append(t.model_copy(update={"agent": agent}))
    return trajectories, {"t1": tk}


def test_scores_are_keyed_by_agent_and_never_pooled():
    from shiftbox.metrics import score_by_agent

    trajectories, tasks = _two_agents()
    scored = score_by_agent(trajectories, tasks)
    assert sorted(scored) == ["bad", "good"]
    good, bad = scored["good"], scored["bad"]
    assert good.metrics.pass_hat_k == {1: 1.0, 2: 1.0} and bad.metrics.pass_hat_k == {1: 0.0, 2: 0.0}
    assert bad.metrics.tsr.mean == 0.5 and {s.agent for s in bad.simulations} == {"bad"}
    with pytest.raises(ValueError, match="bad, good"):
        compute_run_metrics(trajectories, tasks)


def test_html_report_rows_carry_each_agents_own_scores():
    import re

    from shiftbox.metrics import score_by_agent
    from shiftbox.report import render_html

    trajectories, tasks = _two_agents()
    html = render_html(score_by_agent(trajectories, tasks), trajectories, None)
    rows = re.findall(r'<details class="sim"[^>]*data-agent="([^"]+)"[^>]*data-status="(\w+)"', html)
    assert sorted(rows) == [("bad", "fail"), ("bad", "fail"), ("good", "pass"), ("good", "pass")]


# -- 8. uncertainty -------------------------------------------------------------------------------------


def _tsr_run(values_by_task: dict[str, list[float]]):
    """Simulations whose TSR is 1.0 (get_account right) or 0.5 (wrong account), per task and trial."""
    tasks, trajectories = {}, []
    for task_id, values in values_by_task.items():
        tasks[task_id] = task(task_id=task_id, goals=("authentication",),
                              actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
        for trial, v in enumerate(values):
            trajectories.append(Builder().user().agent(calls=[acc("acc_1" if v == 1.0 else "other")])
                                .build(task_id=task_id, trial=trial))
    return compute_run_metrics(trajectories, tasks)


def test_bootstrap_interval_over_tasks_by_hand():
    """Two tasks, TSR 1.0 and 0.5: a resample of 2 tasks has mean 1.0, 0.75 or 0.5 with probability
    1/4, 1/2, 1/4, so the 2.5th and 97.5th percentiles are 0.5 and 1.0."""
    run, _ = _tsr_run({"t1": [1.0], "t2": [0.5]})
    assert run.tsr.mean == 0.75
    assert (run.intervals["tsr"].low, run.intervals["tsr"].high) == (0.5, 1.0)
    again, _ = _tsr_run({"t1": [1.0], "t2": [0.5]})
    assert again.intervals == run.intervals                     # seeded


def test_identical_tasks_give_a_zero_width_interval_and_rerun_agreement_by_hand():
    run, _ = _tsr_run({"t1": [1.0, 1.0], "t2": [1.0, 1.0], "t3": [1.0, 0.5]})
    assert run.tsr.mean == pytest.approx(5.5 / 6)
    assert run.rerun_agreement == pytest.approx(2 / 3)          # t3's trials end differently
    same, _ = _tsr_run({"t1": [1.0], "t2": [1.0]})
    assert (same.intervals["tsr"].low, same.intervals["tsr"].high) == (1.0, 1.0)
    assert same.rerun_agreement is None                         # one trial: nothing to agree on
    for name in ("tsr", "tue", "tcrr", "pass^1"):
        assert name in run.intervals
