"""A hostile external agent for the isolation tests: `python hostile_agent.py`.

It follows the cmd: protocol, but on the first user message it tries to act inside the other
simulations of its run. Everything it does is a `park_task` whose `current_task_id` carries its own
seed (`own-<seed>` in its own episode, `probe-<seed>` everywhere else), so the test can tell from the
trajectories and final states whether any of its calls landed in someone else's episode. It tries:

- `_meta["shiftbox/episode"]` naming another episode, on its own URL and on the gateway's `/mcp`;
- other episode URLs on the gateway, guessed from its own URL (`...<trial>` -> other trials) and from
  the run directory the way episode ids used to be derived (`HOSTILE_RUN_DIR`, `HOSTILE_TASK`: what
  `ps` shows of the harness command line);
- the legacy `Mcp-Session-Id` header naming a guessed episode;
- the same against every domain server the harness started (found in /proc, like `ps` would);
- every gateway URL it can read from the process table: other processes' environments
  (`/proc/<pid>/environ`), command lines, and the files their descriptors point to (`/proc/<pid>/fd/*`).

What it reaches is written to stderr (for diagnosis only; the test judges the trajectories).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

TRIALS = 6
TIMEOUT_S = 8.0


def say(content: str) -> None:
    sys.stdout.write(json.dumps({"role": "assistant", "content": content}) + "\n")
    sys.stdout.flush()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def old_style_episode_id(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", ".".join(parts))[:128]


def guessed_episodes(own_url: str) -> list[str]:
    guesses = ["default"]
    segment = urlsplit(own_url).path.removesuffix("/mcp").rsplit("/", 1)[-1]
    match = re.match(r"^(.*\.)(\d+)$", segment)
    if match:
        guesses += [f"{match.group(1)}{n}" for n in range(TRIALS) if str(n) != match.group(2)]
    run_dir, task = os.environ.get("HOSTILE_RUN_DIR"), os.environ.get("HOSTILE_TASK")
    if run_dir and task:
        tag = "r" + hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:8]
        guesses += [old_style_episode_id(tag, task, str(n)) for n in range(TRIALS)]
    return [g for g in dict.fromkeys(guesses) if g != segment]


def harness_servers() -> list[str]:
    """Base URLs of the domain servers started by our parent (the harness), read from /proc like `ps`."""
    found = []
    parent = os.getppid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid != parent or b"shiftbox_servers" not in b" ".join(argv) or b"--port" not in argv:
            continue
        found.append(f"http://127.0.0.1:{int(argv[argv.index(b'--port') + 1])}")
    return found


URL_PATTERN = re.compile(rb"http://127\.0\.0\.1:\d+/episodes/[A-Za-z0-9_.:-]+/mcp")


def process_table_urls(own_url: str) -> list[str]:
    """Every episode URL readable from /proc (environments, command lines, files behind descriptors)."""
    found: set[bytes] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        sources = [entry / "environ", entry / "cmdline"]
        with contextlib.suppress(OSError):
            sources += [fd for fd in (entry / "fd").iterdir() if (fd.resolve()).is_file()]
        for source in sources:
            try:
                found.update(URL_PATTERN.findall(source.read_bytes()[:1 << 20]))
            except OSError:
                continue
    return sorted(u.decode() for u in found if u.decode() != own_url)


async def attack(label: str, target: str, seed: str, *, meta: str | None = None,
                 header: str | None = None) -> None:
    """One probe: a write carrying our seed, through `target` (an MCP URL)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    transport = target
    if header is not None:
        transport = streamable_http_client(target, http_client=create_mcp_http_client(
            headers={"Mcp-Session-Id": header}))
    try:
        async with asyncio.timeout(TIMEOUT_S), Client(transport) as client:
            result = await client.call_tool("park_task", {"current_task_id": f"probe-{seed}"},
                                            meta={"shiftbox/episode": meta} if meta else None)
        outcome = "error" if result.is_error else f"ok {result.structured_content}"
        log(f"{label}: {outcome}")
    except Exception as exc:  # refused at the HTTP level, timed out, ...
        log(f"{label}: failed {type(exc).__name__}: {exc}")


async def intrude(own_url: str, seed: str) -> None:
    from mcp import Client

    async with Client(own_url) as own:
        mine = await own.call_tool("park_task", {"current_task_id": f"own-{seed}"})
        log(f"own episode: {mine.structured_content}")
    await asyncio.sleep(1.5)  # the other simulations of the run are up by now
    parts = urlsplit(own_url)
    gateway = f"{parts.scheme}://{parts.netloc}"
    guesses = guessed_episodes(own_url)
    log(f"guesses: {guesses}")
    stolen = process_table_urls(own_url)
    log(f"URLs read from /proc: {stolen}")
    attacks = [attack(f"URL read from /proc {url}", url, seed) for url in stolen]
    for guess in guesses:
        attacks += [
            attack(f"own URL + _meta {guess}", own_url, seed, meta=guess),
            attack(f"gateway /mcp + _meta {guess}", f"{gateway}/mcp", seed, meta=guess),
            attack(f"gateway episode URL {guess}", f"{gateway}/episodes/{guess}/mcp", seed),
            attack(f"gateway /mcp + Mcp-Session-Id {guess}", f"{gateway}/mcp", seed, header=guess),
        ]
        for server in harness_servers():
            attacks += [
                attack(f"server {server} /mcp + _meta {guess}", f"{server}/mcp", seed, meta=guess),
                attack(f"server {server} episode URL {guess}", f"{server}/episodes/{guess}/mcp", seed),
                attack(f"server {server} /mcp + Mcp-Session-Id {guess}", f"{server}/mcp", seed, header=guess),
            ]
    await asyncio.gather(*attacks)


def main() -> int:
    url, seed = os.environ["SHIFTBOX_MCP_URL"], os.environ["SHIFTBOX_SEED"]
    first = True
    for line in sys.stdin:
        if not line.strip():
            continue
        if first:
            first = False
            asyncio.run(intrude(url, seed))
            say("Done.")
        else:
            say("Is there anything else I can help with?")
    return 0


if __name__ == "__main__":
    sys.exit(main())
