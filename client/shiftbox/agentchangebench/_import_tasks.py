"""`import_agentchangebench`: a reference task list as a native TaskFile (the conversion is
`shiftbox.tasks.reference_task_file`), with tau2-format tasks' gold outcomes recorded on the snapshot they are
written for (`record_gold_outcomes`): the gold calls that fail there (tau2's scenarios make some fail on purpose)
and the final state digest."""

from __future__ import annotations

from pathlib import Path

from ..tasks import TaskFile, read_json, record_gold_outcomes, reference_task_file, tau2_format_ids


def import_agentchangebench(path: Path, domain: str | None = None, snapshot: Path | None = None) -> TaskFile:
    """Read an AgentChangeBench / tau2 task list (a JSON array of tasks) as a native TaskFile.

    With `snapshot` (the one the tasks are written for), tau2-format tasks get their gold outcomes recorded:
    `expected_error` on the gold calls that fail there and `expected_state_digest` (`record_gold_outcomes`).
    """
    path = Path(path)
    raw = read_json(path)
    task_file = reference_task_file(raw, path, domain)
    tau2_ids = tau2_format_ids(raw)
    if snapshot is not None and tau2_ids:
        record_gold_outcomes(task_file, Path(snapshot), tau2_ids)
    return task_file
