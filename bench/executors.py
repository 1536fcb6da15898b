"""`make bench` section: simulations per second of the three executors (`--executor local|processes|ray`) at
1, 2 and 4 workers on this machine, for a scripted workload and the LLM fake-server workload, with the share of
a Ray run's wall time that is Ray's own.

    uv run python bench/executors.py

Every row is one `plan_run(..., options=ExecutionOptions(executor=, workers=))` + `run_evaluation_async` (what `shiftbox run` does), into
a fresh run directory. Rows of one workload run one after the other: local, then processes and ray at the same
worker count side by side (1, 2, 4), so the pair shares the machine's state. One local Ray cluster is started
once (`ray.init`, 4 CPUs so 4 one-CPU actors fit on 2 cores), timed on its own, reused by every ray row (a run
leaves a cluster it did not start running) and shut down at the end. Before any timing, each workload runs
once on processes and once on ray (the fork server that imports the harness and litellm, Ray's first actors).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

# bench/ is on sys.path: this file runs as a script, or from run.py
from http_load import cpu_seconds
from llm_throughput import (
    KEY_ENV,
    LLM_CALLS_PER_SIM,
    SPEC,
    ScriptFailure,
    bench_tasks,
    fake_server_process,
    script_failure,
)

from shiftbox.cluster import local_ray_cluster
from shiftbox.runs import ExecutionOptions, RunResult, plan_run, run_evaluation_async
from shiftbox_servers.kit import get_domain

CORES = os.cpu_count() or 1
CONCURRENCY = 8  # the whole run's, shared between the workers as `shiftbox run --concurrency` is
WORKER_COUNTS = (1, 2, 4)
# Ray's own processes that take a title (setproctitle) like the actors' processes do
RAY_OWN_TITLES = (b"ray::IDLE", b"ray::DashboardAgent", b"ray::RuntimeEnvAgent")
RAY_CPUS = 4  # so the 4-worker rows get their 4 actors on this machine
SCRIPTED_TRIALS = 4  # x 150 generated banking tasks: about 6 s at one worker here
LLM_TRIALS = 14  # x 10 customers: about 6 s at one worker here


@dataclass(frozen=True)
class Workload:
    """One kind of run the executors are compared on: its tasks, roles and the check its trajectories must pass."""

    label: str
    tasks: Any  # a task file or its path, as plan_run takes it
    trials: int
    roles: dict[str, Any]
    check: Callable[[RunResult, int], str | None]  # what is wrong with a finished run (None: nothing)
    server_pid: int | None = None  # the fake model's process, whose CPU the rows report


def scripted_problems(result: RunResult, expected: int) -> str | None:
    """The scripted oracle run must finish every simulation, none ended by the user simulator or infrastructure."""
    if len(result.trajectories) != expected or result.not_the_agents_fault:
        return (f"{len(result.trajectories)} of {expected} simulations written, "
                f"{len(result.not_the_agents_fault)} not ended by the agent")
    return None


def scripted_workload() -> Workload:
    tasks = get_domain("banking").default_snapshot_dir() / "tasks.json"
    return Workload("scripted oracle + scripted user, banking generated tasks, inproc servers", tasks,
                    SCRIPTED_TRIALS, {"agent": "scripted:oracle", "user": "scripted"}, scripted_problems)


def llm_workload(base_url: str, server_pid: int) -> Workload:
    """bench/llm_throughput.py's run: LLM agent and user on the fast path against its fake server."""
    options = {"api_base": base_url, "api_key_env": KEY_ENV, "max_retries": "0"}
    return Workload("LLM agent + LLM user, fast path (fake server), scripted conversation", bench_tasks(),
                    LLM_TRIALS, {"agent": SPEC, "user": SPEC, "agent_args": options, "user_args": options},
                    lambda result, expected: script_failure(result.trajectories, expected), server_pid)


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        found += (kids := children.get(todo.pop(), []))
        todo += kids
    return found


def ray_own_cpu_s() -> dict[int, float]:
    """CPU time so far of each of Ray's own processes that this one started: GCS, raylet, monitors, its agents
    and idle pool workers; not the processes holding actors (they run the simulations)."""
    own = {}
    for pid in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            title = argv.partition(b"\0")[0]
            if (b"/site-packages/ray/" in argv and b"default_worker.py" not in argv) or title in RAY_OWN_TITLES:
                own[pid] = cpu_seconds(pid)
    return own


@contextlib.contextmanager
def timed_local_ray_cluster() -> Iterator[float]:
    """One local Ray cluster for every ray row (started as a run starts one); yields its start-up time in s."""
    start = time.perf_counter()
    with local_ray_cluster(num_cpus=RAY_CPUS):
        yield time.perf_counter() - start


