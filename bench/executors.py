"""`make bench` section: the executors (`shiftbox run --executor local|processes|ray`) on the LLM fake-server
workload, each run a fresh `shiftbox run` process timed from its start to its exit, and what each executor costs
before the first LLM request.

    uv run python bench/executors.py [--quick] [--rounds 3] [--simulations 100] [--sides local,ray-address] [--ray-preload]

The sides (bench/llm_throughput.py's `Side`, `run_side`: spawned, timed with `os.wait4`, the fake server's window,
every trajectory checked against the scripted conversation) are the same simulations at concurrency 8 on:
`local` (one process), `processes` with 2 workers, `ray` with 2 workers on a cluster the run starts for itself,
`ray` with 2 workers on a long-lived cluster (`--ray-address`) (started once by the bench
before any timing, as `ray start` would be, and shut down at the end), and the same with `--ray-keep-actors`
(its actors kept from an untimed first run: each timed run is a next run; so too for `ray-address`, whose untimed
first run takes the workers Ray prestarts as the cluster starts). They run interleaved, `--rounds` times;
figures are medians. `--ray-preload` starts the long-lived cluster with `RAY_preload_python_modules=shiftbox.runs._ray`
(docs/cluster.md): the workers its raylet starts import the harness as they start. A side's start-up is the time from its spawn to its first LLM request at the fake server;
`startup_over_local_s` is what the executor adds to local's, round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# bench/ is on sys.path: this file runs as a script, or from run.py
from llm_throughput import (
    KEY_ENV,
    QUICK,
    ROUNDS,
    Measured,
    Side,
    conversation_bodies,
    failed_rows,
    fake_server_process,
    measure_sides,
    median,
    paired,
    rounded,
    run_side,
    side_row,
    target,
)

from shiftbox.cluster import local_ray_cluster, ray_installed

CONCURRENCY = 8  # the whole run's, shared between the workers as `shiftbox run --concurrency` is
WORKERS = 2
RAY_CPUS = 4  # the long-lived cluster: room for a run's 2 actors and the 2 kept ones
RAY_ADDRESS_STARTUP_S = 1.0  # the target: what a run on a long-lived cluster adds to local's start-up
KEEP_S = 600  # --ray-keep-actors: longer than the section


@dataclasses.dataclass(frozen=True)
class KeptSide(Side):
    """A side on the long-lived cluster with `--ray-keep-actors`: its runs lease the actors an earlier run kept."""

    def argv(self, base_url: str, tasks: Path, out: Path, record: Path | None = None) -> list[str]:
        return [*super().argv(base_url, tasks, out, record), "--ray-keep-actors", str(KEEP_S)]


def executor_sides(simulations: int, ray_address: str | None) -> dict[str, Side]:
    """local, processes, ray with its own cluster, and ray on the long-lived cluster at `ray_address` (when given)."""
    what = f"concurrency {CONCURRENCY}, {simulations} simulations"
    sides = {"local": Side(f"--executor local, {what}", simulations, CONCURRENCY, executor="local"),
             "processes": Side(f"--executor processes --workers {WORKERS}, {what}", simulations, CONCURRENCY,
                               workers=WORKERS, executor="processes")}
    if ray_installed():
        sides["ray"] = Side(f"--executor ray --workers {WORKERS}, a cluster started by the run, {what}", simulations,
                            CONCURRENCY, workers=WORKERS, executor="ray")
    if ray_address:
        # the cluster listens on the loopback only (shiftbox.cluster); a driver finds it there when told, as
        # the cluster was, that Ray runs on no other machine (else it looks for it at the routable address)
        sides["ray-address"] = Side(f"--executor ray --workers {WORKERS} --ray-address (a long-lived cluster), {what}",
                                    simulations, CONCURRENCY, workers=WORKERS, executor="ray", ray_address=ray_address,
                                    env=(("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0"),))
        sides["ray-kept"] = KeptSide(f"--executor ray --workers {WORKERS} --ray-address --ray-keep-actors (actors "
                                     f"kept by an earlier run), {what}", simulations, CONCURRENCY, workers=WORKERS,
                                     executor="ray", ray_address=ray_address,
                                     env=(("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0"),))
    return sides


def executor_row(side: Side, runs: list[Measured], local: list[Measured]) -> dict[str, Any]:
    """The side's figures with its throughput over local's and the start-up it adds to local's, round by round."""
    row = side_row(side, runs)
    if side.executor != "local":
        row["x_local"] = rounded(paired(runs, local, lambda m: m.simulations / m.seconds), 2)
        extra = median([a.startup_s - b.startup_s if a.startup_s is not None and b.startup_s is not None else None
                        for a, b in zip(runs, local, strict=True)])
        row["startup_over_local_s"] = rounded(extra, 2)
        if side.ray_address:
            target(row, extra is not None and extra <= RAY_ADDRESS_STARTUP_S,
                   f"a long-lived Ray cluster adds <= {RAY_ADDRESS_STARTUP_S:g} s of start-up per run")
        if "FAILED" not in row and (problem := next((m.problem for m in local if m.problem), None)):
            row["FAILED"] = problem
    return row


