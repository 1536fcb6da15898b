"""`--agent cmd:"<command>"`: external agent programs over JSON lines, their tool calls through the gateway."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
AGENT = Path(__file__).with_name("external_agent.py")
CUSTOMER = "cust_0004"


def cmd(*args: str) -> str:
    return "cmd:" + shlex.join([sys.executable, str(AGENT), *args])


def run_external(out: Path, agent: str, *extra: str, task: str = "hw_banking_003"):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                               "--agent", agent, "--user", "scripted", "--task-id", task, *extra])


def test_calls_made_over_mcp_are_recorded_in_the_trajectory_with_narration(tmp_path):
    res = run_external(tmp_path / "r", cmd("lookup", CUSTOMER), "--max-steps", "12")
    assert res.exit_code == 0, res.output
    [t] = read_trajectories(tmp_path / "r")
    assert t.agent.startswith("cmd:")
    # every user message is answered by: narration + good call, a bad call, then the text reply
    good = [c for c in t.tool_calls if not c.is_error]
    bad = [c for c in t.tool_calls if c.is_error]
    assert good and all(c.name == "get_customer_by_id" and c.arguments == {"customer_id": CUSTOMER} for c in good)
    assert good[0].result["customer_id"] == CUSTOMER
    assert bad and all(c.error_kind == "invalid_arguments" and c.arguments == {"customer_id": 5} for c in bad)
    first_call_message = t.messages[t.tool_calls[0].message_index]
    assert first_call_message.role == "assistant" and first_call_message.content == "Let me look that up."
    texts = [m.content for m in t.messages if m.role == "assistant" and not m.tool_calls]
    name = good[0].result["full_name"]
    assert texts and texts[0] == f"I found {name}. Is there anything else I can help with?"
    # one call per agent turn, turns numbered in order, each call answered by a tool message
    turns = [c.agent_turn for c in t.tool_calls]
    assert turns == sorted(set(turns))
    for c in t.tool_calls:
        assert t.messages[c.message_index + 1].tool_call_id == c.call_id


@pytest.mark.parametrize(("mode", "expected"), [
    ("crash", "exit code 3"),
    ("garbage", "not JSON"),
    ("silent_exit", "ended mid-conversation"),
])
def test_a_misbehaving_agent_ends_its_simulation_with_the_reason(tmp_path, mode, expected):
    res = run_external(tmp_path / mode, cmd(mode))
    assert res.exit_code == 1, res.output  # the program did not run: the run says so (test_agent_program_failures)
    [t] = read_trajectories(tmp_path / mode)
    assert t.termination.reason == "agent_program_error" and t.termination.blame == "agent_program"
    assert expected in t.termination.detail
    if mode == "crash":
        assert "about to fail on purpose" in t.termination.detail  # stderr tail kept for diagnosis


def test_a_hanging_agent_times_out_and_the_run_goes_on(tmp_path):
    start = time.monotonic()
    res = run_external(tmp_path / "hang", cmd("hang"), "--agent-arg", "timeout=1.5", "--trials", "2",
                       "--concurrency", "2")
    assert res.exit_code == 1, res.output
    trajectories = read_trajectories(tmp_path / "hang")
    assert len(trajectories) == 2
    assert all("no reply within 1.5 s" in t.termination.detail for t in trajectories)
    assert time.monotonic() - start < 30  # the hung processes were killed, not waited for


def test_a_missing_program_is_a_usage_error_before_the_run(tmp_path):
    res = run_external(tmp_path / "m", "cmd:/nonexistent/agent-program")
    assert res.exit_code == 2, res.output
    assert "/nonexistent/agent-program" in res.output and not (tmp_path / "m").exists()


def test_bad_cmd_specs_are_usage_errors(tmp_path):
    assert run_external(tmp_path / "a", "cmd:").exit_code == 2
    res = run_external(tmp_path / "b", cmd("hang"), "--agent-arg", "colour=blue")
    assert res.exit_code == 2 and "timeout" in res.output


def test_a_recorded_external_agent_run_replays_offline_without_the_program(tmp_path):
    fixture = tmp_path / "fixture"
    res = run_external(tmp_path / "live", cmd("lookup", CUSTOMER), "--max-steps", "12", "--record", str(fixture))
    assert res.exit_code == 0, res.output
    for tools in ("reexecute", "transcript"):
        replayed = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / tools), "--tools", tools])
        assert replayed.exit_code == 0, replayed.output
        assert [t.canonical_json() for t in read_trajectories(tmp_path / tools)] == \
               [t.canonical_json() for t in read_trajectories(fixture)]
    # a fixture whose agent messages were edited no longer matches what the tools return: drift is named
    path = fixture / "trajectories.jsonl"
    path.write_text(path.read_text().replace(f'"customer_id":"{CUSTOMER}"', '"customer_id":"cust_0005"', 1))
    drift = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "drift")])
    assert drift.exit_code == 1 and "drift" in drift.output
