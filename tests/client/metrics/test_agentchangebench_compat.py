"""`--compat agentchangebench` on the two recorded banking runs: the README's reference values, the
reference's stored per-simulation values, the loader's conversion, and `shiftbox rescore`."""

from __future__ import annotations

import json
from functools import cache

import pytest
import typer
from typer.testing import CliRunner

from shiftbox.agentchangebench import (
    compat_run_metrics,
    load_agentchangebench_results,
    load_agentchangebench_simulations,
)
from shiftbox.cli.rescore import rescore
from tests.conftest import require_acb

TEST_RUN = "banking_test_run.json"
GPT41 = "banking_gpt-4.1_2025-08-23.json"

# The README's reference values (computed with the AgentChangeBench code), as fractions.
EXPECTED = {
    TEST_RUN: {"sims": 24, "calls": 84, "tcrr": 38 / 84, "t": 78 / 84, "p": 1.0, "errors": 6, "messages": 488},
    GPT41: {"sims": 13, "calls": 78, "tcrr": 22 / 78, "t": 68 / 78, "p": 1.0, "errors": 10, "messages": 329},
}
# banking_gpt-4.1: TSR 0.348718 = 68/195; communicate_info 0.158333 = 19/120; action 0.262821 = 41/156;
# nl_assertion 0.602564 = 47/78.
GPT41_TSR = {"mean": 68 / 195, "communicate_info": 19 / 120, "action": 41 / 156, "nl_assertion": 47 / 78}
GPT41_TSR_README = {"mean": 0.348718, "communicate_info": 0.158333, "action": 0.262821, "nl_assertion": 0.602564}


def _path(name: str):
    return require_acb("simulations", name)


@cache
def _raw(name: str) -> dict:
    return json.loads(_path(name).read_text())


@cache
def _loaded(name: str):
    return load_agentchangebench_simulations(_path(name))


@cache
def _scored(name: str):
    trajectories, tasks = _loaded(name)
    return compat_run_metrics(trajectories, tasks)


@pytest.mark.parametrize("name", [TEST_RUN, GPT41])
def test_compat_reproduces_the_reference_values(name):
    run, _ = _scored(name)
    want = EXPECTED[name]
    assert run.mode == "agentchangebench"
    assert run.simulations == want["sims"] and run.tool_calls == want["calls"]
    assert run.tcrr.calls == want["calls"]
    assert run.tcrr.pooled == pytest.approx(want["tcrr"], abs=1e-9)
    assert run.tcrr.redundant == round(want["tcrr"] * want["calls"])
    assert run.tue.t == pytest.approx(want["t"], abs=1e-9)
    assert run.tue.p == pytest.approx(want["p"], abs=1e-9)
    assert run.tue.tue == pytest.approx(0.6 * want["t"] + 0.4 * want["p"], abs=1e-9)


@pytest.mark.parametrize("name", [TEST_RUN, GPT41])
def test_compat_pass_hat_k_of_the_recorded_runs(name):
    # info.num_trials = 1 and one trial per task; every stored reward_info.reward is below 1 - 1e-6
    raw = _raw(name)
    assert raw["info"]["num_trials"] == 1 and all(s["reward_info"]["reward"] < 1 - 1e-6 for s in raw["simulations"])
    results = load_agentchangebench_results(_path(name))
    assert results.num_trials == 1
    run, _ = compat_run_metrics(results.trajectories, results.tasks, num_trials=results.num_trials)
    assert run.pass_hat_k == {1: 0.0}


def test_compat_tcrr_window_and_batch_counts_add_up():
    for name, (window, batch) in {TEST_RUN: (21, 17), GPT41: (13, 9)}.items():
        run, _ = _scored(name)
        assert (run.tcrr.window, run.tcrr.batch) == (window, batch)
        assert run.tcrr.redundant == window + batch


@pytest.mark.parametrize(("name", "redundant"), [(TEST_RUN, 1), (GPT41, 3)])
def test_per_simulation_tcrr_is_the_readme_unpooled_count(name, redundant):
    _, sims = _scored(name)
    assert sum(s.tcrr.redundant for s in sims) == redundant
    assert sum(s.tcrr.calls for s in sims) == EXPECTED[name]["calls"]


def test_compat_tsr_of_gpt41_run_matches_the_readme():
    run, _ = _scored(GPT41)
    assert run.tsr.n == 13 and run.tsr.nl_judged == 13
    for key, value in GPT41_TSR.items():
        got = getattr(run.tsr, key)
        assert got == pytest.approx(value, abs=1e-9), key
        assert got == pytest.approx(GPT41_TSR_README[key], abs=1e-6), key


