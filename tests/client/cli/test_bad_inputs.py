"""Every bad input gets an error naming the problem and the fix (exit 2, no traceback), and nothing already
written is lost or left in the way of the corrected command.

Output paths that cannot be written (a file where a directory must be, a directory where a file must be), a
snapshot that is not one (refused before the run directory is written), a number of simulations no run can hold,
a run directory whose tasks.json was lost (restored by --resume) and a task "file" that is a directory.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.harness import HANDWRITTEN, REPO

runner = CliRunner()
FIXTURE = REPO / "fixtures" / "banking-litellm"


def _refused(args: list[str], *parts: str, exit_code: int = 2) -> str:
    """The command exits `exit_code` with a message holding every one of `parts`, and no traceback."""
    res = runner.invoke(app, args)
    assert not (res.exception and not isinstance(res.exception, SystemExit)), repr(res.exception)
    message = " ".join(res.output.split())
    assert res.exit_code == exit_code, (res.exit_code, message[-600:])
    assert "Traceback" not in res.output
    assert all(part in message for part in parts), message[-600:]
    return message


def _run(out: Path, *extra: str, tasks: Path = HANDWRITTEN) -> list[str]:
    return ["run", "--domain", "banking", "--tasks", str(tasks), "--out", str(out), *extra]


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


@pytest.fixture
def a_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "ok"
    assert runner.invoke(app, _run(out, "--trials", "2")).exit_code == 0
    return out


# (the command writing to `path`, the option naming it) for a path that must be a directory
WRITES_A_DIRECTORY = {
    "run --out": lambda path: (_run(path, "--limit", "1"), "--out"),
    "run --record": lambda path: (_run(path.parent.parent / "rec-run", "--limit", "1", "--record", str(path)),
                                  "--record"),
    "replay --out": lambda path: (["replay", str(FIXTURE), "--out", str(path)], "--out"),
    "snapshots build --out": lambda path: (["snapshots", "build", "echo", "--out", str(path)], "--out"),
    "demo --out": lambda path: (["demo", "--out", str(path)], "--out"),
}
# (the command writing to `path`, the option naming it) for a path that must be a file
WRITES_A_FILE = {
    "tasks generate --out": lambda path: (["tasks", "generate", "banking", "--n", "2", "--out", str(path)], "--out"),
    "tasks generate-cross --out": lambda path: (["tasks", "generate-cross", "banking,retail", "--per-pair", "1",
                                                 "--out", str(path)], "--out"),
    "report --html": lambda path: (["report", str(FIXTURE), "--html", str(path)], "--html"),
    "compare --html": lambda path: (["compare", str(FIXTURE), str(FIXTURE), "--html", str(path)], "--html"),
}


@pytest.mark.parametrize("case", sorted(WRITES_A_DIRECTORY))
def test_a_directory_to_write_that_is_a_file_is_named(case, a_file):
    args, option = WRITES_A_DIRECTORY[case](a_file)
    _refused(args, option, str(a_file), "is a file")


@pytest.mark.parametrize("case", sorted(WRITES_A_DIRECTORY | WRITES_A_FILE))
def test_a_path_under_a_file_is_named(case, a_file):
    """A path whose parent is a file cannot be created: the message names that file."""
    args, option = (WRITES_A_DIRECTORY | WRITES_A_FILE)[case](a_file / "sub" / "x.json")
    _refused(args, option, f"{a_file} is a file, not a directory")


@pytest.mark.parametrize("case", sorted(WRITES_A_FILE))
def test_a_file_to_write_that_is_a_directory_is_named(case, tmp_path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    args, option = WRITES_A_FILE[case](folder)
    _refused(args, option, str(folder), "is a directory")


SNAPSHOTS = {
    "missing": lambda tmp: tmp / "no-such-snapshot",
    "empty folder": lambda tmp: (tmp / "empty").mkdir() or tmp / "empty",
    "a file": lambda tmp: (tmp / "f").write_text("x") and tmp / "f",
    "another domain's": lambda tmp: REPO / "snapshots" / "retail" / "v1",
}


@pytest.mark.parametrize("case", sorted(SNAPSHOTS))
def test_a_bad_snapshot_is_refused_before_the_run_directory_is_written(case, tmp_path):
    """It was checked once the run had started: run.json was written first, so the corrected command was refused
    ("already holds a run"), and so was its --resume ("snapshot changed")."""
    snapshot, out = SNAPSHOTS[case](tmp_path), tmp_path / "run"
    _refused(_run(out, "--limit", "1", "--snapshot", str(snapshot)), str(snapshot), "--snapshot")
    assert not out.exists()
    assert runner.invoke(app, _run(out, "--limit", "1")).exit_code == 0


def test_more_simulations_than_a_run_holds_are_refused_at_once(tmp_path):
    """--trials 10**20 made a list of every (task, trial) to run: memory grew until the process was killed."""
    started = time.monotonic()
    _refused(_run(tmp_path / "run", "--trials", str(10**20)), "--trials", "1,000,000")
    assert time.monotonic() - started < 30 and not (tmp_path / "run").exists()


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_resume_restores_a_lost_tasks_json(damage, a_run, tmp_path):
    """tasks.json is the task file as run (its digest is in run.json): --resume writes it again, so the run can be
    scored; it left it lost, and metrics then said the folder was no run directory."""
    run = tmp_path / "run"
    shutil.copytree(a_run, run)
    if damage == "deleted":
        (run / "tasks.json").unlink()
    else:
        (run / "tasks.json").write_text("{")
    res = runner.invoke(app, _run(run, "--trials", "2", "--resume"))
    assert res.exit_code == 0, res.output
    assert (run / "tasks.json").read_bytes() == (a_run / "tasks.json").read_bytes()
    assert runner.invoke(app, ["metrics", str(run), "--json"]).exit_code == 0


def test_resume_names_a_tasks_json_that_is_a_directory(a_run, tmp_path):
    """A folder where the run's tasks.json belongs cannot be written over: named as a directory, with what to do
    (it said the write failed and to free space on the disk)."""
    run = tmp_path / "run"
    shutil.copytree(a_run, run)
    (run / "tasks.json").unlink()
    (run / "tasks.json").mkdir()
    message = _refused(_run(run, "--trials", "2", "--resume"), str(run / "tasks.json"), "is a directory")
    assert "space" not in message

def test_a_task_file_that_is_a_directory_is_named_as_one(tmp_path):
    """It said the directory "does not exist"."""
    _refused(_run(tmp_path / "run", tasks=tmp_path), f"task file {tmp_path} is a directory")


def test_a_trajectories_file_that_is_a_directory_is_named(a_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(a_run, run)
    (run / "trajectories.jsonl").unlink()
    (run / "trajectories.jsonl").mkdir()
    _refused(["metrics", str(run)], str(run / "trajectories.jsonl"), "is a directory")
    _refused(_run(run, "--trials", "2", "--resume"), str(run / "trajectories.jsonl"), "is a directory")
    assert json.loads((run / "run.json").read_text())["simulations"] == 10


def test_a_simulation_written_twice_is_refused_not_scored_twice(a_run, tmp_path):
    """A run writes each simulation once (a rerun drops the failed line first): a line repeated in
    trajectories.jsonl (two files joined, a copy appended) was scored as one more simulation."""
    run = tmp_path / "run"
    shutil.copytree(a_run, run)
    lines = (run / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (run / "trajectories.jsonl").write_text("".join(lines + lines[1:2]))
    simulation = json.loads(lines[1])["simulation_id"]
    where = f"line {len(lines) + 1}"
    _refused(["metrics", str(run)], str(run / "trajectories.jsonl"), where, simulation, "line 2")
    _refused(_run(run, "--trials", "2", "--resume"), where, simulation, "line 2")

def _tasks_with(tmp_path: Path, change) -> Path:
    """The hand-written task file with `change` applied to its JSON."""
    raw = json.loads(HANDWRITTEN.read_text())
    change(raw)
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(raw))
    return path


def test_a_task_file_without_tasks_is_refused(tmp_path):
    """It ran nothing and exited 0, leaving a run directory of 0 simulations."""
    tasks = _tasks_with(tmp_path, lambda raw: raw.update(tasks=[]))
    _refused(_run(tmp_path / "run", tasks=tasks), str(tasks), "holds no tasks")
    assert not (tmp_path / "run").exists()


def test_task_ids_used_twice_are_refused(tmp_path):
    """Both tasks ran as the same simulation (`hw_banking_001#0` written twice), and both were scored."""
    tasks = _tasks_with(tmp_path, lambda raw: raw["tasks"].append(raw["tasks"][0]))
    _refused(_run(tmp_path / "run", tasks=tasks), str(tasks), "hw_banking_001", "shiftbox tasks validate")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("threshold", ["-3", "7"])
@pytest.mark.parametrize("command", ["metrics", "compare"])
def test_a_success_threshold_outside_0_to_1_is_refused(command, threshold, a_run):
    """TSR is a share: --threshold 7 silently made every simulation a failure, -3 every one a success."""
    runs = [str(a_run)] * (2 if command == "compare" else 1)
    bound = "greater than or equal to 0" if threshold == "-3" else "less than or equal to 1"
    _refused([command, *runs, "--threshold", threshold], "Invalid value for '--threshold'", bound)


@pytest.mark.parametrize("flag", ["--agent-arg", "--user-arg"])
def test_an_option_without_a_value_names_its_flag_and_the_form(flag, tmp_path):
    _refused(_run(tmp_path / "run", flag, "temperature"), f"{flag} 'temperature' is not KEY=VALUE",
             f"{flag} temperature=0")


def test_a_byte_order_mark_before_the_json_is_read_past(tmp_path):
    """Editors on Windows write one; it was refused as "not JSON" with no fix."""
    tasks = tmp_path / "tasks.json"
    tasks.write_bytes(b"\xef\xbb\xbf" + HANDWRITTEN.read_bytes())
    res = runner.invoke(app, _run(tmp_path / "run", "--limit", "1", tasks=tasks))
    assert res.exit_code == 0, res.output


PORTED = {
    "serve": ["serve", "--domain", "banking"],
    "env-server": ["env-server", "--tasks", str(HANDWRITTEN)],
    "fake-llm": ["fake-llm"],
    "serve-assessor": ["serve-assessor", "--tasks", str(HANDWRITTEN)],
}


@pytest.mark.parametrize("port", ["99999", "-5"])
@pytest.mark.parametrize("command", sorted(PORTED))
def test_a_port_outside_0_to_65535_is_refused(command, port):
    """serve and env-server ended in a traceback (OverflowError from bind); fake-llm served on 99999 - 65536."""
    bound = "greater than or equal to 0" if port == "-5" else "less than or equal to 65535"
    _refused([*PORTED[command], "--port", port], "Invalid value for '--port'", bound)


def test_serve_names_an_out_that_is_a_file(a_file):
    """It printed the system's `[Errno 17] File exists: …`."""
    _refused(["serve", "--domain", "banking", "--transport", "stdio", "--out", str(a_file)], "--out", str(a_file),
             "is a file, not a directory")


