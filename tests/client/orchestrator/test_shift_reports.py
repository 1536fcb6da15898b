"""The AgentChangeBench-parity tool set (`--toolset agentchangebench`): the agent may report goal shifts itself
with `log_shift_event`; the trajectory keeps those reports, and the metrics say how often they match the
ground-truth shifts (beside GSRT). The default tool set is unchanged and its trajectories carry no reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.agents import Agent, AgentReply, scripted_agent
from shiftbox.cli import app
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.trajectory import ToolCall, Trajectory, read_trajectories
from shiftbox.users import ScriptedUser
from shiftbox.world import open_world
from tests.client.harness import HANDWRITTEN, handwritten
from tests.conftest import require_acb

pytestmark = pytest.mark.anyio
TASKS = {t.id: t for t in handwritten().tasks}
runner = CliRunner()


class ShiftLoggingOracle(Agent):
    """The oracle, but first reporting a goal shift whenever the user's goal changed (it peeks at the ground
    truth, which a real agent never sees: the test needs reports that match)."""

    privileged = True  # the oracle needs the task

    def __init__(self, extra_at_start: bool = False):
        self.inner = scripted_agent("oracle")
        self.name = "test:shift-logger"
        self.goal = None
        self.extra_at_start = extra_at_start

    async def start(self, context):
        await self.inner.start(context)

    async def close(self):
        await self.inner.close()

    async def respond(self, messages):
        users = [m for m in messages if m.role == "user"]
        last = users[-1]
        already = any(c.name == "log_shift_event" for m in messages if m.index > last.index for c in m.tool_calls)
        first_turn = len(users) == 1 and self.extra_at_start and not already
        if not already and (first_turn or (self.goal is not None and last.goal != self.goal)):
            self.goal = last.goal
            return AgentReply(tool_calls=[ToolCall(id=f"log{last.index}", name="log_shift_event", arguments={
                "turn_no": last.index, "from_class": "prev", "to_class": str(last.goal),
                "trigger_terms": ["new request"], "requires_reauth": False})])
        self.goal = last.goal
        logged = {c.id for m in messages for c in m.tool_calls if c.name == "log_shift_event"}
        hidden = [m for m in messages if not (m.tool_calls and {c.id for c in m.tool_calls} <= logged)
                  and m.tool_call_id not in logged]
        return await self.inner.respond(hidden)  # the oracle never sees its own reports


async def _simulate(toolset: str, agent) -> Trajectory:
    async with open_world("banking", toolset=toolset) as world:
        return await run_simulation(TASKS["hw_banking_001"], 0, 0, agent, ScriptedUser(), world)


async def test_agentchangebench_toolset_records_the_agents_shift_reports():
    t = await _simulate("agentchangebench", ShiftLoggingOracle())
    assert t.servers["banking"].toolset == "agentchangebench"
    assert len(t.shifts) == 2 and len(t.shift_reports) == 2
    for report, shift in zip(t.shift_reports, t.shifts, strict=True):
        assert report.message_index > shift.message_index
        assert t.messages[report.message_index].role == "assistant"
        assert (report.turn_no, report.to_class, report.trigger_terms) == (shift.message_index, shift.to_goal,
                                                                           ["new request"])
    calls = [c for c in t.tool_calls if c.name == "log_shift_event"]
    assert [c.result["count"] for c in calls] == [1, 2] and not any(c.is_error for c in calls)
    assert t.termination.reason == "user_stop"
    # the reports are instrumentation: the final state equals the plain oracle's
    plain = await _simulate("default", scripted_agent("oracle"))
    assert t.final_state == plain.final_state


async def test_default_toolset_trajectories_are_unchanged():
    t = await _simulate("default", scripted_agent("oracle"))
    assert t.shift_reports is None
    assert "shift_reports" not in t.canonical() and "toolset" not in t.canonical()["servers"]["banking"]


async def test_metrics_report_how_often_self_reports_match_the_shifts():
    matched = await _simulate("agentchangebench", ShiftLoggingOracle())
    noisy = await _simulate("agentchangebench", ShiftLoggingOracle(extra_at_start=True))
    run, sims = compute_run_metrics([matched], TASKS)
    score = sims[0].shift_reports
    assert (score.shifts, score.reports, score.matched) == (2, 2, 2)
    noisy_score = compute_run_metrics([noisy], TASKS)[1][0].shift_reports
    assert (noisy_score.shifts, noisy_score.reports, noisy_score.matched) == (2, 3, 2)
    assert sims[0].tue.p == 1.0        # log_shift_event is a tool of the domain: its calls fit its schema
    assert run.shift_reports.recall == 1.0 and run.shift_reports.precision == 1.0
    noisy.simulation_id = "other"
    run, _ = compute_run_metrics([matched, noisy], TASKS)
    assert (run.shift_reports.shifts, run.shift_reports.reports, run.shift_reports.matched) == (4, 5, 4)
    assert run.shift_reports.precision == pytest.approx(0.8) and run.shift_reports.recall == 1.0


async def test_metrics_leave_the_figure_out_without_the_parity_toolset():
    t = await _simulate("default", scripted_agent("oracle"))
    run, sims = compute_run_metrics([t], TASKS)
    assert run.shift_reports is None and sims[0].shift_reports is None
    assert "shift_reports" not in run.model_dump(mode="json")


def test_run_cli_takes_toolset_and_records_it(tmp_path):
    out = tmp_path / "r"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                              "--task-id", "hw_banking_001", "--toolset", "agentchangebench"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "run.json").read_text())["config"]["toolset"] == "agentchangebench"
    (t,) = read_trajectories(out)
    assert t.shift_reports == [] and t.servers["banking"].toolset == "agentchangebench"
    metrics = runner.invoke(app, ["metrics", str(out)])
    assert metrics.exit_code == 0, metrics.output
    assert "shift reports" in metrics.output


def test_run_cli_refuses_an_unknown_toolset(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                              str(tmp_path / "r"), "--toolset", "nope"])
    assert res.exit_code == 2 and "agentchangebench" in res.output


def test_default_run_json_does_not_name_a_toolset(tmp_path):
    out = tmp_path / "r"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                              "--task-id", "hw_banking_001"])
    assert res.exit_code == 0, res.output
    assert "toolset" not in json.loads((out / "run.json").read_text())["config"]


def test_recorded_agentchangebench_runs_carry_the_agents_shift_reports():
    from shiftbox.agentchangebench import load_agentchangebench_results

    path = require_acb("simulations", "banking_test_run.json")
    results = load_agentchangebench_results(Path(path))
    reported = {t.task_id: t.shift_reports for t in results.trajectories if t.shift_reports}
    assert sorted(reported) == ["12_banking_fraud_medium2_security_001_converted",
                                "14_banking_transactions_medium2_dispute_001_converted"]
    (report,) = reported["12_banking_fraud_medium2_security_001_converted"]
    assert (report.message_index, report.turn_no, report.from_class, report.to_class) == (
        14, 5, "TransactionResolver", "SecurityEducator")
    assert all(t.shift_reports is not None for t in results.trajectories)   # the reference offered the tool


@pytest.mark.parametrize("servers", ["stdio", "http"])
async def test_toolset_reaches_server_processes(servers):
    async with open_world("banking", servers=servers, toolset="agentchangebench") as world:
        assert "log_shift_event" in [t["name"] for t in world.tools]
        record = await world.episode("e").call("log_shift_event", {
            "turn_no": 1, "from_class": "a", "to_class": "b", "trigger_terms": [], "requires_reauth": True},
            call_id="c0", message_index=1, agent_turn=0)
        assert not record.is_error and record.result == {"logged": True, "count": 1}
