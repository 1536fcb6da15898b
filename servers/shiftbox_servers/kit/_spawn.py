"""A domain server as an HTTP subprocess on 127.0.0.1 (the harness's `--servers http`, tests, benchmarks)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import anyio


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def http_server_process(domain: str, snapshot_dir: Path, *extra: str,
                              timeout_s: float = 30.0) -> AsyncIterator[str]:
    """Yield the base URL of a fresh `shiftbox-server DOMAIN --transport http`; killed on exit."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:  # never a pipe: an unread pipe stalls a chatty server
        proc = subprocess.Popen(
            [sys.executable, "-m", "shiftbox_servers", domain, "--transport", "http", "--port", str(port),
             "--snapshot", str(snapshot_dir), *extra],
            stdout=subprocess.DEVNULL, stderr=log,
        )
        try:
            with anyio.fail_after(timeout_s):
                while True:
                    if proc.poll() is not None:
                        log.seek(0)
                        err = log.read().decode(errors="replace")[-2000:]
                        raise RuntimeError(f"{domain} HTTP server exited at start: {err}")
                    try:
                        await anyio.to_thread.run_sync(
                            lambda: urllib.request.urlopen(base + "/healthz", timeout=1).read())
                        break
                    except OSError:
                        await anyio.sleep(0.05)
            yield base
        finally:
            proc.kill()
            proc.wait(timeout=10)
