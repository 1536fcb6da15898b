"""`shiftbox run --workers 2` against one process, whole process (start to exit), as a user waits for it.

    uv run python bench/workers.py [--simulations 200] [--rounds 2] [--compare-with SRC ...] [--pycache-prefix DIR]

Each row is a fresh `shiftbox run` process (the project's own command, as a user runs it) with an LLM agent and an
LLM user on the fast path against bench/llm_throughput.py's fake OpenAI-compatible server (its own process,
started once), playing its scripted conversation; concurrency 8, `--workers 1` (one process) and `--workers 2`
(two worker processes of the processes executor). Rounds interleave the two (and, with `--compare-with SRC`, the
same runs with the code of another source tree SRC, e.g. the main branch exported with `git archive`, put first
on PYTHONPATH), so each pair shares the machine's state; every row prints the 1-minute load average at its start,
and fails loudly when a run did not play the scripted conversation. The figures: wall seconds from the process's
start to its exit, sims/s, and the medians' ratio of `--workers 2` to `--workers 1`; the CPU time of the run (its
process, the fork server and the workers, reaped) and of the fake server over the run, `cores_busy` (their sum over
cores x wall), and `workers_2_ceiling`: the most `--workers 2` can gain on this machine's cores from the CPU time
measured (`ceilings`; `_model_elsewhere`: were the fake server's CPU not on these cores, as with a real provider).

`--pycache-prefix DIR` runs every process with compiled bytecode kept in DIR (as an installed package has it):
without it, a process started with PYTHONDONTWRITEBYTECODE set (as on this project's shared machines) compiles
every module it imports, every time.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/ is on sys.path: this file runs as a script
from llm_throughput import (
    KEY_ENV,
    SPEC,
    ScriptFailure,
    bench_tasks,
    fake_server_process,
    script_failure,
)

from shiftbox.trajectory import read_trajectories

CONCURRENCY = 8
PR_SET_CHILD_SUBREAPER = 36  # prctl(2)
WORKER_COUNTS = (1, 2)
THIS_TREE = "this tree"


def command(tasks: Path, out: Path, base_url: str, trials: int, workers: int) -> list[str]:
    """`shiftbox run` of the scripted LLM conversation: the same command for every row but `--workers`."""
    role_args = []
    for role in ("agent", "user"):
        for key, value in (("api_base", base_url), ("api_key_env", KEY_ENV), ("max_retries", "0")):
            role_args += [f"--{role}-arg", f"{key}={value}"]
    return [str(Path(sys.executable).with_name("shiftbox")), "run", "--domain", "banking", "--tasks", str(tasks),
            "--out", str(out), "--agent", SPEC, "--user", SPEC, *role_args, "--trials", str(trials),
            "--concurrency", str(CONCURRENCY), "--workers", str(workers)]


def environment(source: Path | None, pycache_prefix: Path | None) -> dict[str, str]:
    """The rows' environment: the fake key, `source`'s code first on the path, compiled bytecode kept or not."""
    env = {**os.environ, KEY_ENV: os.environ.get(KEY_ENV, "sk-fake-bench-key"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source / "client"), str(source / "servers")])
    if pycache_prefix is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache_prefix)
    return env


def one_run(argv: list[str], env: dict[str, str], out: Path, expected: int, label: str, server) -> dict:
    """One whole-process run: wall time from start to exit, and CPU time: the run's (its process and every process
    below it that was reaped: the fork server and the workers, from `os.wait4`) and the fake server's over the same
    span; refused when it did not play the script."""
    load = os.getloadavg()[0]
    server_cpu, start = server.cpu_s(), time.perf_counter()
    with open(out.with_suffix(".log"), "w") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds, server_cpu = time.perf_counter() - start, server.cpu_s() - server_cpu
    driver_cpu = usage.ru_utime + usage.ru_stime  # the run's own process (and what it reaped itself)
    cpu = driver_cpu + orphans_cpu_s(server.pid)
    if code := os.waitstatus_to_exitcode(status):
        raise ScriptFailure(f"{label}: exit {code}: {out.with_suffix('.log').read_text(errors='replace')[-2000:]}")
    problem = script_failure(read_trajectories(out), expected)
    if problem:
        raise ScriptFailure(f"{label}: {problem}")
    return {"row": label, "load_1min": round(load, 2), "seconds": round(seconds, 2),
            "sims_per_s": round(expected / seconds, 1), "run_cpu_s": round(cpu, 2),
            "driver_cpu_s": round(driver_cpu, 2),
            "fake_server_cpu_s": round(server_cpu, 2),
            # how busy the machine's cores were with this run and its model: 1.0 = every core, all the time
            "cores_busy": round((cpu + server_cpu) / ((os.cpu_count() or 1) * seconds), 2)}


def become_subreaper() -> bool:
    """Make this process the one that reaps the orphans of the processes it starts (Linux): the run's fork server,
    which the run leaves to end on its own, comes back here with its workers' CPU time (else it goes uncounted)."""
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return False


