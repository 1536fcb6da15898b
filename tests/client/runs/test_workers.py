"""`shiftbox run --workers N`: simulations in N processes, one writer, the same results and resume as one process."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox import ExecutionOptions, RunPlanError, plan_run, replay_fixture, run_evaluation
from shiftbox.cli import app
from shiftbox.runs import default_workers, metrics_document, score_run
from shiftbox.trajectory import read_trajectories
from shiftbox_servers.kit import SnapshotError
from tests.client.harness import (
    HANDWRITTEN,
    REPO,
    alive,
    changed_snapshot,
    descendants,
    written_once,
)

GENERATED = REPO / "snapshots" / "banking" / "v1" / "tasks.json"
runner = CliRunner()




def run(out: Path, workers: int, tasks: Path = HANDWRITTEN, **options) -> Path:
    options = {"trials": 2, **options}
    run_evaluation(plan_run(tasks, out, domain="banking", options=ExecutionOptions(concurrency=4, workers=workers),
                            **options))
    return out


def test_two_workers_give_the_trajectories_and_metrics_of_one_process(tmp_path):
    one, two = run(tmp_path / "one", 1), run(tmp_path / "two", 2)
    assert written_once(one) and written_once(one) == written_once(two)
    assert metrics_document(*score_run(one)) == metrics_document(*score_run(two))
    # the server's identity and the user simulator's reach run.json from a worker too
    recorded = [json.loads((d / "run.json").read_text()) for d in (one, two)]
    assert recorded[0]["server"] == recorded[1]["server"] and recorded[1]["server"]["banking"]["version"]
    assert recorded[0]["user_simulator"] == recorded[1]["user_simulator"]


def test_resume_with_workers_runs_only_what_is_missing(tmp_path):
    reference = written_once(run(tmp_path / "ref", 1))
    partial = run(tmp_path / "partial", 2)
    lines = (partial / "trajectories.jsonl").read_bytes().splitlines(keepends=True)
    kept = lines[:3]
    # a crash mid-write: three whole lines and a torn fourth
    (partial / "trajectories.jsonl").write_bytes(b"".join(kept) + lines[3][:40])
    run(partial, 2, resume=True)
    assert written_once(partial) == reference
    after = (partial / "trajectories.jsonl").read_bytes().splitlines(keepends=True)
    assert after[:3] == kept  # what was written is never rewritten


def test_a_fixture_recorded_with_workers_replays(tmp_path):
    run(tmp_path / "run", 2, record=tmp_path / "fixture")
    result = replay_fixture(tmp_path / "fixture", tmp_path / "replayed")
    assert result.identical, (result.problems, result.failed)
    assert result.simulations == 10


def test_a_worker_that_cannot_open_its_servers_fails_the_run_as_one_process_would(tmp_path):
    changed = changed_snapshot(tmp_path)  # its manifest passes the plan; the servers refuse it
    errors = []
    for workers in (1, 2):
        with pytest.raises(SnapshotError) as caught:
            run(tmp_path / f"w{workers}", workers, snapshot=changed)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


def test_workers_and_concurrency_below_one_are_refused(tmp_path):
    with pytest.raises(RunPlanError, match="--workers"):
        ExecutionOptions(workers=0)
    result = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                                 str(tmp_path / "y"), "--workers", "0"])
    assert result.exit_code == 2 and "--workers" in result.output
    assert not (tmp_path / "y").exists()


def test_the_default_is_the_cores_this_process_may_use():
    assert default_workers() == len(os.sched_getaffinity(0))


MAIN_SCRIPT = """
import sys
from pathlib import Path

import anyio

from shiftbox import ExecutionOptions, agent_from_spec, plan_run
from shiftbox.runs import execute_run, prepare_run_dir

with open(sys.argv[1], "a") as marks:  # every process that runs this script leaves a line
    marks.write("ran\\n")


def make_agent():  # defined here: a worker can only unpickle it after running this script
    return agent_from_spec("scripted:oracle", {})


