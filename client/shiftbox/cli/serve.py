"""`shiftbox serve`: the recording gateway for any MCP client (`shiftbox.serve.serve_gateway`), each session a
trajectory `shiftbox metrics` scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shiftbox_servers.kit import SnapshotError

from ..errors import (
    InfrastructureError,
    OutputPathError,
    RecordWriteError,
    RunDirError,
    RunFileError,
    RunPlanError,
)
from ..serve import serve_gateway, stopped_message
from ._common import Port, ServerModeChoice, TransportChoice, err, fail


def serve(
    domain: Annotated[str, typer.Option(help="domain whose tools to serve (banking, retail, airline)")],
    out: Annotated[Path, typer.Option(help="directory for the session log (a run directory)")] = Path("runs/serve"),
    transport: Annotated[TransportChoice, typer.Option(help="http (127.0.0.1) or stdio")] = TransportChoice.http,
    port: Port = 8766,
    servers: Annotated[ServerModeChoice, typer.Option(help="how the domain server runs behind the gateway")] = ServerModeChoice.inproc,
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory (default: the domain's)")] = None,
    tasks: Annotated[Path | None, typer.Option(help="a task file: sessions attempt --task-id from it and are "
                                                    "scored against it (its initial state is applied first)")] = None,
    task_id: Annotated[str | None, typer.Option(help="the task of every session (needs --tasks)")] = None,
    dependency_graph: Annotated[bool, typer.Option(
        help="each tool's description carries its preconditions and postconditions from the domain's dependency "
             "graph; nothing is refused for its order (VitaBench; docs/servers.md)")] = False,
    graph_refusal: Annotated[bool, typer.Option(
        help="with --dependency-graph, the domain server also refuses a call whose required tools have not "
             "succeeded in the episode (a shiftbox option, not VitaBench's; docs/servers.md)")] = False,
    resume: Annotated[bool, typer.Option(help="accepted for compatibility: --out is always reopened, each "
                                              "launch adding new sessions", hidden=True)] = False,
) -> None:
    """Serve a domain's tools to any MCP client through the recording gateway; every call is recorded.

    Each episode gets a fresh database: over HTTP, connect to http://127.0.0.1:PORT/episodes/<name>/mcp (one episode per name; clients on plain /mcp get one per MCP session); over stdio the process is one episode.

    OUT is a session log that any number of launches share: each session gets the next number (open-session#0, #1, …). Calls are appended to OUT/calls.jsonl as they happen; each session's trajectory is appended to OUT/trajectories.jsonl when it ends (the client closes its MCP session, HTTP DELETE /episodes/<name>, end of stdio, SIGINT or SIGTERM), sessions cut short by a crash are rebuilt from calls.jsonl at the next start, and `shiftbox metrics OUT` scores them.

    Example: shiftbox serve --domain banking --port 8766 --out runs/desktop
    """
    try:
        ended = serve_gateway(domain, out, transport=transport.value, port=port,
                              servers=servers.value, snapshot=snapshot, tasks=tasks,
                              task_id=task_id, log=lambda line: err.print(line, highlight=False, markup=False),
                              dependency_graph=dependency_graph, graph_refusal=graph_refusal)
    except (RunPlanError, RunDirError, RunFileError, OutputPathError, RecordWriteError, SnapshotError,
            InfrastructureError, OSError) as exc:
        raise fail(str(exc)) from None
    err.print(stopped_message(out, ended))
