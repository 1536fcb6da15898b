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

INTEROP = Path(__file__).resolve().parent
NODE_MODULES = INTEROP / "node_modules"
SHIFTBOX_SERVER = str(Path(sys.executable).with_name("shiftbox-server"))

# Per domain: a call that succeeds on the built-in snapshot (with a field its result must carry), a call
# with an argument of the wrong JSON type, and a call naming an id the snapshot does not have.
CASES: dict[str, dict[str, Any]] = {
    "banking": {
        "ok": ("get_customer_by_phone", {"phone_number": "+15555640027"}, ("customer_id", "cust_0011")),
        "rejected": ("get_account", {"account_id": 5}),
        "missing": ("get_account", {"account_id": "acc_99999"}),
    },
    "retail": {
        "ok": ("get_order_details", {"order_id": "#W1037640"}, ("user_id", "mei_fischer_5360")),
        "rejected": ("get_order_details", {"order_id": 1037640}),
        "missing": ("get_order_details", {"order_id": "#W0000000"}),
    },
    "airline": {
        "ok": ("get_reservation_details", {"reservation_id": "PCQF6E"}, ("user_id", "evelyn_nguyen_6005")),
        "rejected": ("get_reservation_details", {"reservation_id": ["PCQF6E"]}),
        "missing": ("get_reservation_details", {"reservation_id": "ZZZZZZ"}),
    },
}


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
