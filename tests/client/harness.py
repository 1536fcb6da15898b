"""Helpers for harness tests: the hand-written banking tasks, a run's trajectories compared, processes in /proc."""

from __future__ import annotations

import shutil
from pathlib import Path

from shiftbox.tasks import TaskFile, load_task_file
from shiftbox.trajectory import read_trajectories

REPO = Path(__file__).resolve().parents[2]
HANDWRITTEN = REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json"


def changed_snapshot(tmp_path: Path) -> Path:
    """A copy of the banking snapshot whose database was changed after it was built: its manifest reads (a run plans
    on it), but no server opens it (its sha256 differs): a failure of the servers, not of the plan."""
    copy = tmp_path / "changed-snapshot"
    shutil.copytree(HANDWRITTEN.parent, copy)
    with (copy / "db.sqlite").open("ab") as db:
        db.write(b"\0")
    return copy


def handwritten() -> TaskFile:
    return load_task_file(HANDWRITTEN)


def written_once(run_dir: Path) -> dict[str, str]:
    """Each simulation's canonical JSON (timings left out), by simulation id; nothing may be written twice (the
    file's order is completion order, so runs are compared by id)."""
    trajectories = read_trajectories(run_dir)
    ids = [t.simulation_id for t in trajectories]
    assert len(ids) == len(set(ids)), "a simulation was written twice"
    return {t.simulation_id: t.canonical_json() for t in trajectories}


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid`: its children, theirs, and so on (Linux: read from /proc)."""
    found, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped (Linux: read from /proc)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
