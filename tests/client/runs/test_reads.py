"""A run reads each file it needs once (issue 34): the persona catalog once (it was read and parsed twice, for the
scripted user's personas and for the user's identity in run.json). Counted in a fresh interpreter, from Python's
`open` audit events: a process that read the catalog already reads it no more."""

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
    counts.append({name: [mode for n, mode in opened if n == name] for name in ("personas.json",)})
print(json.dumps(counts))
"""


def test_a_run_reads_the_persona_catalog_once(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(HANDWRITTEN), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fresh, resumed = json.loads(done.stdout.splitlines()[-1])
    assert fresh == {"personas.json": ["r"]}
    assert resumed == {"personas.json": []}  # once a process


def test_a_recorded_run_finishes_its_fixture_without_parsing_its_trajectories_again(tmp_path, monkeypatch):
    """fixture.json's servers are taken from the trajectories the run has just written, not from its
    trajectories.jsonl parsed again (about 0.11 ms of CPU a scripted banking simulation); the file is copied into the fixture as is."""
    from pathlib import Path

    from shiftbox.runs import plan_run, read_fixture_info, run_evaluation
    from shiftbox.trajectory import read_trajectories

    reads = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or read_bytes(self))
    out, fixture = tmp_path / "run", tmp_path / "fixture"
    result = run_evaluation(plan_run(HANDWRITTEN, out, agent="scripted:oracle", record=fixture,
                                     task_ids=["hw_banking_001", "hw_banking_002"]))
    assert result.fixture == fixture
    assert out / "trajectories.jsonl" not in reads
    monkeypatch.undo()
    servers = read_fixture_info(fixture).servers
    assert list(servers) == ["banking"] and servers["banking"].version
    assert all(t.servers == servers for t in read_trajectories(fixture))
    assert (fixture / "trajectories.jsonl").read_bytes() == (out / "trajectories.jsonl").read_bytes()