def test_resume_without_run_json_says_how_to_go_on(a_run, tmp_path):
    """It said only "nothing to resume"; the trajectories are still there and are kept."""
    run = tmp_path / "run"
    shutil.copytree(a_run, run)
    (run / "run.json").unlink()
    _refused(_run(run, "--trials", "2", "--resume"), f"{run} is not a shiftbox run directory (no run.json)",
             "restore its run.json", "another --out")
    assert (run / "trajectories.jsonl").read_bytes() == (a_run / "trajectories.jsonl").read_bytes()


def test_an_out_refused_as_the_run_starts_shows_no_empty_progress_bar(a_run):
    """The error came under a bar of 0/? simulations that never ran: one line is all there is to say."""
    message = _refused(_run(a_run), f"{a_run} already holds a run", "--resume")
    assert message.startswith("error:") and "simulations" not in message


@pytest.mark.parametrize("args", [["generate", "banking", "--n", str(10**11)],
                                  ["generate-cross", "banking,retail", "--per-pair", str(10**11)]],
                         ids=["generate --n", "generate-cross --per-pair"])
def test_more_tasks_than_a_task_set_holds_are_refused_at_once(args, tmp_path):
    """--n 10**11 planned every task's goals in memory first: it ran until killed."""
    started = time.monotonic()
    _refused(["tasks", *args, "--out", str(tmp_path / "t.json")], "at most 100,000")
    assert time.monotonic() - started < 30 and not (tmp_path / "t.json").exists()