@dataclass(frozen=True)
class Measured:
    """One run's figures."""

    simulations: int
    seconds: float
    first_result_s: float  # from the run's start to its first trajectory written: start-up, mostly
    driver_cpu_s: float
    ray_own_cpu_s: float
    server_cpu_s: float  # the fake model's (0 without one)


async def measure(workload: Workload, executor: str, workers: int, out: Path, trials: int | None = None) -> Measured:
    """One run of the workload on `executor` with `workers`, timed around `run_evaluation_async`."""
    trials = trials or workload.trials
    plan = plan_run(workload.tasks, out, trials=trials, options=ExecutionOptions(
        concurrency=CONCURRENCY, executor=executor, workers=workers), **workload.roles)
    ray_before = ray_own_cpu_s()
    server_cpu = (lambda: cpu_seconds(workload.server_pid)) if workload.server_pid else (lambda: 0.0)
    server_before = server_cpu()
    first: list[float] = []
    start, cpu_start = time.perf_counter(), time.process_time()
    result = await run_evaluation_async(plan, on_done=lambda _: first or first.append(time.perf_counter() - start))
    seconds, driver_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    problem = workload.check(result, len(plan.tasks) * trials)
    if problem:
        raise ScriptFailure(f"{workload.label}, {executor} with {workers} workers: {problem}")
    # per process: the pool's processes come and go; one alive at the end and not at the start counts from 0
    ray_cpu = sum(cpu - ray_before.get(pid, 0.0) for pid, cpu in ray_own_cpu_s().items())
    return Measured(len(result.trajectories), seconds, first[0], driver_cpu, ray_cpu, server_cpu() - server_before)


def rows_of(workload: Workload, measured: dict[tuple[str, int], Measured]) -> list[dict]:
    """The report's rows: sims/s, the ratio to local and, for ray, the share of its wall time over processes' at
    the same worker count."""
    local = measured["local", 1]
    rows = []
    for (executor, workers), m in measured.items():
        row: dict[str, Any] = {
            "bench": f"executors, {workload.label}, concurrency {CONCURRENCY}: {executor}, {workers} "
                     f"worker{'s' if workers > 1 else ''}",
            "simulations": m.simulations, "seconds": round(m.seconds, 2),
            "sims_per_s": round(m.simulations / m.seconds, 1),
            "x_local": round(local.seconds / m.seconds, 2),
            "first_result_s": round(m.first_result_s, 2),
            "sims_per_s_after_first_result": round((m.simulations - 1) / (m.seconds - m.first_result_s), 1),
            "driver_cpu_ms_per_sim": round(1000 * m.driver_cpu_s / m.simulations, 2)}
        if executor == "ray":
            row["ray_overhead_pct"] = round(100 * (m.seconds - measured["processes", workers].seconds) / m.seconds, 1)
        row["ray_own_cpu_pct_of_machine"] = round(100 * m.ray_own_cpu_s / (m.seconds * CORES), 1)
        if workload.server_pid:
            row["fake_server_cpu_ms_per_completion"] = round(
                1000 * m.server_cpu_s / (m.simulations * LLM_CALLS_PER_SIM), 2)
        rows.append(row)
    return rows


RUN_ORDER = (("local", 1), *[(executor, workers) for workers in WORKER_COUNTS for executor in ("processes", "ray")])
"""Local, then processes and ray at each worker count, one right after the other."""


async def bench_workload(workload: Workload, tmp: Path) -> list[dict]:
    """Warm-up runs, then every run of RUN_ORDER."""
    for executor in ("processes", "ray"):
        await measure(workload, executor, 2, tmp / f"warmup-{executor}", trials=1)
    return rows_of(workload, {(executor, workers): await measure(workload, executor, workers,
                                                                 tmp / f"{executor}-{workers}")
                              for executor, workers in RUN_ORDER})


async def bench_executors() -> list[dict]:
    """The LLM workload first (its warm-up starts the fork server, which then imports litellm for every worker),
    then the scripted one; the Ray cluster's start-up as a row of its own."""
    os.environ.setdefault(KEY_ENV, "sk-fake-bench-key")  # before ray.init: the cluster's workers inherit it
    with timed_local_ray_cluster() as ray_start_s, fake_server_process() as server, \
            tempfile.TemporaryDirectory() as tmp:
        rows = [{"bench": "executors: local Ray cluster start-up (ray.init, 4 CPUs, once; in no sims/s figure)",
                 "seconds": round(ray_start_s, 2)}]
        rows += await bench_workload(llm_workload(server.base_url, server.pid), Path(tmp) / "llm")
        rows += await bench_workload(scripted_workload(), Path(tmp) / "scripted")
    return rows


def main() -> int:
    print(json.dumps(anyio.run(bench_executors), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
