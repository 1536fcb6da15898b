"""`shiftbox serve` as a run: the session log directory (a run directory any number of launches share) and the
task its sessions are scored against, then the gateway (`serve_sessions`) until it stops."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import anyio

from shiftbox_servers.kit import get_domain

from ..errors import RunPlanError, make_output_folder
from ..runs import (
    RUN_FILE,
    RunConfig,
    RunMetadata,
    check_graph_mode,
    check_server_mode,
    check_snapshots,
    prepare_run_dir,
    task_file_digest,
)
from ..tasks import Task, TaskFile, load_task_file
from ._serve import open_session_task, serve_sessions
from ._sessions import GATEWAY_AGENT, GATEWAY_USER, run_dir_lock

TRANSPORTS = ("http", "stdio")


def serve_gateway(domain: str, out: Path, *, transport: str = "http", port: int = 8766, servers: str = "inproc",
                  snapshot: Path | None = None, tasks: Path | None = None, task_id: str | None = None,
                  log: Callable[[str], None] = print, dependency_graph: bool = False,
                  graph_refusal: bool = False) -> int:
    """Check the options (RunPlanError), open or reopen `out`, and serve until stopped; returns the number of
    sessions still open at the stop (each written). Messages for the person running it go to `log`.
    `dependency_graph`: the tool descriptions carry the domain's dependency graph; `graph_refusal`: the server also
    refuses out-of-order calls (both recorded in run.json)."""
    if transport not in TRANSPORTS:
        raise RunPlanError(f"--transport {transport!r} is not http or stdio")
    if graph_refusal and not dependency_graph:
        raise RunPlanError("--graph-refusal enforces the dependency graph's steps, so it needs dependency-graph mode: "
                           "add --dependency-graph")
    check_server_mode(servers)
    try:
        snapshot_dir = snapshot or get_domain(domain).default_snapshot_dir()
    except KeyError as exc:
        raise RunPlanError(str(exc.args[0])) from None
    check_snapshots(domain, snapshot_dir, given=snapshot is not None)  # run's checks, before run.json is written
    check_graph_mode(domain, dependency_graph)
    task = session_task(domain, tasks, task_id)
    task_file = TaskFile(domain=domain, source=f"shiftbox serve ({tasks or 'no task'})", tasks=[task])
    config = RunConfig(domain=domain, tasks_sha256=task_file_digest(task_file), agent=GATEWAY_AGENT,
                       user=GATEWAY_USER, servers=servers, snapshot=str(snapshot_dir), dependency_graph=dependency_graph,
                       graph_refusal=graph_refusal)
    metadata = RunMetadata(config=config, shiftbox_version=version("shiftbox"), simulations=0)
    make_output_folder(out, "--out")
    with run_dir_lock(out):  # launches at the same moment (a desktop client starting two) take turns
        prepare_run_dir(out, metadata, task_file, resume=(out / RUN_FILE).exists())
    return anyio.run(lambda: serve_sessions(domain, servers, snapshot_dir, task, out, transport, port, log,
                                            dependency_graph=dependency_graph, graph_refusal=graph_refusal))


def session_task(domain: str, tasks: Path | None, task_id: str | None) -> Task:
    """The task every session attempts: `task_id` of the task file `tasks`, or the open-session task."""
    if tasks is None:
        if task_id is not None:
            raise RunPlanError("--task-id needs --tasks FILE")
        return open_session_task(domain)
    try:
        task_file = load_task_file(tasks)
    except (OSError, ValueError) as exc:
        raise RunPlanError(str(exc)) from None
    if task_file.domain != domain:
        raise RunPlanError(f"{tasks} holds {task_file.domain} tasks, not {domain}")
    chosen = [t for t in task_file.tasks if t.id == task_id]
    if not chosen:
        raise RunPlanError(f"give --task-id, one of: {', '.join(t.id for t in task_file.tasks[:10])}"
                           + (" …" if len(task_file.tasks) > 10 else ""))
    return chosen[0]
