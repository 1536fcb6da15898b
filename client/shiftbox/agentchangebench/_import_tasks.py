"""`import_agentchangebench`: a reference task list as a native TaskFile (the conversion is
`shiftbox.tasks.reference_task_file`), with tau2-format tasks' gold outcomes recorded on the snapshot they are
written for (`record_gold_outcomes`): the gold calls that fail there (tau2's scenarios make some fail on purpose)
and the final state digest."""

from __future__ import annotations

from pathlib import Path

from shiftbox_servers.kit import Snapshot

from ..tasks import (
    TaskFile,
    is_reference_snapshot,
    read_json,
    record_gold_outcomes,
    reference_task_file,
    tau2_format_ids,
)


def import_agentchangebench(path: Path, domain: str | None = None, snapshot: Path | None = None) -> TaskFile:
    """Read an AgentChangeBench / tau2 task list (a JSON array of tasks) as a native TaskFile.

    With `snapshot` (the one the tasks are written for), tau2-format tasks get their gold outcomes recorded:
    `expected_error` on the gold calls that fail there and `expected_state_digest` (`record_gold_outcomes`).
    A snapshot imported from the reference's own database becomes the file's snapshot (airline's tasks default
    to the native airline snapshot, built to hold their ids; tau2's airline db.json, imported, is theirs).
    """
    path = Path(path)
    raw = read_json(path)
    task_file = reference_task_file(raw, path, domain)
    if snapshot is not None:
        manifest = Snapshot.load(Path(snapshot)).manifest
        if is_reference_snapshot(manifest) and manifest.domain == task_file.domain:
            task_file.snapshot = manifest.snapshot_id
    tau2_ids = tau2_format_ids(raw)
    if snapshot is not None and tau2_ids:
        record_gold_outcomes(task_file, Path(snapshot), tau2_ids)
    return task_file
