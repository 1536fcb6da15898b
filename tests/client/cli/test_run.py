"""`shiftbox run`: results per simulation, concurrency-independence, resume after kill -9, errors."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.tasks import satisfied_actions, validate_tasks
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN
from tests.conftest import require_acb

runner = CliRunner()


def run_cli(out: Path, *extra: str, tasks: Path = HANDWRITTEN):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(tasks), "--out", str(out), *extra])


def canonical_set(run_dir: Path) -> dict[str, str]:
    return {t.simulation_id: t.canonical_json() for t in read_trajectories(run_dir)}


def test_run_writes_metadata_tasks_and_one_trajectory_per_simulation(tmp_path):
    res = run_cli(tmp_path / "r", "--trials", "2")
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    assert run["config"]["agent"] == "scripted:oracle" and run["simulations"] == 10
    assert (tmp_path / "r" / "tasks.json").exists()
    ids = [t.simulation_id for t in read_trajectories(tmp_path / "r")]
    assert sorted(ids) == sorted(f"hw_banking_00{i}#{k}" for i in range(1, 6) for k in range(2))
    assert "hw_banking_001#0" not in res.output, "one row per simulation only with --verbose"


def test_concurrency_does_not_change_results(tmp_path):
    assert run_cli(tmp_path / "c1", "--trials", "2", "--concurrency", "1").exit_code == 0
    assert run_cli(tmp_path / "c8", "--trials", "2", "--concurrency", "8").exit_code == 0
    assert canonical_set(tmp_path / "c1") == canonical_set(tmp_path / "c8")


def test_stdio_and_http_servers_give_the_same_results_as_in_process(tmp_path):
    assert run_cli(tmp_path / "inproc", "--task-id", "hw_banking_001").exit_code == 0
    for mode in ("stdio", "http"):
        res = run_cli(tmp_path / mode, "--task-id", "hw_banking_001", "--servers", mode)
        assert res.exit_code == 0, res.output
        assert canonical_set(tmp_path / mode) == canonical_set(tmp_path / "inproc"), mode


def test_resume_after_a_torn_write_completes_without_duplicates(tmp_path):
    assert run_cli(tmp_path / "full", "--trials", "2").exit_code == 0
    assert run_cli(tmp_path / "cut", "--trials", "2").exit_code == 0
    path = tmp_path / "cut" / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:40])   # a crash mid-write
    res = run_cli(tmp_path / "cut", "--trials", "2", "--resume")
    assert res.exit_code == 0, res.output
    assert "3 simulations already finished" in res.output
    ids = [t.simulation_id for t in read_trajectories(tmp_path / "cut")]
    assert len(ids) == len(set(ids)) == 10
    assert canonical_set(tmp_path / "cut") == canonical_set(tmp_path / "full")


def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks", str(HANDWRITTEN),
           "--out", str(out), "--trials", "60", "--concurrency", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "trajectories.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or results.read_bytes().count(b"\n") < 20):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = read_trajectories(out)
    assert 20 <= len(before) < 300, "the run was not interrupted mid-way"
    kept = {t.simulation_id: t.canonical_json() for t in before}
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    after = read_trajectories(out)
    ids = [t.simulation_id for t in after]
    assert len(ids) == len(set(ids)) == 300
    assert all(canonical_set(out)[k] == v for k, v in kept.items())


def test_ctrl_c_mid_run_says_how_far_it_got_and_how_to_finish_then_resume_finishes(tmp_path):
    """SIGINT to the process group, as Ctrl-C in a terminal sends it: a message naming the count and the exact
    resume command, exit 130 (128 + SIGINT, as shells report it), and that command completes the run."""
    out = tmp_path / "stopped"
    args = ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out), "--trials", "60",
            "--concurrency", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "shiftbox.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    results = out / "trajectories.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or results.read_bytes().count(b"\n") < 20):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    done = len(read_trajectories(out))
    assert 20 <= done < 300, "the run was not interrupted mid-way"
    resume = shlex.join(["shiftbox", *args, "--resume"])
    assert f"interrupted: {done} of 300 simulations done; finish with `{resume}`" in " ".join(stderr.split()), stderr
    assert "Traceback" not in stderr and "headline" not in stdout
    finished = subprocess.run([sys.executable, "-m", "shiftbox.cli", *shlex.split(resume)[1:]], capture_output=True,
                              text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert f"resuming: {done} simulations already finished" in finished.stderr
    ids = [t.simulation_id for t in read_trajectories(out)]
    assert len(ids) == len(set(ids)) == 300
    assert "300 scored of 300" in finished.stdout


def test_existing_run_dir_needs_resume_and_same_configuration(tmp_path):
    assert run_cli(tmp_path / "r").exit_code == 0
    res = run_cli(tmp_path / "r")
    assert res.exit_code == 2 and "--resume" in res.output
    res = run_cli(tmp_path / "r", "--resume", "--seed", "5")
    assert res.exit_code == 2 and "seed" in res.output


@pytest.mark.parametrize(("args", "message"), [
    (["--agent", "scripted:genius"], "unknown scripted agent 'genius'"),
    (["--agent", "telepathy:x"], "no kind 'telepathy' installed"),
    (["--user", "scripted:x"], "takes no argument"),
    (["--servers", "carrier-pigeon"], "--servers"),
    (["--task-id", "nope"], "task ids not in"),
])
def test_bad_options_are_usage_errors_that_name_the_problem(tmp_path, args, message):
    res = run_cli(tmp_path / "bad", *args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not (tmp_path / "bad" / "run.json").exists()


def test_missing_task_file_and_wrong_domain(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(tmp_path / "x.json"),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "does not exist" in res.output
    res = runner.invoke(app, ["run", "--domain", "echo", "--tasks", str(HANDWRITTEN), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "holds banking tasks" in res.output


def test_oracle_completes_every_valid_agentchangebench_banking_task(tmp_path):
    from shiftbox.agentchangebench import import_agentchangebench
    from shiftbox_servers.banking import import_agentchangebench as import_db

    task_file = import_agentchangebench(require_acb("banking", "tasks.json"))
    snapshot = tmp_path / "acb-snapshot"
    import_db(require_acb("banking", "db.toml"), snapshot)
    tasks_path = tmp_path / "acb-tasks.json"
    tasks_path.write_text(task_file.model_dump_json())
    # a goal without a deterministic check (a warning) doesn't stop the oracle; broken gold calls do
    flagged = {f.task_id for f in validate_tasks(task_file, snapshot) if "no deterministic check" not in f.problem}
    res = run_cli(tmp_path / "acb", "--snapshot", str(snapshot), "--concurrency", "8", tasks=tasks_path)
    assert res.exit_code == 0, res.output
    trajectories = {t.task_id: t for t in read_trajectories(tmp_path / "acb")}
    valid = [t for t in task_file.tasks if t.id not in flagged]
    assert len(valid) >= 35
    for task in valid:
        t = trajectories[task.id]
        done = satisfied_actions(task.evaluation_criteria.action_sets,
                                 [(c.name, c.arguments, c.is_error) for c in t.tool_calls])
        assert done == {a.action_id for a in task.evaluation_criteria.action_sets}, task.id
        assert t.termination.reason == "user_stop", task.id
        assert len(t.shifts) == task.user_scenario.goal_shifts.required_shifts, task.id



def test_max_retries_reaches_llm_roles_only(tmp_path):
    res = run_cli(tmp_path / "r", "--agent", "litellm:openai/fake-model", "--agent-arg", "api_base=http://127.0.0.1:9",
                  "--max-retries", "0", "--task-id", "hw_banking_001", "--max-steps", "4", "--no-preflight")
    assert res.exit_code == 1, res.output  # its only simulation failed for a reason not the agent's
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    assert run["config"]["agent_args"]["max_retries"] == "0"
    assert "max_retries" not in run["config"]["user_args"]          # the scripted user has none
    (t,) = read_trajectories(tmp_path / "r")
    # nothing listens on port 9: the LLM is unreachable, which is not the agent's fault
    assert (t.termination.reason, t.termination.blame) == ("infrastructure_error", "infrastructure")
