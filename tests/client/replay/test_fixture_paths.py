"""A fixture records its snapshot relative to the snapshots root, not the recording machine's absolute path, and
replays wherever the snapshots root is; fixtures recorded with an absolute path still replay (issue 29, item 14)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import FIXTURE_FILE, RUN_FILE
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
SNAPSHOTS = HANDWRITTEN.parents[2]  # this checkout's snapshots/


def record(tmp_path: Path, *options: str) -> Path:
    fixture = tmp_path / "fixture"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "hw_banking_001",
                              "--out", str(tmp_path / "live"), "--record", str(fixture), *options])
    assert res.exit_code == 0, res.output
    return fixture


def recorded_snapshots(fixture: Path) -> tuple[str, str]:
    return (json.loads((fixture / FIXTURE_FILE).read_text())["run"]["config"]["snapshot"],
            json.loads((fixture / RUN_FILE).read_text())["config"]["snapshot"])


def test_a_fixture_records_its_snapshot_relative_to_the_snapshots_root(tmp_path):
    assert recorded_snapshots(record(tmp_path)) == ("banking/v1", "banking/v1")


def test_an_explicit_snapshot_under_the_root_is_recorded_relative_too(tmp_path):
    fixture = record(tmp_path, "--snapshot", str(SNAPSHOTS / "banking" / "v1"))
    assert recorded_snapshots(fixture) == ("banking/v1", "banking/v1")


def test_the_fixture_replays_from_another_snapshots_root(tmp_path, monkeypatch):
    fixture = record(tmp_path)
    moved = tmp_path / "elsewhere" / "fixture"
    shutil.copytree(fixture, moved)
    root = tmp_path / "other-root"
    (root / "banking").mkdir(parents=True)
    (root / "banking" / "v1").symlink_to(SNAPSHOTS / "banking" / "v1")
    monkeypatch.setenv("SHIFTBOX_SNAPSHOTS", str(root))
    res = runner.invoke(app, ["replay", str(moved), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "replayed" / RUN_FILE).read_text())["config"]["snapshot"] == "banking/v1"


def test_a_fixture_with_an_absolute_snapshot_path_still_replays(tmp_path):
    fixture = record(tmp_path)
    for name, keys in ((FIXTURE_FILE, ("run", "config")), (RUN_FILE, ("config",))):
        doc = json.loads((fixture / name).read_text())
        node = doc
        for key in keys:
            node = node[key]
        node["snapshot"] = str(SNAPSHOTS / "banking" / "v1")  # what fixtures recorded before
        (fixture / name).write_text(json.dumps(doc, indent=2))
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output
    assert "identical to the recording" in res.output
