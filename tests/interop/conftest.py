"""Interop tests: shiftbox servers under MCP clients written by others (pinned in package-lock.json).

The clients are npm packages installed by `install.sh` (which `make test` runs too) into
tests/interop/node_modules. Without node and npm these tests skip, saying so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.servers.conftest import domain_test_data

INTEROP = Path(__file__).resolve().parent
NODE_MODULES = INTEROP / "node_modules"
SHIFTBOX_SERVER = str(Path(sys.executable).with_name("shiftbox-server"))

def interop_cases(domain: str) -> dict[str, Any]:
    """Per domain (tests/servers/<domain>/conftest.py): a call that succeeds on the native snapshot, a call with an
    argument of the wrong JSON type, and a call naming an id the snapshot does not have."""
    return domain_test_data(domain).INTEROP_CASES


@pytest.fixture(scope="session")
def node() -> str:
    """The node executable, with the pinned clients installed (skips when node or npm is missing)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not found: the interop tests run the official MCP TypeScript SDK, MCP Inspector and "
                    "the MCP conformance suite, which need Node.js (>= 20) and npm")
    done = subprocess.run(["bash", str(INTEROP / "install.sh")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"could not install the pinned MCP clients (tests/interop/install.sh, npm ci): "
                    f"{done.stderr.strip()[-1500:]}")
    return node


def run_node(node: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([node, *args], cwd=INTEROP, capture_output=True, text=True, timeout=timeout)


def node_json(done: subprocess.CompletedProcess[str], exit_code: int = 0) -> Any:
    """The JSON a node program printed, once it exited with `exit_code`."""
    assert done.returncode == exit_code, (f"exit {done.returncode}, expected {exit_code}\n"
                                          f"stdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}")
    return json.loads(done.stdout)