SIDES = ("local", "processes", "ray", "ray-address", "ray-kept")


def bench_executors(simulations: int = 100, rounds: int = ROUNDS, only: tuple[str, ...] = SIDES,
                    preload: bool = False) -> list[dict]:
    """The executor rows (of the sides in `only`; local always), interleaved rounds; the long-lived Ray cluster up
    for the whole section."""
    os.environ.setdefault(KEY_ENV, "sk-fake-bench-key")  # before ray.init: the cluster's workers inherit it
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        address = None
        if ray_installed():
            try:
                with _environment({PRELOAD: "shiftbox.runs._ray"} if preload else {}):  # read as the raylet starts
                    ray = stack.enter_context(local_ray_cluster(num_cpus=RAY_CPUS))
                address = ray.get_runtime_context().gcs_address
            except Exception as exc:  # e.g. its raylet timed out on a loaded machine: that row fails, not the others
                rows.append({"bench": "whole process: --executor ray --ray-address (a long-lived cluster)",
                             "FAILED": f"the long-lived Ray cluster did not start: {exc}"})
        server = stack.enter_context(fake_server_process())
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sides = {name: side for name, side in executor_sides(simulations, address).items()
                 if name == "local" or name in only}
        for name in ("ray-kept", "ray-address"):  # untimed: each timed run is a next run on the cluster
            if name in sides:  # (ray-kept: this run starts the actors the timed runs reuse)
                run_side(server, sides[name], tmp, f"{name}-first")
        samples, _ = asyncio.run(measure_sides(server, sides, rounds, tmp, conversation_bodies(server, tmp)))
    rows = [executor_row(side, samples[name], samples["local"]) for name, side in sides.items()] + rows
    if not ray_installed():
        rows.append({"bench": "executors: ray", "skipped": "shiftbox[ray] is not installed"})
    return rows


PRELOAD = "RAY_preload_python_modules"


@contextlib.contextmanager
def _environment(variables: dict[str, str]):
    """These variables set in this process's environment for the block, and only they restored after: what the block
    sets itself stays (starting the cluster exports settings there, RAY_AUTH_MODE among them, without which the later
    runs fail to connect; so not `mock.patch.dict(os.environ)`, which restores the whole environment)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (a few simulations, one round)")
    parser.add_argument("--ray-preload", action="store_true",
                        help=f"start the long-lived cluster with {PRELOAD}=shiftbox.runs._ray")
    parser.add_argument("--sides", default=",".join(SIDES),
                        help=f"the sides to run, separated by commas (local always runs): {', '.join(SIDES)}")
    args = parser.parse_args()
    if unknown := sorted(set(args.sides.split(",")) - set(SIDES)):
        parser.error(f"--sides: {', '.join(unknown)} not among {', '.join(SIDES)}")
    rows = bench_executors(*((QUICK["simulations"], QUICK["rounds"]) if args.quick else (args.simulations, args.rounds)),
                           only=tuple(args.sides.split(",")), preload=args.ray_preload)
    print(json.dumps(rows, indent=2))
    if failed := failed_rows(rows):
        print("bench: FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
