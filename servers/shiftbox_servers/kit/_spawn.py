"""A domain server as an HTTP subprocess on 127.0.0.1 (the harness's `--servers http`, tests, benchmarks)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio

PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that makes a child die with the process starting it (even on kill -9 of that process).

    Linux: the child asks the kernel for SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG), and
    exits at once if the parent is already gone. The signal follows the *thread* that started the child,
    so start children from the event loop's thread, never from a worker thread. Elsewhere: None (children
    of stdio servers still end with their parent, on EOF; an HTTP server child does not).
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child only calls it
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def http_server_process(domain: str, snapshot_dir: Path, *extra: str,
                              timeout_s: float = 30.0) -> AsyncIterator[str]:
    """Yield the base URL of a fresh `shiftbox-server DOMAIN --transport http`; killed on exit, and with the
    calling process if that dies first (Linux: `die_with_parent`)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:  # never a pipe: an unread pipe stalls a chatty server
        proc = subprocess.Popen(
            [sys.executable, "-m", "shiftbox_servers", domain, "--transport", "http", "--port", str(port),
             "--snapshot", str(snapshot_dir), *extra],
            stdout=subprocess.DEVNULL, stderr=log, preexec_fn=die_with_parent(),
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
