"""`make bench` section: one domain HTTP server under many concurrent episodes, the load client in its own process.

    uv run python bench/http_load.py [--episodes 200] [--calls 30] [--rounds 2] [--versions V ...]
    uv run python bench/http_load.py --profile OUT.prof [--versions V]

The server is the harness's (`http_server_process`: `python -m shiftbox_servers banking --transport http`
on 127.0.0.1). The load client (`--client`, a process of its own) speaks MCP's streamable HTTP itself over
raw asyncio streams, one kept-alive HTTP/1.1 connection per episode: `initialize` and
`notifications/initialized` on `/episodes/<id>/mcp` (the URL names the episode), then `tools/call`
get_account with the session id the server gave; on 2026-07-28 (no handshake: each POST carries the protocol
version, client info and capabilities in `params._meta` and the `MCP-Protocol-Version`, `Mcp-Method` and
`Mcp-Name` headers, and gets no session id) one `server/discover` as the SDK's client sends first, then the
calls. Each protocol version the installed SDK speaks is run against shiftbox's server and against the SDK's
own stock server (`MCPServer` with the same get_account tool function over one episode, JSON responses,
served by uvicorn with the same parser and loop; `--stock-server`), alternating, `--rounds` times, each row
with the load average beside it (the machine is shared). Offered load: a closed loop, every episode keeping one
call in flight (so `episodes` calls are always outstanding). The client reports its own CPU per call;
the bench reads the server's CPU (utime + stime in /proc/<pid>/stat) around the timed phase only, so a
reader can see which side is the bottleneck. `--profile` runs the server under cProfile instead (stopped
with SIGINT so it writes its profile), for finding where its time goes; never part of `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TOOL = "get_account"
CLIENT_INFO = {"name": "shiftbox-bench-load", "version": "1"}
SERVERS = ("sdk", "shiftbox")
"""The SDK's stock server and shiftbox's, run alternately for each protocol version."""
TARGET_X = 2.0
"""Issue 34's target: shiftbox's server at least this many times the stock server's calls/s, on every version."""


def protocol_versions() -> tuple[str, ...]:
    """Every protocol version the installed mcp SDK speaks: the handshake era's, then the per-request envelope's."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    return (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


def is_modern(version: str) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return version in MODERN_PROTOCOL_VERSIONS


# -- the load client (its own process) -----------------------------------------------------------


class Episode:
    """One MCP session (2026-07-28: one client's requests) on one kept-alive connection to `path`."""

    def __init__(self, port: int, path: str, version: str):
        from mcp_types import (
            CLIENT_CAPABILITIES_META_KEY,
            CLIENT_INFO_META_KEY,
            PROTOCOL_VERSION_META_KEY,
        )

        self.port = port
        self.path = path
        self.version = version
        self.modern = is_modern(version)
        self.envelope = {PROTOCOL_VERSION_META_KEY: version, CLIENT_INFO_META_KEY: CLIENT_INFO,
                         CLIENT_CAPABILITIES_META_KEY: {}}
        """The per-request `_meta` a 2026-07-28 request carries (what the SDK's client sends)."""
        self.session: str | None = None
        self.next_id = 0
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    def headers(self, message: dict[str, Any]) -> str:
        """The MCP headers of one POST: the session's after `initialize`, or 2026-07-28's routing headers."""
        if self.modern:
            name = (message.get("params") or {}).get("name")
            return (f"mcp-protocol-version: {self.version}\r\nmcp-method: {message['method']}\r\n"
                    + (f"mcp-name: {name}\r\n" if name else ""))
        if self.session:
            return f"mcp-session-id: {self.session}\r\nmcp-protocol-version: {self.version}\r\n"
        return ""

    async def post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        body = json.dumps(message, separators=(",", ":")).encode()
        head = (f"POST {self.path} HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\ncontent-type: application/json\r\n"
                f"accept: application/json, text/event-stream\r\n{self.headers(message)}"
                f"content-length: {len(body)}\r\n\r\n")
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readuntil(b"\r\n")
        headers: dict[str, str] = {}
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers:
            raise RuntimeError(f"no content-length in the answer to {message.get('method')}: {headers}")
        return int(status_line.split()[1]), headers, await self.reader.readexactly(int(headers["content-length"]))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        if self.modern:
            params = {**params, "_meta": self.envelope}
        status, headers, body = await self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                                 "params": params})
        if status != 200:
            raise RuntimeError(f"{method}: HTTP {status} {body[:200]!r}")
        if method == "initialize":
            self.session = headers.get("mcp-session-id")
        answer = json.loads(body)
        if "result" not in answer:
            raise RuntimeError(f"{method}: {answer}")
        return answer["result"]

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        if self.modern:
            await self.request("server/discover", {})
            return
        await self.request("initialize", {"protocolVersion": self.version, "capabilities": {},
                                          "clientInfo": CLIENT_INFO})
        status, _, _ = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status != 202:
            raise RuntimeError(f"notifications/initialized: HTTP {status}")

    async def call(self, arguments: dict[str, Any]) -> bool:
        """One tools/call; True when the tool answered without an error."""
        result = await self.request("tools/call", {"name": TOOL, "arguments": arguments})
        return not result.get("isError")


