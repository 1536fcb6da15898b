"""An agent program that did not run is not a conversation the agent lost (docs/agents.md#when-the-agent-did-not-run).

Not scored, counted and named in every summary, and the run exits 1 with the first failure's detail; an agent
that ran and answered badly is scored as before. `--resume` runs such simulations again.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.metrics import aggregate, simulation_metrics
from shiftbox.orchestrator import derive_seed
from shiftbox.trajectory import Termination, read_trajectories
from tests.client.harness import HANDWRITTEN, REPO, handwritten

runner = CliRunner()
BROKEN = Path(__file__).with_name("broken_agent.py")
EXTERNAL = Path(__file__).with_name("external_agent.py")
TASK = "hw_banking_003"


def cmd(program: Path, *args: str) -> str:
    return "cmd:" + shlex.join([sys.executable, str(program), *args])


def run(out: Path, agent: str, *extra: str, tasks: tuple[str, ...] = (TASK,)):
    ids = [arg for task in tasks for arg in ("--task-id", task)]
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                               "--agent", agent, "--user", "scripted", "--max-steps", "8", *ids, *extra])


def words(text: str) -> str:
    return " ".join(text.split())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_readme_agent_without_an_api_key_is_not_scored_and_the_run_exits_1(tmp_path, monkeypatch):
    """The README's `cmd:` line with no key (and, to stay offline, a model address where nothing listens): it used to
    end "scored, TSR 0.000" with exit 0."""
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    agent = (f"cmd:{sys.executable} {REPO}/examples/minimal_agent/agent.py --model openai/gpt-4o-mini "
             f"--api-base http://127.0.0.1:{closed_port()}/v1")
    res = run(tmp_path / "ext", agent)
    assert res.exit_code == 1, res.output
    [t] = read_trajectories(tmp_path / "ext")
    assert (t.termination.reason, t.termination.blame) == ("agent_program_error", "agent_program")
    assert "Missing credentials" in t.termination.detail  # the program's stderr tail
    said = words(res.output)
    assert f"1 of 1 simulations ended because the agent program failed (not scored); first, {TASK}#0:" in said
    assert "Missing credentials" in said and "--resume" in said
    metrics = runner.invoke(app, ["metrics", str(tmp_path / "ext"), "--json"])
    m = json.loads(metrics.stdout)
    assert m["scored_simulations"] == 0 and m["excluded"] == {"agent_program_error": 1}
    assert any("agent program failed" in n for n in m["notes"])


@pytest.mark.parametrize(("program", "mode", "expected"), [
    (BROKEN, "import_error", "No module named 'shiftbox_no_such_module'"),
    (BROKEN, "auth_error", "Incorrect API key provided"),
    (BROKEN, "raises", "the agent's own bug"),
    (BROKEN, "mid_exit", "ended mid-conversation (exit code 0)"),
    (EXTERNAL, "crash", "exit code 3"),
    (EXTERNAL, "garbage", "not JSON"),
    (EXTERNAL, "silent_exit", "ended mid-conversation"),
])
def test_an_agent_program_that_did_not_run_is_not_scored(tmp_path, program, mode, expected):
    res = run(tmp_path / mode, cmd(program, mode))
    assert res.exit_code == 1, res.output
    [t] = read_trajectories(tmp_path / mode)
    assert (t.termination.reason, t.termination.blame) == ("agent_program_error", "agent_program")
    assert expected in t.termination.detail
    assert expected in words(res.output)  # the first failure's detail is the run's last word
    [m] = [simulation_metrics(t, handwritten().tasks[2])]
    assert m.task_id == TASK and not m.scored


def test_an_agent_that_never_answers_is_not_scored(tmp_path):
    res = run(tmp_path / "silent", cmd(BROKEN, "never_writes"), "--agent-arg", "timeout=1.5")
    assert res.exit_code == 1, res.output
    [t] = read_trajectories(tmp_path / "silent")
    assert t.termination.reason == "agent_program_error" and "no reply within 1.5 s" in t.termination.detail


@pytest.mark.parametrize("mode", ["nonsense", "wrong_tool"])
def test_an_agent_that_answered_badly_is_scored(tmp_path, mode):
    res = run(tmp_path / mode, cmd(BROKEN, mode), "--max-tool-errors", "2")
    assert res.exit_code == 0, res.output
    [t] = read_trajectories(tmp_path / mode)
    assert t.termination.blame == "agent" and t.termination.reason in ("max_steps", "too_many_tool_errors")
    assert sum(m.role == "assistant" for m in t.messages) >= 1
    if mode == "wrong_tool":
        assert [c.error_kind for c in t.tool_calls][:2] == ["unknown_tool", "invalid_arguments"]
    assert simulation_metrics(t, handwritten().tasks[2]).scored


def test_the_headline_leaves_program_failures_out_and_names_them(tmp_path):
    assert run(tmp_path / "ok", cmd(BROKEN, "nonsense")).exit_code == 0
    [ran] = read_trajectories(tmp_path / "ok")
    failed = ran.model_copy(update={"simulation_id": f"{TASK}#1", "trial": 1, "termination": Termination(
        reason="agent_program_error", detail="the agent process ended mid-conversation", blame="agent_program")})
    task = handwritten().tasks[2]
    alone = aggregate([simulation_metrics(ran, task)])
    both = aggregate([simulation_metrics(t, task) for t in (ran, failed)])
    assert (both.simulations, both.scored_simulations, both.excluded) == (2, 1, {"agent_program_error": 1})
    assert both.tsr.mean == alone.tsr.mean and both.tsr.n == 1  # as if the failed simulation were not there
    [note] = [n for n in both.notes if "agent program failed" in n]
    assert "1 simulation" in note and "--resume" in note


def test_resume_runs_failed_simulations_again_once_the_agent_is_fixed(tmp_path, monkeypatch):
    flag = tmp_path / "broken-for"
    flag.write_text(f"{derive_seed(0, TASK, 0)}\n")  # only this simulation's program fails
    monkeypatch.setenv("SHIFTBOX_TEST_BROKEN_FLAG", str(flag))
    out = tmp_path / "run"
    tasks = (TASK, "hw_banking_004")
    res = run(out, cmd(BROKEN, "switch"), tasks=tasks)
    assert res.exit_code == 1, res.output
    first = {t.simulation_id: t for t in read_trajectories(out)}
    assert first[f"{TASK}#0"].termination.reason == "agent_program_error"
    assert first["hw_banking_004#0"].termination.blame == "agent"
    flag.unlink()  # the key is fixed
    resumed = run(out, cmd(BROKEN, "switch"), "--resume", tasks=tasks)
    assert resumed.exit_code == 0, resumed.output
    said = words(resumed.output)
    assert "resuming: 1 simulations already finished" in said
    assert "running 1 again that ended in an agent program or infrastructure failure" in said
    after = read_trajectories(out)
    assert sorted(t.simulation_id for t in after) == [f"{TASK}#0", "hw_banking_004#0"]  # each once
    again = {t.simulation_id: t for t in after}
    assert again[f"{TASK}#0"].termination.blame == "agent"  # scored now
    assert again["hw_banking_004#0"].model_dump() == first["hw_banking_004#0"].model_dump()  # not run again


def test_resume_runs_infrastructure_failures_again(tmp_path):
    out = tmp_path / "run"
    assert run(out, cmd(BROKEN, "nonsense")).exit_code == 0
    path = out / "trajectories.jsonl"
    [line] = path.read_text().splitlines()
    data = json.loads(line)
    data["termination"] = {"reason": "infrastructure_error", "detail": "server gone", "blame": "infrastructure"}
    path.write_text(json.dumps(data) + "\n")
    resumed = run(out, cmd(BROKEN, "nonsense"), "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "running 1 again that ended in an agent program or infrastructure failure" in words(resumed.output)
    [t] = read_trajectories(out)
    assert t.termination.blame == "agent"


def test_a_changed_credential_in_the_agent_command_is_not_a_changed_configuration(tmp_path):
    out = tmp_path / "run"
    first = run(out, cmd(BROKEN, "nonsense", "--api-key", "sk-first-key", "OPENAI_API_KEY=sk-first-env"),
                "--agent-arg", "timeout=30")
    assert first.exit_code == 0, first.output
    stored = (out / "run.json").read_text() + (out / "trajectories.jsonl").read_text()
    assert "sk-first" not in stored  # neither in run.json nor in the trajectories' agent name
    again = run(out, cmd(BROKEN, "nonsense", "--api-key", "sk-second-key", "OPENAI_API_KEY=sk-second-env"),
                "--agent-arg", "timeout=30", "--resume")
    assert again.exit_code == 0, again.output
    assert "different configuration" not in again.output
    changed = run(out, cmd(BROKEN, "wrong_tool", "--api-key", "sk-second-key"), "--resume")
    assert changed.exit_code == 2 and "agent" in words(changed.output)  # a changed program still is one


def test_the_first_line_of_the_detail_is_the_programs_error_even_after_a_long_stderr(tmp_path):
    """A long stderr (a chained traceback printed in a box, as litellm's is) used to be shown from a cut mid-line and
    its last line was the box's border: the detail's first line, the one every summary shows, now names the error."""
    program = tmp_path / "noisy_agent.py"
    program.write_text(
        "import sys\n"
        "sys.stderr.write(''.join(f'  | noise line {i} of a long traceback\\n' for i in range(100)))\n"
        "sys.stderr.write('  | ValueError: the key is missing\\n  +------------------------------------\\n')\n"
        "sys.exit(1)\n")
    res = run(tmp_path / "noisy", "cmd:" + shlex.join([sys.executable, str(program)]))
    assert res.exit_code == 1, res.output
    [t] = read_trajectories(tmp_path / "noisy")
    first, *rest = t.termination.detail.splitlines()
    assert first.endswith("stderr's last line: ValueError: the key is missing"), first
    assert rest[0] == "stderr ends:" and rest[1].lstrip().startswith("| noise line ") and rest[-1].strip().startswith("+--")
