"""Runs that failed, and inputs that are broken, never exit 0 or end in a traceback (issue 15 item 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.harness import HANDWRITTEN

runner = CliRunner()


def run_cli(out: Path, *extra: str):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out), *extra])


def last_line(output: str) -> str:
    return [line for line in output.splitlines() if line.strip()][-1]


def test_a_run_whose_every_simulation_failed_for_lack_of_an_api_key_exits_non_zero(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = run_cli(tmp_path / "r", "--agent", "litellm:openai/fake-model", "--agent-arg", "api_base=http://127.0.0.1:9",
                  "--agent-arg", "max_retries=0", "--task-id", "hw_banking_001", "--task-id", "hw_banking_002",
                  "--no-preflight")  # the simulations' own failure (the preflight would refuse the run: test_preflight)
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    line = last_line(res.output)
    assert "2 simulations" in line and "infrastructure" in line and "api_key" in line.lower(), line


def test_a_missing_cmd_program_is_not_a_successful_run(tmp_path):
    res = run_cli(tmp_path / "r", "--agent", 'cmd:"no-such-agent-program-15 --flag"', "--task-id", "hw_banking_001")
    assert res.exit_code != 0, res.output
    assert "no-such-agent-program-15" in last_line(res.output)


def test_some_simulations_failing_is_still_a_run(tmp_path):
    """Only when nothing could be scored is the run a failure; a partial infrastructure failure is reported."""
    res = run_cli(tmp_path / "r", "--task-id", "hw_banking_001")
    assert res.exit_code == 0, res.output


def corrupt_line(run_dir: Path, n: int = 1) -> None:
    path = run_dir / "trajectories.jsonl"
    lines = path.read_text().splitlines()
    lines[n] = lines[n][: len(lines[n]) // 2] + "}"  # a complete line, but not a trajectory
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def corrupt_run(tmp_path) -> Path:
    out = tmp_path / "r"
    assert run_cli(out, "--trials", "1").exit_code == 0
    corrupt_line(out, 1)
    return out


@pytest.mark.parametrize("command", [
    ["metrics", "{out}"], ["metrics", "{out}", "--json"], ["report", "{out}", "--html", "{out}/r.html"],
    ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", "{out}", "--resume"],
], ids=["metrics", "metrics-json", "report", "run-resume"])
def test_a_corrupt_trajectory_line_is_a_named_input_error(corrupt_run, command):
    res = runner.invoke(app, [part.format(out=corrupt_run) for part in command])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "trajectories.jsonl" in res.output and "line 2" in res.output, res.output


def test_a_corrupt_run_json_is_a_named_input_error(tmp_path):
    out = tmp_path / "r"
    assert run_cli(out, "--task-id", "hw_banking_001").exit_code == 0
    (out / "run.json").write_text('{"config": {"domain": "banking"')
    res = run_cli(out, "--task-id", "hw_banking_001", "--resume")
    assert res.exit_code == 2 and "run.json" in res.output, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)


def test_a_corrupt_task_file_is_a_named_input_error(tmp_path):
    tasks = tmp_path / "tasks.json"
    data = json.loads(HANDWRITTEN.read_text())
    data["tasks"][1]["id"] = 5.5
    tasks.write_text(json.dumps(data, indent=2))
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(tasks), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "tasks.json" in res.output, (res.output, res.exception)
    tasks.write_text(HANDWRITTEN.read_text()[:500])
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(tasks), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "tasks.json" in res.output and "line" in res.output, (res.output, res.exception)
