"""Issue 34: a run on a Ray cluster that outlives it (`--ray-address`, or a Ray the caller joined) leaves one idle
worker per actor, prestarted by the raylet, and the next run's actors start in them instead of in fresh processes
(which import Ray first: most of an actor's start-up). The prestarted workers import the harness as they start (Ray's
setup hook, in the actors' runtime environment), so an actor that starts in one has it imported already. Idle Ray
workers are the processes titled `ray::IDLE`."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from shiftbox import ExecutionOptions, plan_run, run_evaluation
from tests.client.harness import HANDWRITTEN, alive, descendants

WORKERS = 2


def idle_workers() -> set[int]:
    """The idle Ray worker processes of the cluster this process started (`ray_cluster`)."""
    idle = set()
    for pid in descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::IDLE"):
                idle.add(pid)
        except OSError:  # gone meanwhile
            pass
    return idle


def idle_workers_besides(known: set[int], count: int, seconds: float = 60) -> set[int]:
    """The idle workers not in `known`, once there are `count` (a worker registers seconds after it starts) or
    `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while len(found := idle_workers() - known) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def cpu_ticks(pid: int) -> int:
    """The CPU time `pid` has used, in clock ticks (Linux: /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def settled(workers: set[int], seconds: float = 60) -> None:
    """Wait until `workers` use no CPU for a second: started, their setup hook run, waiting for an actor (a worker
    takes its title as it starts; until it waits for work, the raylet starts a fresh one for an actor instead)."""
    deadline, before = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        now = {pid: cpu_ticks(pid) for pid in sorted(workers)}
        if now == before:
            return
        before = now
        time.sleep(1)


def ray_run(out: Path) -> None:
    run_evaluation(plan_run(HANDWRITTEN, out, domain="banking", trials=1, options=ExecutionOptions(
        concurrency=2, executor="ray", workers=WORKERS, worker_cpus=0.5)))


@pytest.mark.timeout(600)
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds Ray's idle workers through /proc")
def test_a_run_on_a_lasting_cluster_prestarts_the_workers_the_next_runs_actors_start_in(tmp_path, ray_cluster):
    # the workers Ray prestarts as the cluster starts (one per CPU, without the actors' setup hook)
    started_with = idle_workers_besides(set(), WORKERS)
    ray_run(tmp_path / "first")
    prestarted = idle_workers_besides(started_with, WORKERS)
    assert len(prestarted) == WORKERS, f"idle Ray workers the first run left: {sorted(prestarted)}, want {WORKERS}"
    # they run, as they start, Ray's setup hook naming a function of the harness: they import it
    hook = f"{sys.modules['ray._private.ray_constants'].WORKER_PROCESS_SETUP_HOOK_ENV_VAR}=shiftbox.runs._ray.warm"
    for pid in prestarted:
        assert hook.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    settled(prestarted)
    ray_run(tmp_path / "second")
    # its actors started in them (and end with it: killed, they exit a moment later; unused, they would stay idle
    # for minutes), and it left as many for the run after it
    deadline = time.monotonic() + 30
    while (left := [pid for pid in prestarted if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], "the second run's actors did not take the prestarted workers"
    assert len(idle_workers_besides(started_with | prestarted, WORKERS)) == WORKERS