def test_compat_tsr_matches_the_stored_tsr_details_per_simulation():
    _, sims = _scored(GPT41)
    stored = {s["id"]: s["reward_info"]["info"]["tsr_details"] for s in _raw(GPT41)["simulations"]}
    assert len(sims) == len(stored) == 13
    for sim in sims:
        ref = stored[sim.simulation_id]
        assert sim.tsr.score == pytest.approx(ref["overall_tsr"], abs=1e-9), sim.task_id
        for channel, flag in (("communicate_info", "has_communicate_info"), ("action", "has_actions"),
                              ("nl_assertion", "has_nl_assertions")):
            want = ref[channel] if ref[flag] else None
            got = getattr(sim.tsr, channel)
            assert (got is None) == (want is None), (sim.task_id, channel)
            if want is not None:
                assert got == pytest.approx(want, abs=1e-9), (sim.task_id, channel)
        assert sim.tsr.score == pytest.approx(_raw_reward(sim.simulation_id), abs=1e-9)


def _raw_reward(simulation_id: str) -> float:
    return next(s["reward_info"]["reward"] for s in _raw(GPT41)["simulations"] if s["id"] == simulation_id)


def test_test_run_tsr_uses_the_stored_nl_verdicts():
    run, sims = _scored(TEST_RUN)
    raw = {s["id"]: s for s in _raw(TEST_RUN)["simulations"]}
    for sim in sims:
        verdicts = raw[sim.simulation_id]["reward_info"]["nl_assertions"]
        assert sim.tsr.nl_status == "judged"
        assert sim.tsr.nl_assertion == pytest.approx(sum(v["met"] for v in verdicts) / len(verdicts))
        assert sim.tsr.communicate_info is None  # the older tasks have no communicate_info
    assert run.tsr.communicate_info is None
    assert any("tsr_details" in note for note in run.notes)


def test_gsrt_undefined_when_a_simulation_has_no_judge_output():
    run, sims = _scored(GPT41)
    gsrt = run.gsrt
    assert gsrt.shifts >= 0 and gsrt.recovery_rate is None and gsrt.median_ack is None
    assert (gsrt.recovery_rate, gsrt.transfer_rate, gsrt.median_ack, gsrt.median_tool, gsrt.median_outcome) == (
        None, None, None, None, None)
    assert sum(not s.gsrt for s in sims) == 3  # 2 without judge output + 1 judged with no shift
    assert any("2 of 13" in note for note in run.notes)


def test_gsrt_per_shift_deltas_are_message_index_differences():
    _, sims = _scored(GPT41)
    raw = {s["id"]: s for s in _raw(GPT41)["simulations"]}
    checked = 0
    for sim in sims:
        judged = raw[sim.simulation_id]["reward_info"]["info"].get("gsrt_v2")
        shifts = judged["user_goal_shifts"] if judged else []
        assert len(sim.gsrt) == len(shifts)
        for rec, ref in zip(sim.gsrt, shifts, strict=True):
            turn = ref["turn"]
            assert rec.message_index == turn
            for stage, key in (("ack", "acknowledgment_turn"), ("tool", "tool_turn"), ("outcome", "outcome_turn")):
                value = ref[key]
                want = value - turn if value is not None and value > turn else None
                assert getattr(rec, stage) == want, (sim.task_id, stage)
            assert rec.transferred == ref["transferred_to_human"]
            assert rec.recovered == (ref["acknowledgment_turn"] is not None
                                     and ref["acknowledgment_turn"] > turn and not ref["transferred_to_human"])
            checked += 1
    assert checked == 11


def test_gsrt_old_judge_format_has_no_acknowledgment():
    run, sims = _scored(TEST_RUN)
    assert run.gsrt.shifts == 25 and run.gsrt.recovery_rate == 0.0 and run.gsrt.transfer_rate == 0.0
    assert all(r.ack is None and not r.recovered for s in sims for r in s.gsrt)


