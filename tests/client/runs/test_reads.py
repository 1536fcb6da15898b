"""A run reads each file it needs once (issue 36): the persona catalog once (it was read and parsed twice, for the
scripted user's personas and for the user's identity in run.json), and its own run.json not at all after writing it
(it was read back to add the servers' identities); a resumed run reads its earlier run.json once (it was read twice).
Counted in a fresh interpreter, from Python's `open` audit events: a process that read the catalog already reads it
no more."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.client.harness import HANDWRITTEN

SCRIPT = """
import json, os, sys

opened = []


def seen(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append((os.path.basename(os.fsdecode(args[0])), args[1] or ""))


sys.addaudithook(seen)
from shiftbox.runs import plan_run, run_evaluation

counts = []
for resume in (False, True):
    opened.clear()
    run_evaluation(plan_run(sys.argv[1], sys.argv[2], agent="scripted:oracle", task_ids=["hw_banking_001"],
                            resume=resume))
    counts.append({name: [mode for n, mode in opened if n == name] for name in ("personas.json", "run.json")})
print(json.dumps(counts))
"""


def test_a_run_reads_the_persona_catalog_once_and_never_reads_back_the_run_json_it_wrote(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(HANDWRITTEN), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fresh, resumed = json.loads(done.stdout.splitlines()[-1])
    assert fresh == {"personas.json": ["r"], "run.json": []}  # run.json is written as run.tmp, then renamed
    assert resumed == {"personas.json": [], "run.json": ["r"]}  # the catalog is read once a process