if __name__ == "__main__":
    out = Path(sys.argv[2])
    plan = plan_run(sys.argv[3], out, domain="banking", options=ExecutionOptions(concurrency=2, workers=2))
    prepare_run_dir(out, plan.metadata, plan.task_file, resume=False)
    anyio.run(lambda: execute_run(plan.config, plan.tasks, out, plan.options, finished=set(),
                                  make_agent=make_agent if sys.argv[4] == "main" else plan.make_agent,
                                  make_user=plan.make_user))
"""


@pytest.mark.parametrize("agent_from", ["plan", "main"])
def test_a_worker_runs_the_programs_main_script_again_only_when_its_job_needs_it(tmp_path, agent_from):
    """Regression (issue 34): multiprocessing ran the program's main script again in every worker (for `shiftbox
    run`, its whole CLI: most of a second per worker before its first simulation) though nothing of it was used.
    It now runs only when the job names something defined there (a `make_agent` written in the script)."""
    script, marks, out = tmp_path / "main.py", tmp_path / "marks", tmp_path / "run"
    script.write_text(MAIN_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(marks), str(out), str(HANDWRITTEN), agent_from],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    trajectories = read_trajectories(out)
    assert len(written_once(out)) == 5 and not [t for t in trajectories if t.termination.blame == "infrastructure"]
    # the run's own process, plus each of the two workers when its job names the script's make_agent
    assert marks.read_text().count("ran") == (3 if agent_from == "main" else 1)


FORK_SERVER_CHECK = """
import os, sys

from shiftbox import ExecutionOptions, plan_run

plan_run(sys.argv[1], sys.argv[2], domain="banking")
print(os.getpid(), flush=True)
sys.stdin.readline()
plan_run(sys.argv[1], sys.argv[2], domain="banking", options=ExecutionOptions(workers=2))
print("planned", flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(not Path("/proc").exists(), reason="finds the fork server through /proc")
def test_planning_a_run_on_worker_processes_starts_their_fork_server(tmp_path):
    """The fork server's imports (seconds) go on while the run is still being prepared (preflight, run directory),
    instead of after: `plan_run` starts it for the processes executor, and only for it."""
    proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER_CHECK, str(HANDWRITTEN), str(tmp_path / "run")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())

        def fork_servers() -> int:
            return sum(b"forkserver" in command for command in children(pid).values())

        planned_local = fork_servers()
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "planned"
        assert (planned_local, fork_servers()) == (0, 1)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert not (tmp_path / "run").exists()  # planning still writes nothing


def children(parent: int) -> dict[int, bytes]:
    """The processes whose parent is `parent`, with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat, command = (entry / "stat").read_text(), (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found[int(entry.name)] = command
    return found


def worker_pids(run: int) -> list[int]:
    """The run's worker processes: the children of the multiprocessing fork server the run started."""
    servers = [pid for pid, command in children(run).items() if b"forkserver" in command]
    return sorted(pid for server in servers for pid in children(server))


# for a test that runs a run in a process of its own, kills one of its processes and waits on each step with a
# deadline of its own: those deadlines add up to more than the 120 s each test has by default (minutes when the
# machine is loaded), which would end the test halfway through a step and hide which one was late
OWN_DEADLINES = pytest.mark.timeout(600)


def start_run(out: Path, *options: str, concurrency: int = 4) -> tuple[subprocess.Popen, list[str], list[int]]:
    """`shiftbox run --workers 2 --servers stdio` in its own process, once both workers have started their servers
    and 60 of the 300 simulations are written (by then each worker has long been taking work): the process, its
    command and the two workers' pids. Its output goes to files beside `out` (`run_output`): no process of the run
    ever blocks on a pipe nobody reads, and a run killed here is not waited for past its own exit."""
    command = [sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks", str(GENERATED),
               "--out", str(out), "--workers", "2", "--concurrency", str(concurrency), "--trials", "2", "--servers", "stdio", *options]
    with (out.parent / "stdout").open("w") as stdout, (out.parent / "stderr").open("w") as stderr:
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline:
        workers = worker_pids(proc.pid)
        if written(out) >= 60 and len(workers) == 2 and all(children(pid) for pid in workers):
            break
        time.sleep(0.02)
    else:
        proc.kill()
        raise AssertionError(f"the run did not get going in 120 s: workers {workers}, {run_output(proc, out, 60)}")
    return proc, command, workers


def run_output(proc: subprocess.Popen, out: Path, timeout: float) -> tuple[str, str]:
    """The stdout and stderr of a run `start_run` started, once it has ended (within `timeout` seconds)."""
    proc.wait(timeout=timeout)
    return (out.parent / "stdout").read_text(), (out.parent / "stderr").read_text()


def written(out: Path) -> int:
    """How many trajectories the run writing to `out` has written so far."""
    path = out / "trajectories.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def one_process_run(tmp_path: Path, command: list[str]) -> dict[str, str]:
    """The trajectories the same run gives in this process (`command`'s tasks, two trials), as `written_once`."""
    reference = tmp_path / "reference"
    runner.invoke(app, command[3:8] + ["--out", str(reference), "--trials", "2"])
    return written_once(reference)


_SYSCALLS = {"x86_64": {"read": 0, "write": 1}, "aarch64": {"read": 63, "write": 64}}.get(os.uname().machine)


def blocked_on_pipe(pid: int, call: str, other: int) -> bool:
    """Whether a thread of `pid` is blocked in `call` ("read" or "write") on a pipe that `other` holds an end of."""
    try:
        pipes = {link for fd in Path(f"/proc/{other}/fd").iterdir() if (link := os.readlink(fd)).startswith("pipe:")}
    except OSError:
        return False
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            number, fd, *_ = (task / "syscall").read_text().split()
            if number == str(_SYSCALLS[call]) and os.readlink(f"/proc/{pid}/fd/{int(fd, 16)}") in pipes:
                return True
        except (OSError, ValueError):
            continue
    return False


def stopped(pid: int) -> bool:
    """Whether every thread of the process is stopped (SIGSTOP has taken effect: nothing of it runs any more)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
    return bool(states) and all(state in "tT" for state in states)


def in_flight_on(proc: subprocess.Popen, out: Path, worker: int) -> None:
    """Return once the run surely has simulations in flight on `worker`, which is stopped (SIGSTOP): the run has
    written 10 more trajectories (each of the worker's slots has then written its last one and handed the worker
    another, which it cannot answer), or it waits reading a result the worker stopped in the middle of sending.
    Killed at once, a worker may have none: each of its slots waiting for its trajectory's fsync, or its results
    sent whole."""
    deadline = time.monotonic() + 120
    while not stopped(worker):  # else a message it is sending may yet end whole
        assert time.monotonic() < deadline, "the worker did not stop"
        time.sleep(0.01)
    so_far = written(out)
    while written(out) < so_far + 10 and not blocked_on_pipe(proc.pid, "read", worker):
        assert time.monotonic() < deadline and proc.poll() is None, "the run neither went on nor waited on the worker"
        time.sleep(0.02)


@OWN_DEADLINES
@pytest.mark.skipif(not Path("/proc").exists() or _SYSCALLS is None, reason="reads /proc/<pid>/task/*/syscall")
@pytest.mark.parametrize("retry_infra", [0, 1])
def test_a_killed_worker_fails_only_its_simulations_in_flight_retried_under_retry_infra(tmp_path, retry_infra):
    """Its in-flight simulations (`in_flight_on`) are infrastructure errors naming the worker (not scored, never
    half-written); with --retry-infra they run again, from the start, on a fresh worker: the run equals one process's."""
    out = tmp_path / "run"
    proc, command, workers = start_run(out, "--retry-infra", str(retry_infra))
    try:
        os.kill(workers[0], signal.SIGSTOP)
        try:
            in_flight_on(proc, out, workers[0])
        finally:  # a stopped worker would outlive its run
            os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = run_output(proc, out, 240)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    expected, got = one_process_run(tmp_path, command), written_once(out)  # canonical: nothing written twice
    assert len(expected) == len(json.loads(GENERATED.read_text())["tasks"]) * 2 and got.keys() == expected.keys()
    got_parsed = {sim: json.loads(line) for sim, line in got.items()}
    lost = {sim for sim, trajectory in got_parsed.items() if trajectory["termination"]["blame"] == "infrastructure"}
    if retry_infra:
        assert not lost and got == expected
        return
    assert 1 <= len(lost) <= 2  # the killed worker had --concurrency 4 / 2 workers = 2 simulations at most
    for sim in lost:
        trajectory = got_parsed[sim]
        assert trajectory["termination"]["reason"] == "infrastructure_error" and not trajectory["messages"]
        assert "worker process 0 ended unexpectedly (exit code -9) while running " + sim == \
            trajectory["termination"]["detail"]
    assert {sim: t for sim, t in got.items() if sim not in lost} == \
        {sim: t for sim, t in expected.items() if sim not in lost}
    assert f"{len(lost)} × infrastructure: infrastructure_error (first: {min(lost)}: worker process 0 ended " \
        "unexpectedly" in stdout  # the run's end says what was not scored and why




def stopped_with_a_worker_sending(proc: subprocess.Popen, out: Path, workers: list[int]) -> int:
    """Stop the run (SIGSTOP) until one of its workers blocks in the middle of sending it a result; return that
    worker, the run left stopped. A stopped run's results pile up in its workers' pipes until one no longer fits (a
    pipe holds 64 kB, a result 3 to 43 kB), but whether one does depends on what each worker has in flight at the
    stop: which simulations, and how many (none for a slot whose trajectory waits for its fsync). So when no worker
    blocks, the run goes on until 10 more trajectories are written and is stopped again, while it has at least half
    of its 300 simulations left."""
    while True:
        os.kill(proc.pid, signal.SIGSTOP)
        next_try = time.monotonic() + 5  # no bound on the test: too short, it only costs another try
        while time.monotonic() < next_try:
            # once the run has stopped reading: a worker blocked before may yet have sent its result whole
            blocked = [pid for pid in workers if stopped(proc.pid) and blocked_on_pipe(pid, "write", proc.pid)]
            if blocked:
                return blocked[0]
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGCONT)
        so_far = written(out)
        assert so_far < 150, f"no worker blocked sending a result while the run wrote 60 to {so_far} trajectories"
        deadline = time.monotonic() + 120
        while written(out) < so_far + 10:
            assert time.monotonic() < deadline and proc.poll() is None, "the run stopped writing trajectories"
            time.sleep(0.02)


@OWN_DEADLINES
@pytest.mark.skipif(not Path("/proc").exists() or _SYSCALLS is None, reason="reads /proc/<pid>/task/*/syscall")
def test_a_worker_killed_while_sending_a_result_stalls_neither_the_others_nor_the_run(tmp_path):
    """Regression (CI hang): the run stopped (SIGSTOP) so results pile up until a worker blocks in the middle of
    sending one, then that worker is killed. Its half-sent result must not block the other workers' results or the
    run's reading of them: with --retry-infra the run finishes and equals one process's. Each worker has up to 4
    simulations in flight (`stopped_with_a_worker_sending`)."""
    out = tmp_path / "run"
    proc, command, workers = start_run(out, "--retry-infra", "1", concurrency=8)
    try:
        os.kill(stopped_with_a_worker_sending(proc, out, workers), signal.SIGKILL)
        os.kill(proc.pid, signal.SIGCONT)
        _, stderr = run_output(proc, out, 240)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert written_once(out) == one_process_run(tmp_path, command)


@OWN_DEADLINES
@pytest.mark.skipif(not Path("/proc").exists() or _SYSCALLS is None, reason="reads /proc/<pid>/task/*/syscall")
def test_a_worker_killed_as_it_starts_is_a_lost_worker_not_a_silent_exit(tmp_path):
    """Regression (issue 30, item 7): a worker killed while the run was handing it its job (60 tasks: more than a
    pipe holds, so the run blocks writing it; the worker is stopped there to make it certain) broke that pipe; the
    BrokenPipeError reached the CLI framework, which exits 1 saying nothing. The worker is lost like any other:
    the simulations handed to it are infrastructure errors naming it, the run finishes, its end says so, and no
    worker outlives it."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks", str(GENERATED),
               "--limit", "60", "--out", str(out), "--workers", "2", "--concurrency", "4", "--servers", "stdio"]
    with (tmp_path / "stdout").open("w") as stdout, (tmp_path / "stderr").open("w") as stderr:
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr)  # files: the run never blocks on them
    seen: set[int] = set()
    try:
        # every worker is stopped as it appears (on a loaded machine the first may have read its whole job before
        # it could be stopped): the one the run blocks writing to is killed, the others go on
        stopped: list[int] = []
        target, first_seen = None, None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and target is None:
            for pid in worker_pids(proc.pid):
                if pid not in stopped:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
                    first_seen = first_seen or time.monotonic()
            target = next((pid for pid in stopped if blocked_on_pipe(proc.pid, "write", pid)), None)
            if target is None and first_seen is not None and time.monotonic() - first_seen > 10:
                target = stopped[0]  # each worker read its whole job before it was stopped: a race this test lost
            time.sleep(0.005)
        assert stopped, "no worker started within 60 s"
        assert target is not None, "no worker to kill"
        as_it_started = blocked_on_pipe(proc.pid, "write", target)
        os.kill(target, signal.SIGKILL)
        for pid in stopped:
            if pid != target:
                os.kill(pid, signal.SIGCONT)
        workers = [target]
        while proc.poll() is None and time.monotonic() < deadline + 120:
            seen |= {pid for pid in descendants(proc.pid) if pid != workers[0]}
            time.sleep(0.1)
        proc.wait(timeout=1)
    finally:
        proc.kill()
        proc.wait()
    stdout, stderr = (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()
    assert proc.returncode == 0, (stdout, stderr)
    got = {sim: json.loads(line) for sim, line in written_once(out).items()}
    assert len(got) == 60
    lost = sorted(sim for sim, trajectory in got.items() if trajectory["termination"]["blame"] == "infrastructure")
    # what was handed to the killed worker: --concurrency 4 / 2 workers at most; killed as it started (the run blocked
    # handing it its job, the case this test is for), it had at least one
    assert (1 if as_it_started else 0) <= len(lost) <= 2, lost
    how = r"was killed as it started \(.*\) before it ran " if as_it_started else \
        r"ended unexpectedly \(exit code -9\) while running "
    for sim in lost:
        detail = got[sim]["termination"]["detail"]
        assert re.fullmatch(r"worker process \d " + how + re.escape(sim), detail), detail
    if lost:
        assert re.search(rf"{len(lost)} × infrastructure: infrastructure_error \(first: {re.escape(lost[0])}: worker "
                         r"process \d (was killed as it started|ended unexpectedly)", " ".join(stdout.split()))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(pid) for pid in seen):
        time.sleep(0.05)
    assert seen and not [pid for pid in seen if alive(pid)], "a process of the run outlived it"


@OWN_DEADLINES
@pytest.mark.skipif(not Path("/proc").exists(), reason="finds the worker processes through /proc")
def test_killing_the_run_ends_its_workers_and_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    proc, command, workers = start_run(out)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 60  # each worker sees its run gone within _POLL_S, when it gets the CPU
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers), "a worker outlived its run"
    partial = written_once(out)  # nothing written twice, a torn last line at most
    resumed = runner.invoke(app, command[3:] + ["--resume"])
    assert resumed.exit_code == 0, resumed.output
    finished = written_once(out)
    assert len(finished) == len(json.loads(GENERATED.read_text())["tasks"]) * 2
    assert all(finished[sim] == trajectory for sim, trajectory in partial.items())