@pytest.mark.parametrize("name", [TEST_RUN, GPT41])
def test_loader_converts_every_simulation(name):
    trajectories, tasks = _loaded(name)
    raw = _raw(name)
    want = EXPECTED[name]
    assert len(trajectories) == want["sims"]
    assert {t.id for t in tasks.values()} == {t["id"] for t in raw["tasks"]}
    assert sum(len(t.messages) for t in trajectories) == want["messages"]
    assert sum(len(t.tool_calls) for t in trajectories) == want["calls"]
    assert sum(c.is_error for t in trajectories for c in t.tool_calls) == want["errors"]
    assert sum(bool(m.is_error) for t in trajectories for m in t.messages if m.role == "tool") == want["errors"]
    llm = raw["info"]["agent_info"]["llm"]
    for traj, sim in zip(trajectories, raw["simulations"], strict=True):
        assert traj.simulation_id == sim["id"] and traj.task_id == sim["task_id"]
        assert (traj.trial, traj.seed) == (sim["trial"], sim["seed"])
        assert traj.agent == f"agentchangebench:{llm}" and traj.user.startswith("agentchangebench:")
        assert traj.source_data == sim["reward_info"]
        # tau2 says user_stop for every ending; the user's last message tells a stop from a transfer
        last_user = [m["content"] for m in sim["messages"] if m["role"] == "user"][-1]
        ending = "user_transfer" if "###TRANSFER###" in last_user else "user_stop"
        assert sim["termination_reason"] == "user_stop"
        assert traj.termination.reason == ending and traj.termination.blame == "none"
        assert traj.goals == tasks[traj.task_id].goals
        assert [m.index for m in traj.messages] == list(range(len(sim["messages"])))
        assert [m.role for m in traj.messages] == [m["role"] for m in sim["messages"]]
        assistants = [m for m in traj.messages if m.role == "assistant"]
        assert [m.agent_turn for m in assistants] == list(range(len(assistants)))
        calls = {c.id: c for m in traj.messages for c in m.tool_calls}
        for record in traj.tool_calls:
            assert calls[record.call_id].arguments == record.arguments
            assert record.error_kind == ("unknown" if record.is_error else None)
            assert traj.messages[record.message_index].role == "assistant"
        answered = {m.tool_call_id for m in traj.messages if m.role == "tool"}
        assert answered == {r.call_id for r in traj.tool_calls}
        judged = (sim["reward_info"].get("info") or {}).get("gsrt_v2")
        judge_turns = [s["turn"] for s in judged["user_goal_shifts"]] if judged else []
        assert [s.message_index for s in traj.shifts] == judge_turns
        for shift in traj.shifts:
            assert traj.messages[shift.message_index].role == "user"
            assert traj.messages[shift.message_index].goal == shift.to_goal
            assert (shift.from_goal, shift.to_goal) == tuple(traj.goals[shift.shift_index - 1:shift.shift_index + 1])


def test_loader_rejects_a_task_list(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(_raw(GPT41)["tasks"]))
    with pytest.raises(ValueError, match="not an AgentChangeBench results file"):
        load_agentchangebench_simulations(path)


# --------------------------------------------------------------------------------------------------
# The command

runner = CliRunner()
cli = typer.Typer()
cli.command("rescore")(rescore)


@cli.command("noop")
def _noop() -> None:  # a second command keeps `rescore` a subcommand, as in shiftbox's CLI
    pass


def test_cli_compat_json_prints_the_reference_values():
    res = runner.invoke(cli, ["rescore", str(_path(GPT41)), "--format", "agentchangebench",
                              "--compat", "agentchangebench", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["mode"] == "agentchangebench" and data["simulations"] == 13 and data["tool_calls"] == 78
    assert data["tcrr"]["pooled"] == pytest.approx(22 / 78, abs=1e-9)
    assert data["tue"]["t"] == pytest.approx(68 / 78, abs=1e-9) and data["tue"]["p"] == 1.0
    assert data["tsr"]["mean"] == pytest.approx(68 / 195, abs=1e-9)
    assert data["gsrt"]["shifts"] >= 0 and data["gsrt"]["recovery_rate"] is None


def test_cli_table_shows_the_headline_numbers():
    res = runner.invoke(cli, ["rescore", str(_path(TEST_RUN)), "--compat", "agentchangebench"])
    assert res.exit_code == 0, res.output
    for text in ("0.452381", "38/84", "0.928571", "agentchangebench"):
        assert text in res.stdout


def test_cli_default_mode_uses_shiftbox_metrics():
    pytest.importorskip("shiftbox.metrics._aggregate")
    res = runner.invoke(cli, ["rescore", str(_path(GPT41)), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["mode"] == "shiftbox" and data["tool_calls"] == 78


@pytest.mark.parametrize(("args", "message"), [
    (["--compat", "tau2"], "agentchangebench"),
    (["--format", "tau2"], "agentchangebench"),
])
def test_cli_unknown_values_are_usage_errors(args, message):
    res = runner.invoke(cli, ["rescore", str(_path(GPT41)), *args])
    assert res.exit_code == 2
    assert "is not one of" in res.output and message in res.output  # the choices typer lists


def test_cli_missing_or_wrong_file_is_a_usage_error(tmp_path):
    res = runner.invoke(cli, ["rescore", str(tmp_path / "nope.json"), "--compat", "agentchangebench"])
    assert res.exit_code == 2 and "does not exist" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    res = runner.invoke(cli, ["rescore", str(bad), "--compat", "agentchangebench"])
    assert res.exit_code == 2 and "not an AgentChangeBench results file" in res.output
