"""`check_task_file` (`shiftbox tasks validate`) reads the file it checks once, also when a reference list is
imported on a snapshot first (it read it three times: a file replaced meanwhile was checked half old, half new)."""

from __future__ import annotations

import json
from pathlib import Path

from shiftbox.agentchangebench import check_task_file, import_agentchangebench
from shiftbox_servers.kit import get_domain
from tests.client.tasks.test_import import _reference_task


def test_a_reference_list_checked_on_a_snapshot_is_read_once(tmp_path, monkeypatch):
    path = tmp_path / "tasks.json"
    task = _reference_task()  # an airline task: its reference snapshot is the native one, committed
    task["user_scenario"]["instructions"]["domain"] = "airline"
    path.write_text(json.dumps([task]))
    snapshot = get_domain("airline").default_snapshot_dir()
    expected = import_agentchangebench(path, "airline", snapshot)
    reads = []
    read_text = Path.read_text

    def counting(self: Path, *args, **kwargs) -> str:
        if self == path:
            reads.append(self)
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting)
    check = check_task_file(path, snapshot)
    assert len(reads) == 1
    assert check.task_file == expected
    reads.clear()
    assert check_task_file(path).task_file.tasks[0].id == "7"  # without a snapshot: read once too
    assert len(reads) == 1


def test_a_reference_list_checked_on_a_snapshot_loads_the_snapshot_once(tmp_path, monkeypatch):
    """The snapshot (its whole database read and hashed) is loaded once: it was loaded three times, for its manifest
    (whose snapshot the imported file names), to record the gold outcomes, and to replay the gold paths; `tasks
    import --snapshot` loaded it twice."""
    path = tmp_path / "tasks.json"
    task = _reference_task()  # tau2's format (gold `actions`): its gold outcomes are recorded on the snapshot
    task["user_scenario"]["instructions"]["domain"] = "airline"
    path.write_text(json.dumps([task]))
    snapshot = get_domain("airline").default_snapshot_dir()
    reads = []
    read_bytes = Path.read_bytes

    def counting(self: Path) -> bytes:
        if self.parent == snapshot:
            reads.append(self.name)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    check_task_file(path, snapshot)
    assert sorted(reads) == ["db.sqlite", "manifest.json"]
    reads.clear()
    import_agentchangebench(path, "airline", snapshot)
    assert sorted(reads) == ["db.sqlite", "manifest.json"]
