"""`shiftbox-server DOMAIN`: serve one domain's tools over stdio or streamable HTTP (127.0.0.1).

Only argument parsing and the choice of transport; the server itself comes from `open_server`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._domain import domain_names
from ._open import open_server
from ._snapshot import SnapshotError


def build_parser() -> argparse.ArgumentParser:
    domains = ", ".join(domain_names())
    parser = argparse.ArgumentParser(
        prog="shiftbox-server",
        description=f"Serve a shiftbox domain as an MCP server. Domains: {domains}.",
        epilog="Example: shiftbox-server banking --transport http --port 8765",
    )
    parser.add_argument("domain", help="domain to serve")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument("--snapshot", type=Path, help="snapshot directory (default: the domain's built-in)")
    parser.add_argument("--max-episodes", type=int, default=1000, help="episodes held at once (HTTP)")
    parser.add_argument("--idle-timeout", type=float, default=3600.0, help="seconds before an idle episode is dropped")
    parser.add_argument("--toolset", default="default",
                        help="tool profile: default, or agentchangebench / tau2 (the reference's exact tool set; "
                             "tau2 for retail and airline)")
    parser.add_argument("--dependency-graph", action="store_true",
                        help="write each tool's preconditions and postconditions from the domain's dependency graph "
                             "into its description (VitaBench mode; docs/servers.md)")
    parser.add_argument("--graph-refusal", action="store_true",
                        help="with --dependency-graph, also refuse a call until the tools it requires have succeeded "
                             "in the episode (a shiftbox option, not VitaBench's; docs/servers.md)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        server = open_server(
            args.domain, args.snapshot, max_episodes=args.max_episodes, idle_timeout_s=args.idle_timeout,
            toolset=args.toolset, dependency_graph=args.dependency_graph, graph_refusal=args.graph_refusal,
        )
    except (KeyError, SnapshotError, ValueError) as exc:
        print(f"shiftbox-server: {exc.args[0]}", file=sys.stderr)
        return 2
    if args.transport == "stdio":
        import anyio

        from ._stdio import serve_stdio

        anyio.run(serve_stdio, server.mcp)
        return 0
    from ._http import serve_http

    serve_http(server.http_app(args.host), args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
