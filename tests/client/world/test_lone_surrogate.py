"""A lone surrogate ("\\ud83d") in an agent's tool arguments is the agent's mistake, over every transport.

The LLM agent runs against the fake OpenAI server: in two of the five simulations its first message
asks for two tool calls, the first with a lone surrogate in its arguments. That call alone is
`invalid_arguments`; the other call of the same message, and every other simulation running at the
same time, are unaffected; the trajectories file is valid UTF-8 JSONL; `--resume` reads it back and
finishes, running the offending simulations again when they are missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.orchestrator import derive_seed
from shiftbox.testing import Reply, ToolCallReply, fake_openai
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
# (task, trial) -> the arguments its agent sends first: JSON text whose string holds a lone high surrogate,
# escaped inside the arguments (ASCII) or as a raw code point in them (then escaped in the response body)
OFFENDERS = {
    ("hw_banking_002", 0): '{"phone_number": "+1555\\ud83d"}',
    ("hw_banking_004", 0): '{"phone_number": "+1555\ud83d"}',
}
OFFENDER_IDS = {f"{task}#{trial}" for task, trial in OFFENDERS}
SURROGATE_VALUE = {"phone_number": "+1555\ud83d"}
VALID = {"phone_number": "+15555640027"}
SEEDS = {derive_seed(0, task, trial): arguments for (task, trial), arguments in OFFENDERS.items()}


def brain(body: dict) -> Reply:
    """Tool calls on the agent's first turn (an offender's first one invalid), then text."""
    messages = body["messages"]
    if any(m.get("tool_calls") for m in messages if m["role"] == "assistant"):
        return Reply.text("Done. Is there anything else I can help with?")
    valid = ToolCallReply(name="get_customer_by_phone", arguments=VALID)
    if body["seed"] in SEEDS:
        return Reply.tools(ToolCallReply(name="get_customer_by_phone", arguments=SEEDS[body["seed"]]), valid)
    return Reply.tools(valid)


def run(out: Path, base_url: str, servers: str, *extra: str):
    args = ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
            "--agent", "litellm:openai/fake-model", "--agent-arg", f"api_base={base_url}",
            "--agent-arg", "retry_backoff=0", "--servers", servers, "--concurrency", "5", "--max-steps", "12", *extra]
    return runner.invoke(app, args)


def check_run(out: Path) -> dict[str, str]:
    """The run's file is valid UTF-8 JSONL and only the offending call failed; returns canonical JSON per id."""
    raw = (out / "trajectories.jsonl").read_bytes()
    lines = raw.decode("utf-8").splitlines()  # strict UTF-8: no unpaired surrogate written raw
    assert all(isinstance(json.loads(line), dict) for line in lines)
    trajectories = read_trajectories(out)
    ids = [t.simulation_id for t in trajectories]
    assert len(ids) == len(set(ids)) == 5, ids
    for t in trajectories:
        assert t.termination.reason not in ("infrastructure_error", "agent_error", "user_error"), \
            (t.simulation_id, t.termination)
        if t.simulation_id in OFFENDER_IDS:
            bad, good = t.tool_calls[0], t.tool_calls[1]
            assert bad.is_error and bad.error_kind == "invalid_arguments", bad
            assert bad.arguments == SURROGATE_VALUE  # kept as the agent sent it
            assert "phone_number" in bad.result["error"]["fields"]
            assert not good.is_error and good.result["customer_id"], good
            assert all(not c.is_error for c in t.tool_calls[2:])
        else:
            assert t.tool_calls and all(not c.is_error for c in t.tool_calls), t.simulation_id
    return {t.simulation_id: t.canonical_json() for t in trajectories}


@pytest.mark.parametrize("servers", ["inproc", "stdio", "http"])
def test_a_lone_surrogate_is_the_agents_error_and_the_run_goes_on(tmp_path, monkeypatch, servers):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    out = tmp_path / "run"
    with fake_openai(brain) as server:
        res = run(out, server.base_url, servers)
        assert res.exit_code == 0, res.output
        full = check_run(out)

        # the offenders missing: --resume runs them again (and they meet the surrogate again)
        path = out / "trajectories.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        offender = next(line for line in lines if json.loads(line)["simulation_id"] in OFFENDER_IDS)
        others = [line for line in lines if json.loads(line)["simulation_id"] not in OFFENDER_IDS]
        path.write_bytes(others[0])
        res = run(out, server.base_url, servers, "--resume")
        assert res.exit_code == 0, res.output
        assert check_run(out) == full

        # an offender written: --resume reads its escaped line back, a torn last line is dropped
        path.write_bytes(offender + others[0] + others[1][:30])
        res = run(out, server.base_url, servers, "--resume")
        assert res.exit_code == 0, res.output
        assert "2 simulations already finished" in res.output
        assert check_run(out) == full
    assert not server.errors, server.errors
    if servers == "inproc":  # what reads the run afterwards reads the escaped line too
        assert runner.invoke(app, ["metrics", str(out)]).exit_code == 0
        res = runner.invoke(app, ["report", str(out), "--html", str(tmp_path / "report.html")])
        assert res.exit_code == 0, res.output
        assert "\\ud83d" in (tmp_path / "report.html").read_text(encoding="utf-8")
