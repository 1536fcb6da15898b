"""`--compat agentchangebench` on small hand-built results files ({timestamp, info, tasks[], simulations[]}):
the older task format without goal_shifts, pass^k from the stored rewards capped by info.num_trials, and a
file with no simulations. Every expected value is worked out by hand in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.agentchangebench import compat_run_metrics, load_agentchangebench_results
from shiftbox.cli import app

ASSERTIONS = ["The assistant helped.", "The assistant was polite."]

runner = CliRunner()


def _task(task_id: str, *, goal_shifts: bool = True) -> dict:
    scenario: dict = {"persona": "p", "instructions": {"domain": "banking", "reason_for_call": "help"}}
    if goal_shifts:
        scenario["goal_shifts"] = {"required_shifts": 1, "goals": ["authentication", "transactions"]}
    return {"id": task_id, "user_scenario": scenario, "evaluation_criteria": {"nl_assertions": ASSERTIONS}}


def _simulation(task_id: str, trial: int, *, reward: float, met: tuple[bool, bool] = (False, False),
                judge: dict | None = None) -> dict:
    info: dict = {"env": None}
    if judge is not None:
        info["gsrt_v2"] = judge
    return {
        "id": f"{task_id}-{trial}", "task_id": task_id, "trial": trial, "seed": 7,
        "termination_reason": "user_stop",
        "reward_info": {"reward": reward, "info": info,
                        "nl_assertions": [{"nl_assertion": a, "met": m, "justification": ""}
                                          for a, m in zip(ASSERTIONS, met, strict=True)]},
        "messages": [
            {"role": "assistant", "content": "Hello, how can I help?", "turn_idx": 0},
            {"role": "user", "content": "I need help.", "turn_idx": 1},
            {"role": "assistant", "content": "Sure.", "turn_idx": 2},
            {"role": "user", "content": "Thanks ###STOP###", "turn_idx": 3},
        ],
    }


def _write(tmp_path: Path, tasks: list[dict], simulations: list[dict], num_trials: int = 1) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({
        "timestamp": "2025-01-01T00:00:00",
        "info": {"num_trials": num_trials, "agent_info": {"llm": "agent-llm"}, "user_info": {"llm": "user-llm"},
                 "environment_info": {"domain_name": "banking"}},
        "tasks": tasks, "simulations": simulations}))
    return path


def _rescore_json(path: Path) -> dict:
    res = runner.invoke(app, ["rescore", str(path), "--format", "agentchangebench", "--compat", "agentchangebench",
                              "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _score(path: Path):
    results = load_agentchangebench_results(path)
    return compat_run_metrics(results.trajectories, results.tasks, num_trials=results.num_trials)


# --------------------------------------------------------------------------------------------------
# 1. tasks without goal_shifts (the benchmark's older format) are read; their goals are unknown


def test_tasks_without_goal_shifts_are_read_and_shifts_come_only_from_the_judge(tmp_path):
    one_shift = {"start_goal": {"turn": 1, "goal": "auth"},
                 "user_goal_shifts": [{"turn": 1, "from": "auth", "to": "cards", "acknowledgment_turn": 2,
                                       "tool_turn": None, "outcome_turn": 3, "transferred_to_human": False}]}
    path = _write(tmp_path, [_task("old_1", goal_shifts=False), _task("old_2", goal_shifts=False)], [
        _simulation("old_1", 0, reward=0.5, met=(True, False), judge=one_shift),
        _simulation("old_2", 0, reward=1.0, met=(True, True), judge={"user_goal_shifts": []}),
    ])
    results = load_agentchangebench_results(path)
    assert [t.goals for t in results.tasks.values()] == [[], []]
    first, second = results.trajectories
    # the shift is the judge's (its own goal tokens: the task names no goals); none in the other
    assert [(s.message_index, s.from_goal, s.to_goal) for s in first.shifts] == [(1, "auth", "cards")]
    assert second.shifts == [] and all(m.goal is None for m in second.messages)

    run, sims = compat_run_metrics(results.trajectories, results.tasks, num_trials=results.num_trials)
    # TSR: only the NL channel, from the stored verdicts: 1/2 and 2/2
    assert [s.tsr.score for s in sims] == [0.5, 1.0]
    assert run.tsr.mean == pytest.approx((0.5 + 1.0) / 2)
    # GSRT: 1 shift, acknowledged at message 2 (> 1), not transferred -> recovered; ack 2-1, outcome 3-1
    assert (run.gsrt.shifts, run.gsrt.recovery_rate, run.gsrt.transfer_rate) == (1, 1.0, 0.0)
    assert (run.gsrt.median_ack, run.gsrt.median_tool, run.gsrt.median_outcome) == (1.0, None, 2.0)
    assert any("goal_shifts" in note for note in run.notes)

    data = _rescore_json(path)
    assert data["simulations"] == 2 and data["gsrt"]["shifts"] == 1


def test_tasks_without_goal_shifts_and_no_judge_output_leave_gsrt_undefined(tmp_path):
    path = _write(tmp_path, [_task("old_1", goal_shifts=False)],
                  [_simulation("old_1", 0, reward=0.0, met=(False, True))])
    run, sims = _score(path)
    assert sims[0].gsrt == [] and sims[0].tsr.score == 0.5
    assert run.gsrt.shifts == 0
    assert (run.gsrt.recovery_rate, run.gsrt.transfer_rate, run.gsrt.median_ack) == (None, None, None)


# --------------------------------------------------------------------------------------------------
# 2. pass^k: success is the stored reward_info.reward within 1e-6 of 1; k up to min(info.num_trials,
#    fewest trials of any task); a task's n is every trial it has


# Stored rewards: task a 1.0, 0.0, 1 - 1e-7 (c=2 of n=3); task b 0.9999, 1 + 1e-7 (c=1 of n=2).
# The stored NL verdicts are all unmet, so the recomputed TSR is 0.0 everywhere (no success at all).
REWARDS = {"a": [1.0, 0.0, 1 - 1e-7], "b": [0.9999, 1 + 1e-7]}
PASS_HAT_1 = (2 / 3 + 1 / 2) / 2  # mean over tasks of c/n = 7/12
PASS_HAT_2 = (1 / 3 + 0 / 1) / 2  # C(2,2)/C(3,2) = 1/3 for a, C(1,2)/C(2,2) = 0 for b


@pytest.mark.parametrize(("num_trials", "expected"), [
    (1, {1: PASS_HAT_1}),                   # k capped by info.num_trials = 1
    (3, {1: PASS_HAT_1, 2: PASS_HAT_2}),    # k capped by the fewest trials (task b: 2)
])
def test_pass_hat_k_uses_the_stored_reward_and_info_num_trials(tmp_path, num_trials, expected):
    sims_in = [_simulation(task, trial, reward=r) for task, rewards in REWARDS.items()
               for trial, r in enumerate(rewards)]
    path = _write(tmp_path, [_task("a"), _task("b")], sims_in, num_trials=num_trials)
    run, sims = _score(path)
    assert [s.tsr.score for s in sims] == [0.0] * 5
    assert [s.success for s in sims] == [True, False, True, False, True]
    assert run.pass_hat_k.keys() == expected.keys()
    for k, value in expected.items():
        assert run.pass_hat_k[k] == pytest.approx(value, abs=1e-12), k
    data = _rescore_json(path)
    assert {int(k): v for k, v in data["pass_hat_k"].items()} == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------------------------------
# 3. a file with no simulations: GSRT rates are undefined (the reference's aggregate fails: -1)


def test_no_simulations_gives_undefined_gsrt_rates(tmp_path):
    path = _write(tmp_path, [_task("a")], [])
    run, sims = _score(path)
    assert sims == [] and run.simulations == 0
    gsrt = run.gsrt
    assert gsrt.shifts == 0
    assert (gsrt.recovery_rate, gsrt.transfer_rate, gsrt.median_ack, gsrt.median_tool, gsrt.median_outcome,
            gsrt.never_ack) == (None, None, None, None, None, None)
    assert run.pass_hat_k == {}
    data = _rescore_json(path)
    assert data["gsrt"]["recovery_rate"] is None and data["gsrt"]["transfer_rate"] is None
