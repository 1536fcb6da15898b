"""`make bench` section: one domain HTTP server under many concurrent episodes, the load client in its own process.

    uv run python bench/http_load.py [--episodes 200] [--calls 30] [--profile OUT.prof]

The server is the harness's (`http_server_process`: `python -m shiftbox_servers banking --transport http`
on 127.0.0.1). The load client (`--client`, a process of its own) speaks MCP's streamable HTTP itself over
raw asyncio streams, one kept-alive HTTP/1.1 connection per episode: `initialize` and
`notifications/initialized` on `/episodes/<id>/mcp` (the URL names the episode), then `tools/call`
get_account with the session id the server gave. Offered load: a closed loop, every episode keeping one
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

PROTOCOL_VERSION = "2025-06-18"
TOOL = "get_account"


# -- the load client (its own process) -----------------------------------------------------------


class Episode:
    """One MCP session on one kept-alive connection, addressed by the episode URL."""

    def __init__(self, port: int, episode: str):
        self.port = port
        self.path = f"/episodes/{episode}/mcp"
        self.session: str | None = None
        self.next_id = 0
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    async def post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        body = json.dumps(message, separators=(",", ":")).encode()
        session = f"mcp-session-id: {self.session}\r\nmcp-protocol-version: {PROTOCOL_VERSION}\r\n" if self.session else ""
        head = (f"POST {self.path} HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\ncontent-type: application/json\r\n"
                f"accept: application/json, text/event-stream\r\n{session}content-length: {len(body)}\r\n\r\n")
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
        await self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                          "clientInfo": {"name": "shiftbox-bench-load", "version": "1"}})
        status, _, _ = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status != 202:
            raise RuntimeError(f"notifications/initialized: HTTP {status}")

    async def call(self, arguments: dict[str, Any]) -> bool:
        """One tools/call; True when the tool answered without an error."""
        result = await self.request("tools/call", {"name": TOOL, "arguments": arguments})
        return not result.get("isError")


async def load(port: int, episodes: int, calls: int, accounts: list[str]) -> dict[str, Any]:
    opened = [Episode(port, f"load-{i}") for i in range(episodes)]
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


def client_main(port: int, episodes: int, calls: int, accounts_file: str) -> int:
    accounts = json.loads(Path(accounts_file).read_text())
    print(json.dumps(asyncio.run(load(port, episodes, calls, accounts))), flush=True)
    return 0


# -- the bench side ------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
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


def drive(port: int, pid: int, episodes: int, calls: int, accounts: list[str]) -> dict[str, Any]:
    """Run the load client process against the server on `port`; the server's CPU over the timed phase."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(accounts, f)
        f.flush()
        client = subprocess.Popen([sys.executable, __file__, "--client", str(port), str(episodes), str(calls), f.name],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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


def row(figures: dict[str, Any], episodes: int, calls: int, memory_kb: int | None) -> dict[str, Any]:
    n = figures["calls"]
    return {"bench": f"one HTTP server (banking), load client in its own process, closed loop: {episodes} concurrent "
                     f"episodes each keeping one {TOOL} call in flight, {calls} calls each",
            "offered_load": f"closed loop, {episodes} calls in flight", "calls": n,
            "calls_per_s": round(n / figures["seconds"]), "errors": figures["errors"],
            "p50_ms": round(figures["p50_ms"], 2), "p99_ms": round(figures["p99_ms"], 2),
            "server_cpu_ms_per_call": round(1000 * figures["server_cpu_s"] / n, 3),
            "client_cpu_ms_per_call": round(1000 * figures["client_cpu_s"] / n, 3),
            "memory_per_episode_kb": memory_kb}


def accounts_to_call(n: int = 200) -> list[str]:
    from shiftbox_servers.kit import Snapshot, get_domain

    snap = Snapshot.load(get_domain("banking").default_snapshot_dir())
    return [r[0] for r in snap.open_copy().execute(
        f"SELECT account_id FROM accounts ORDER BY account_id LIMIT {n}")]


async def bench_http_load(episodes: int = 200, calls: int = 30) -> list[dict]:
    """The HTTP-load row: the server as the harness starts it, the load client as a process of its own."""
    from shiftbox_servers.kit import get_domain, http_server_process

    accounts = accounts_to_call()
    async with http_server_process("banking", get_domain("banking").default_snapshot_dir(),
                                   "--max-episodes", str(episodes + 10)) as base:
        port = int(base.rsplit(":", 1)[1])
        rss_before = health(base)["rss_bytes"]
        figures = await asyncio.to_thread(drive, port, server_pid(port), episodes, calls, accounts)
        after = health(base)
    if after["episodes"] != episodes:
        figures["errors"] += 1
    memory_kb = round((after["rss_bytes"] - rss_before) / episodes / 1024) if rss_before and after["rss_bytes"] else None
    return [row(figures, episodes, calls, memory_kb)]


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
    parser.add_argument("--client", nargs=4, metavar=("PORT", "EPISODES", "CALLS", "ACCOUNTS"), help=argparse.SUPPRESS)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--calls", type=int, default=30, help="tools/call per episode")
    parser.add_argument("--profile", type=Path, metavar="OUT", help="run the server under cProfile, write OUT")
    args = parser.parse_args()
    if args.client:
        port, episodes, calls, accounts = args.client
        return client_main(int(port), int(episodes), int(calls), accounts)
    if args.profile:
        with profiled_server(args.profile.resolve(), args.episodes) as (port, pid):
            figures = drive(port, pid, args.episodes, args.calls, accounts_to_call())
        print(json.dumps(row(figures, args.episodes, args.calls, None), indent=2))
        return 0
    print(json.dumps(asyncio.run(bench_http_load(args.episodes, args.calls)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