def test_an_empty_reference_task_list_says_it_holds_no_tasks(tmp_path):
    """It said "cannot tell the domain …; pass the domain explicitly", to a command given --domain."""
    tasks = tmp_path / "tasks.json"
    tasks.write_text("[]")
    _refused(_run(tmp_path / "run", tasks=tasks), f"{tasks}: holds no tasks")
    _refused(["tasks", "validate", str(tasks)], f"{tasks}: holds no tasks")


@pytest.fixture
def mmtb_tasks(tmp_path: Path) -> tuple[Path, Path]:
    """A small mmtb task file and its snapshot (`tasks import-mmtb`): a domain whose dependency graph is not declared."""
    from tests.servers.mmtb.mmtb_file import write_mmtb_file

    tasks, snapshot = tmp_path / "mmtb-tasks.json", tmp_path / "mmtb-snap"
    res = runner.invoke(app, ["tasks", "import-mmtb", str(write_mmtb_file(tmp_path / "mmtb.jsonl")),
                              "--snapshot", str(snapshot), "--out", str(tasks)])
    assert res.exit_code == 0, res.output
    return tasks, snapshot


def test_dependency_graph_on_a_domain_without_one_is_refused_before_the_run_directory_is_written(mmtb_tasks, tmp_path):
    """It crashed with a traceback once run.json, tasks.json and trajectories.jsonl were written, so the corrected
    command was then refused ("already holds a run")."""
    tasks, snapshot = mmtb_tasks
    out = tmp_path / "run"
    args = ["run", "--domain", "mmtb", "--tasks", str(tasks), "--snapshot", str(snapshot), "--out", str(out)]
    _refused([*args, "--dependency-graph"], "mmtb domain declares no dependency graph", "--dependency-graph")
    assert not out.exists()
    assert runner.invoke(app, args).exit_code == 0