def episode_path(server: str, i: int) -> str:
    """shiftbox's episode URL; the stock server has only its one endpoint."""
    return f"/episodes/load-{i}/mcp" if server == "shiftbox" else "/mcp"


async def load(port: int, episodes: int, calls: int, accounts: list[str], version: str, server: str
               ) -> dict[str, Any]:
    opened = [Episode(port, episode_path(server, i), version) for i in range(episodes)]
    await asyncio.gather(*(e.open() for e in opened))
    print("ready", flush=True)  # the bench reads the server's CPU now, then says go
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    latencies: list[float] = []
    errors = 0

    async def run(i: int, episode: Episode) -> None:
        nonlocal errors
        for k in range(calls):
            start = time.perf_counter()
            try:
                errors += not await episode.call({"account_id": accounts[(i + k) % len(accounts)]})
            except Exception:
                errors += 1
            latencies.append(time.perf_counter() - start)

    cpu, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(run(i, e) for i, e in enumerate(opened)))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    for e in opened:
        e.writer.close()
    latencies.sort()
    return {"calls": len(latencies), "errors": errors, "seconds": seconds, "client_cpu_s": cpu,
            "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}


def client_main(port: int, episodes: int, calls: int, accounts_file: str, version: str, server: str) -> int:
    accounts = json.loads(Path(accounts_file).read_text())
    print(json.dumps(asyncio.run(load(port, episodes, calls, accounts, version, server))), flush=True)
    return 0


# -- the SDK's stock server (its own process) ----------------------------------------------------


def stock_app(snapshot_dir: Path) -> Any:
    """The mcp SDK's own `MCPServer` with banking's get_account (the same tool function, over one episode of the
    same snapshot), streamable HTTP with JSON responses, logging warnings only, the SDK's defaults otherwise."""
    import functools

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool

    from shiftbox_servers.kit import Episode as KitEpisode
    from shiftbox_servers.kit import Snapshot, get_domain

    snapshot = Snapshot.load(snapshot_dir)
    spec = get_domain("banking").tools_for(snapshot, "default").specs[TOOL]
    episode = KitEpisode("stock", snapshot)

    async def call(**kwargs: Any) -> Any:
        return spec.fn(episode, **kwargs)

    functools.update_wrapper(call, spec.fn)
    call.__signature__ = spec.signature  # type: ignore[attr-defined]
    del call.__wrapped__  # type: ignore[attr-defined]
    server = MCPServer(name="stock-banking", log_level="WARNING",  # as shiftbox's: no log line per session
                       tools=[Tool.from_function(call, name=TOOL, description=spec.description)])
    return server.streamable_http_app(json_response=True, host="127.0.0.1")


def stock_server_main(port: int, snapshot_dir: str) -> int:
    """uvicorn as shiftbox's server runs it (C parser and event loop where installed, no access log)."""
    import uvicorn

    uvicorn.run(stock_app(Path(snapshot_dir)), host="127.0.0.1", port=port, log_level="warning", http="auto",
                loop="auto", access_log=False)
    return 0


# -- the bench side ------------------------------------------------------------------------------


def cpu_seconds(pid: int, stat: int | None = None) -> float:
    """utime + stime of a process, from /proc/<pid>/stat (`stat`: that file's descriptor, kept open by a caller that
    reads it per request, read again in place: a tenth of the cost of opening it)."""
    text = os.pread(stat, 4096, 0).decode() if stat is not None else Path(f"/proc/{pid}/stat").read_text()
    fields = text.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(port: int) -> int:
    """The pid of this process's child serving `port` (http_server_process yields only the URL)."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"shiftbox_servers" in argv and str(port).encode() in argv:
                return int(child)
    raise LookupError(f"no child process serving port {port}")


def health(base: str) -> dict[str, Any]:
    return json.loads(urllib.request.urlopen(base + "/healthz", timeout=5).read())


def drive(port: int, pid: int, episodes: int, calls: int, accounts: list[str], version: str, server: str
          ) -> dict[str, Any]:
    """Run the load client process against the server on `port`; the server's CPU over the timed phase."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(accounts, f)
        f.flush()
        client = subprocess.Popen([sys.executable, __file__, "--client", str(port), str(episodes), str(calls), f.name,
                                   version, server], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if client.stdout.readline().strip() != "ready":
                raise RuntimeError("the load client could not open its episodes (see stderr)")
            server_cpu = cpu_seconds(pid)
            client.stdin.write("go\n")
            client.stdin.flush()
            figures = json.loads(client.stdout.readline())
            figures["server_cpu_s"] = cpu_seconds(pid) - server_cpu
        finally:
            client.stdin.close()
            client.wait(timeout=60)
    return figures


def row(figures: dict[str, Any], episodes: int, calls: int, memory_kb: int | None, version: str, server: str
        ) -> dict[str, Any]:
    n = figures["calls"]
    who = "shiftbox's server (banking)" if server == "shiftbox" else "the mcp SDK's stock server (same tool)"
    return {"bench": f"HTTP load, protocol {version}, {who}, load client in its own process, closed loop: "
                     f"{episodes} concurrent episodes each keeping one {TOOL} call in flight, {calls} calls each",
            "protocol": version, "server": server,
            "offered_load": f"closed loop, {episodes} calls in flight", "calls": n,
            "calls_per_s": round(n / figures["seconds"]), "errors": figures["errors"],
            "p50_ms": round(figures["p50_ms"], 2), "p99_ms": round(figures["p99_ms"], 2),
            "server_cpu_ms_per_call": round(1000 * figures["server_cpu_s"] / n, 3),
            "client_cpu_ms_per_call": round(1000 * figures["client_cpu_s"] / n, 3),
            "memory_per_episode_kb": memory_kb, "load_average_1m": round(os.getloadavg()[0], 2)}


def accounts_to_call(n: int = 200) -> list[str]:
    from shiftbox_servers.kit import Snapshot, get_domain

    snap = Snapshot.load(get_domain("banking").default_snapshot_dir())
    return [r[0] for r in snap.open_copy().execute(
        f"SELECT account_id FROM accounts ORDER BY account_id LIMIT {n}")]




async def wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """Until something accepts connections on `port` (the stock server has no /healthz)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the stock server exited at start (code {proc.returncode})")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the stock server did not listen on port {port} in {timeout_s} s") from None
            await asyncio.sleep(0.05)


async def measure(server: str, version: str, episodes: int, calls: int, accounts: list[str]) -> dict[str, Any]:
    """One row: a fresh server of the kind `server`, the load client speaking `version` against it."""
    from shiftbox_servers.kit import free_port, get_domain, http_server_process

    snapshot_dir = get_domain("banking").default_snapshot_dir()
    if server == "sdk":
        port = free_port()
        proc = subprocess.Popen([sys.executable, __file__, "--stock-server", str(port), str(snapshot_dir)])
        try:
            await wait_for_port(port, proc)
            figures = await asyncio.to_thread(drive, port, proc.pid, episodes, calls, accounts, version, server)
        finally:
            proc.kill()
            proc.wait(timeout=10)
        return row(figures, episodes, calls, None, version, server)
    async with http_server_process("banking", snapshot_dir, "--max-episodes", str(episodes + 10)) as base:
        port = int(base.rsplit(":", 1)[1])
        rss_before = health(base)["rss_bytes"]
        figures = await asyncio.to_thread(drive, port, server_pid(port), episodes, calls, accounts, version, server)
        after = health(base)
    if after["episodes"] != episodes:
        figures["errors"] += 1
    memory_kb = round((after["rss_bytes"] - rss_before) / episodes / 1024) if rss_before and after["rss_bytes"] else None
    return row(figures, episodes, calls, memory_kb, version, server)


def ratio_rows(rows: list[dict[str, Any]], versions: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per version, shiftbox's calls/s over the stock server's measured in the same round (and server CPU per call
    the other way round), as the range over the rounds."""
    out = []
    for version in versions:
        pairs = list(zip([r for r in rows if r["protocol"] == version and r["server"] == "sdk"],
                         [r for r in rows if r["protocol"] == version and r["server"] == "shiftbox"], strict=True))
        speed = [ours["calls_per_s"] / sdk["calls_per_s"] for sdk, ours in pairs]
        # a server's CPU is read in clock ticks: a few calls may take none, and then give no ratio
        cpu = [sdk["server_cpu_ms_per_call"] / ours["server_cpu_ms_per_call"] for sdk, ours in pairs
               if ours["server_cpu_ms_per_call"]] or [None]
        out.append({"bench": f"HTTP load, protocol {version}: shiftbox's server over the SDK's stock server, "
                             f"{len(pairs)} interleaved rounds", "protocol": version,
                    "x_sdk_calls_per_s_min": round(min(speed), 2), "x_sdk_calls_per_s_max": round(max(speed), 2),
                    "x_less_server_cpu_per_call_min": None if None in cpu else round(min(cpu), 2),
                    "x_less_server_cpu_per_call_max": None if None in cpu else round(max(cpu), 2),
                    "errors": (errors := sum(r["errors"] for pair in pairs for r in pair)),
                    "target": f"{TARGET_X:g}x the SDK's calls/s in every round, 0 errors: "
                              f"{'met' if min(speed) >= TARGET_X and not errors else 'NOT met'}"})
    return out


async def bench_http_load(episodes: int = 200, calls: int = 30, rounds: int = 2,
                          versions: tuple[str, ...] | None = None) -> list[dict]:
    """Per protocol version, shiftbox's server and the SDK's stock server under the same load, alternately
    (`rounds` times), then the ratios; a server is started fresh for each row."""
    versions = versions or protocol_versions()
    accounts = accounts_to_call()
    rows = []
    for _ in range(rounds):
        for version in versions:
            for server in SERVERS:
                rows.append(await measure(server, version, episodes, calls, accounts))
    return rows + ratio_rows(rows, versions)


@contextlib.contextmanager
def profiled_server(out: Path, episodes: int) -> Iterator[tuple[int, int]]:
    """The banking server under cProfile (same command as http_server_process), stopped with SIGINT."""
    from shiftbox_servers.kit import free_port, get_domain

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "shiftbox_servers", "banking",
                             "--transport", "http", "--port", str(port), "--max-episodes", str(episodes + 10),
                             "--snapshot", str(get_domain("banking").default_snapshot_dir())])
    try:
        for _ in range(600):
            try:
                health(f"http://127.0.0.1:{port}")
                break
            except OSError:
                time.sleep(0.05)
        yield port, proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", nargs=6, metavar=("PORT", "EPISODES", "CALLS", "ACCOUNTS", "VERSION", "SERVER"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--stock-server", nargs=2, metavar=("PORT", "SNAPSHOT"), help=argparse.SUPPRESS)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--calls", type=int, default=30, help="tools/call per episode")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of every version and server")
    parser.add_argument("--versions", nargs="+", metavar="VERSION", choices=protocol_versions(),
                        help="protocol versions to run (default: every one the installed SDK speaks)")
    parser.add_argument("--profile", type=Path, metavar="OUT",
                        help="run shiftbox's server under cProfile (the first of --versions), write OUT")
    args = parser.parse_args()
    if args.client:
        port, episodes, calls, accounts, version, server = args.client
        return client_main(int(port), int(episodes), int(calls), accounts, version, server)
    if args.stock_server:
        return stock_server_main(int(args.stock_server[0]), args.stock_server[1])
    versions = tuple(args.versions or protocol_versions())
    if args.profile:
        with profiled_server(args.profile.resolve(), args.episodes) as (port, pid):
            figures = drive(port, pid, args.episodes, args.calls, accounts_to_call(), versions[0], "shiftbox")
        print(json.dumps(row(figures, args.episodes, args.calls, None, versions[0], "shiftbox"), indent=2))
        return 0
    print(json.dumps(asyncio.run(bench_http_load(args.episodes, args.calls, args.rounds, versions)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
