"""Helpers for harness tests: the hand-written banking tasks and a world to run them in."""

from __future__ import annotations

from pathlib import Path

from shiftbox.tasks import TaskFile, load_task_file

REPO = Path(__file__).resolve().parents[2]
HANDWRITTEN = REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json"


def handwritten() -> TaskFile:
    return load_task_file(HANDWRITTEN)