def orphans_cpu_s(keep: int, timeout_s: float = 30) -> float:
    """Reap every child of this process but `keep` (the fake server): the run's leftovers, adopted as their parent
    exited; their CPU time, and that of every process they reaped (the workers)."""
    cpu, deadline = 0.0, time.monotonic() + timeout_s
    while pids := [pid for pid in children() if pid != keep]:
        if time.monotonic() > deadline:
            raise ScriptFailure(f"the run left processes {pids} running {timeout_s:g} s after it exited")
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                reaped, _, usage = os.wait4(pid, os.WNOHANG)
                if reaped:
                    cpu += usage.ru_utime + usage.ru_stime
        time.sleep(0.01)
    return cpu


def children() -> list[int]:
    """This process's children (Linux: from /proc)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def ceilings(rows: list[dict]) -> dict[str, float]:
    """The most `--workers 2` can gain over one process on this machine's cores, from the CPU time measured (which
    a busy machine disturbs less than wall time): one process, bound by its own CPU, takes at least its CPU time;
    the two workers take at least their CPU time spread over every core, with the fake server's (it shares the
    cores) or, as for a model served elsewhere, without it. An upper bound where one process is CPU-bound."""
    def cpu(workers: int, key: str) -> float:
        return statistics.median(r[key] for r in rows if r["workers"] == workers)
    cores, one = os.cpu_count() or 1, cpu(1, "run_cpu_s")
    two, model = cpu(2, "run_cpu_s"), cpu(2, "fake_server_cpu_s")
    return {"workers_2_ceiling": round(one / ((two + model) / cores), 2),
            "workers_2_ceiling_model_elsewhere": round(one / (two / cores), 2)}


def bench_workers(simulations: int, rounds: int, sides: dict[str, Path | None], pycache_prefix: Path | None) -> dict:
    """Every round runs each side at each worker count, one after the other; rows, then medians and ratios."""
    task_file = bench_tasks()
    trials = max(1, simulations // len(task_file.tasks))
    expected = trials * len(task_file.tasks)
    rows: list[dict] = []
    if not become_subreaper():
        raise RuntimeError("bench/workers.py counts the workers' CPU time as their subreaper (Linux only)")
    with fake_server_process() as server, tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / "tasks.json"
        tasks.write_text(task_file.model_dump_json())
        for number, (side, source) in enumerate(sides.items()):  # warm-up: bytecode in the prefix, files cached
            out = Path(tmp) / f"warmup-{number}"
            one_run(command(tasks, out, server.base_url, 1, 2), environment(source, pycache_prefix), out,
                    len(task_file.tasks), f"{side}: warm-up", server)
        for number in range(rounds):
            for side, source in sides.items():
                env = environment(source, pycache_prefix)
                for workers in WORKER_COUNTS:
                    out = Path(tmp) / f"r{number}-{len(rows)}"
                    row = one_run(command(tasks, out, server.base_url, trials, workers), env, out, expected,
                                  f"{side}, --workers {workers}, round {number + 1}", server)
                    row.update(side=side, workers=workers)
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    rows.append(row)
    summary = {}
    for side in sides:
        median = {w: statistics.median(r["seconds"] for r in rows if r["side"] == side and r["workers"] == w)
                  for w in WORKER_COUNTS}
        cpu = {w: statistics.median(r["run_cpu_s"] for r in rows if r["side"] == side and r["workers"] == w)
               for w in WORKER_COUNTS}
        summary[side] = {"median_seconds": median, "median_run_cpu_s": cpu,
                         "workers_2_over_1": round(median[1] / median[2], 2),
                         **ceilings([r for r in rows if r["side"] == side])}
    return {"simulations": expected, "concurrency": CONCURRENCY, "cores": os.cpu_count(),
            "pycache_prefix": str(pycache_prefix) if pycache_prefix else None, "rows": rows, "summary": summary}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--compare-with", type=Path, metavar="SRC", action="append", default=[],
                        help="a source tree (its client/ and servers/) whose code runs the same rows, interleaved "
                             "(repeatable)")
    parser.add_argument("--pycache-prefix", type=Path, metavar="DIR", help="keep compiled bytecode in DIR")
    args = parser.parse_args()
    sides: dict[str, Path | None] = {**{str(src): src.resolve() for src in args.compare_with}, THIS_TREE: None}
    print(json.dumps(bench_workers(args.simulations, args.rounds, sides, args.pycache_prefix), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
