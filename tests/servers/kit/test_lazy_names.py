"""The kit's names that need the MCP SDK load with it on first use (PEP 562): importing the kit loads no SDK, a
name is imported when first asked for and kept, `dir()` lists them, and an unknown name is an AttributeError."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from shiftbox_servers import kit
before = sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.") or m == "shiftbox_servers.kit._stdio")
listed = "serve_stdio" in dir(kit) and "serve_stdio" not in vars(kit)
serve = kit.serve_stdio
try:
    kit.no_such_name
    unknown = None
except AttributeError as exc:
    unknown = str(exc)
print(json.dumps({"before": before, "listed": listed, "kept": vars(kit)["serve_stdio"] is serve,
                  "module": serve.__module__, "unknown": unknown}))
"""


def test_the_kits_sdk_names_load_on_first_use_and_stay():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "before": [], "listed": True, "kept": True, "module": "shiftbox_servers.kit._stdio",
        "unknown": "module 'shiftbox_servers.kit' has no attribute 'no_such_name'"}
