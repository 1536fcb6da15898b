"""Running a documentation page's commands as written, in a scratch checkout: the page's code blocks, a free port in
place of the fake LLM's documented one, and `uv` and `git` stand-ins on PATH (this environment is the one `uv run`
would use; `git clone` of a public repository gets a prepared local copy, since tests never reach the network)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.client.harness import REPO

DOC_PORT = "8767"  # the port the pages give `shiftbox fake-llm` (its default)


def code_blocks(page: str, fence: str = "") -> list[str]:
    """The code blocks of docs/`page`, in order (those fenced ```<fence> when given)."""
    return re.findall(rf"```{fence}\n(.*?)```", (REPO / "docs" / page).read_text(), re.S)


def free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def scratch_checkout(root: Path, clones: dict[str, Path] | None = None) -> tuple[Path, dict[str, str]]:
    """`root/shiftbox`, laid out like a fresh checkout after `make demo` (the built snapshots and the examples,
    linked), and the environment to run a page's commands in it: `uv run X` runs X here, `git clone URL DIR` copies
    `clones[URL]`, the snapshots root is the checkout's own."""
    checkout = root / "shiftbox"
    (checkout / "snapshots").mkdir(parents=True)
    for built in sorted((REPO / "snapshots").glob("*/v1")):
        (checkout / "snapshots" / built.parent.name).mkdir()
        (checkout / "snapshots" / built.parent.name / "v1").symlink_to(built)
    (checkout / "examples").symlink_to(REPO / "examples")
    shims = root / "bin"
    shims.mkdir()
    (shims / "uv").write_text('#!/bin/sh\n[ "$1" = run ] || { echo "uv stand-in: only uv run" >&2; exit 2; }\n'
                              'shift\nexec "$@"\n')
    cases = "".join(f'  {url}) exec cp -r "{src}" "$3";;\n' for url, src in (clones or {}).items())
    (shims / "git").write_text('#!/bin/sh\n[ "$1" = clone ] || { echo "git stand-in: only git clone" >&2; exit 2; }\n'
                               f'case "$2" in\n{cases}  *) echo "git stand-in: no copy of $2" >&2; exit 2;;\nesac\n')
    for shim in ("uv", "git"):
        (shims / shim).chmod(0o755)
    env = {**os.environ, "SHIFTBOX_SNAPSHOTS": str(checkout / "snapshots"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PATH": os.pathsep.join([str(shims), str(Path(sys.executable).parent), os.environ["PATH"]])}
    env.pop("OPENAI_API_KEY", None)  # a fresh shell: the page says what to export
    return checkout, env


def start(block: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """A block that runs until stopped (a server), started; its first printed line has been read (it is up)."""
    proc = subprocess.Popen(["bash", "-c", f"exec {block.strip()}"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    assert first, proc.stderr.read()
    return proc


def run_script(block: str, cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Commands run in one shell, stopping at the first that fails (each is echoed, so the failure names it)."""
    return subprocess.run(["bash", "-exc", block], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def run_beside_fake_llm(server: str, commands: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`commands` run (`run_script`) while the block `server` (`shiftbox fake-llm …`) serves, both on a free port in
    place of the page's; the server is stopped with Ctrl-C afterwards."""
    port = free_port()
    proc = start(server.replace(DOC_PORT, port), cwd, env)
    try:
        return run_script(commands.replace(DOC_PORT, port), cwd, env)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
