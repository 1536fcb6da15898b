"""Generating tasks, validating them against a snapshot and recording a reference task's gold outcomes call the
domain's tools in this process. They went through the MCP SDK's client over its in-memory transport (the whole SDK
loaded, about 0.8 s of CPU, and its request machinery on every call), where the rest of the in-process harness calls
the kit's server directly (`shiftbox_servers.kit.DirectSession`, whose answers the kit's tests hold equal to the SDK
client's). They use that one in-process session now: the task files they write are byte for byte the same (the
committed generated sets are compared in test_generate.py and test_generate_cross.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.client.harness import REPO

EVERY_IN_PROCESS_USE = """
import json, sys
from pathlib import Path
from shiftbox.generation import generate_cross_tasks, generate_tasks
from shiftbox.tasks import load_task_file, record_gold_outcomes, validate_tasks
snapshot = Path("snapshots/banking/v1")
generated = generate_tasks("banking", snapshot, n=3, seed=7)
cross = generate_cross_tasks(["banking", "retail"], per_pair=1, seed=7)
findings = validate_tasks(generated, snapshot)
handwritten = load_task_file(snapshot / "tasks-handwritten.json")
record_gold_outcomes(handwritten, snapshot)
print(json.dumps({"tasks": [len(generated.tasks), len(cross.tasks)], "findings": len(findings),
                  "recorded": sum(t.evaluation_criteria.expected_state_digest is not None for t in handwritten.tasks),
                  "sdk": sorted({m.split(".")[0] for m in sys.modules} & {"mcp"})}))
"""


def test_generation_validation_and_recording_call_the_tools_without_the_mcp_sdk():
    done = subprocess.run([sys.executable, "-c", EVERY_IN_PROCESS_USE], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    handwritten = json.loads((REPO / "snapshots/banking/v1/tasks-handwritten.json").read_text())["tasks"]
    assert report == {"tasks": [3, 2], "findings": 0, "recorded": len(handwritten), "sdk": []}  # sdk was ["mcp"]