def test_a_ray_run_leaves_a_snapshot_the_driver_lacks_to_the_nodes(tmp_path):
    """A Ray driver may run off the cluster, without snapshots (docs/cluster.md): only the nodes need them, and the
    Ray preflight checks them there. A snapshot the driver can read is still checked for its domain."""
    from shiftbox.errors import RunPlanError
    from shiftbox.runs import ExecutionOptions, plan_run

    ray = ExecutionOptions(executor="ray", workers=2)
    plan = plan_run(HANDWRITTEN, tmp_path / "run", domain="banking", options=ray, snapshot=tmp_path / "on-the-nodes")
    assert plan.config.snapshot == str(tmp_path / "on-the-nodes")
    with pytest.raises(RunPlanError, match="retail, not banking"):
        plan_run(HANDWRITTEN, tmp_path / "run", domain="banking", options=ray,
                 snapshot=REPO / "snapshots" / "retail" / "v1")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("case", ["another domain's snapshot", "dependency graph on mmtb"])
def test_serve_refuses_a_bad_snapshot_or_graph_mode_before_writing_run_json(case, mmtb_tasks, tmp_path):
    """serve wrote run.json before the server refused them, so the corrected command was refused as a changed
    configuration."""
    out = tmp_path / "sessions"
    if case == "another domain's snapshot":
        args = ["serve", "--domain", "banking", "--transport", "stdio", "--out", str(out)]
        _refused([*args, "--snapshot", str(REPO / "snapshots" / "retail" / "v1")], "--snapshot", "retail, not banking")
    else:
        args = ["serve", "--domain", "mmtb", "--transport", "stdio", "--snapshot", str(mmtb_tasks[1]),
                "--out", str(out)]
        _refused([*args, "--dependency-graph"], "mmtb domain declares no dependency graph")
    assert not (out / "run.json").exists()
