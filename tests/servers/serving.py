"""Start a real `shiftbox-server` subprocess on 127.0.0.1 for transport tests."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_server(domain: str, snapshot_dir: Path, *extra: str, timeout_s: float = 20.0) -> Iterator[str]:
    """Yield the base URL of a running HTTP server; the process is killed on exit."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "shiftbox_servers", domain, "--transport", "http", "--port", str(port),
         "--snapshot", str(snapshot_dir), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited early: {proc.stderr.read().decode()[-2000:]}")
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server on {base} not ready after {timeout_s}s") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.kill()
        proc.wait(timeout=10)
