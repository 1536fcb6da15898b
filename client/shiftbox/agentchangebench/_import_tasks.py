"""`import_agentchangebench`: a reference task list as a native TaskFile (the conversion is
`shiftbox.tasks.reference_task_file`), with tau2-format tasks' gold outcomes recorded on the snapshot they are
written for (`record_gold_outcomes`): the gold calls that fail there (tau2's scenarios make some fail on purpose)
and the final state digest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import Snapshot, SnapshotError

from ..tasks import (
    Finding,
    TaskFile,
    finding_order,
    is_reference_snapshot,
    read_json,
    record_gold_outcomes,
    reference_task_file,
    task_file_from_json,
    tau2_format_ids,
    validate_tasks,
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
    return _imported(raw, reference_task_file(raw, path, domain), None if snapshot is None else Snapshot.load(snapshot))


def _imported(raw: Any, task_file: TaskFile, snapshot: Snapshot | None) -> TaskFile:
    """`import_agentchangebench` for the list already read (`raw`) and converted (`task_file`, completed in place)
    and the snapshot already loaded: its manifest, the gold outcomes recorded on it."""
    if snapshot is not None:
        manifest = snapshot.manifest
        if is_reference_snapshot(manifest) and manifest.domain == task_file.domain:
            task_file.snapshot = manifest.snapshot_id
        tau2_ids = tau2_format_ids(raw)
        if tau2_ids:
            record_gold_outcomes(task_file, snapshot, tau2_ids)
    return task_file


@dataclass(frozen=True)
class TaskFileCheck:
    """What `shiftbox tasks validate` found: the file as checked, its findings in order, the tool set used."""

    task_file: TaskFile
    findings: list[Finding]
    toolset: str

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def own_errors(self) -> int:
        """Errors that are shiftbox's or the task author's, not the reference benchmark's own data."""
        return sum(f.severity == "error" and not f.reference_data for f in self.findings)

    @property
    def reference_findings(self) -> int:
        return sum(f.reference_data for f in self.findings)


def check_task_file(path: Path, snapshot: Path | None = None, toolset: str | None = None) -> TaskFileCheck:
    """Validate a native task file or a reference task list (`validate_tasks`). A reference list checked on a
    snapshot is first imported on it, as `tasks import --snapshot` reads it: the gold calls that fail there are
    recorded as expected to fail and listed as warnings. ValueError naming the fix for input that cannot be used."""
    path = Path(path)
    try:
        raw = read_json(path)  # read once: the checks below all see the same file
        task_file = task_file_from_json(raw, path)
    except ValueError as exc:
        raise ValueError(f"{exc}\n  fix: pass a native task file or an AgentChangeBench task list (JSON)") from None
    findings: list[Finding] = []
    checked_on: Path | Snapshot | None = snapshot
    try:
        if snapshot is not None and isinstance(raw, list):
            checked_on = Snapshot.load(snapshot)  # once: its manifest, the gold outcomes recorded, then replayed
            task_file = _imported(raw, task_file, checked_on)
            findings = recorded_failures(task_file)
        findings = sorted(findings + validate_tasks(task_file, checked_on, toolset), key=finding_order)
    except (SnapshotError, ValueError) as exc:
        raise ValueError(f"cannot use snapshot {snapshot}: {exc}\n  fix: pass a snapshot directory of the "
                         f"{task_file.domain} domain (see `shiftbox snapshots import` / `build`)") from None
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]}\n  fix: pass one of the domain's tool sets with --toolset") from None
    return TaskFileCheck(task_file, findings, task_file.toolset_for(toolset))


def recorded_failures(task_file: TaskFile) -> list[Finding]:
    """One warning per gold call recorded as expected to fail (visible, since no task author stated it)."""
    found = []
    for task in task_file.tasks:
        for i, action in enumerate(task.evaluation_criteria.action_sets):
            spec = action.allowed_tools[0] if action.allowed_tools else None
            if spec is not None and spec.expected_error:
                found.append(Finding(
                    task_id=task.id, field=f"evaluation_criteria.action_sets[{i}].allowed_tools[0]", severity="warning",
                    problem=f"the gold call {spec.function_name} fails with {spec.expected_error} on the snapshot; "
                            f"tau2 replays a failing gold action as part of the expected outcome, so it is taken as "
                            f"expected_error {spec.expected_error!r}",
                    fix="nothing, if the scenario means it to fail (e.g. a wrong id the user gives first); else "
                        "correct the call"))
    return found
