"""Metrics read a task's goal data from the task model alone: scoring never needs the task generator."""

from __future__ import annotations

from tests.test_layers import every_import


def test_metrics_never_import_the_generator():
    offending = [f"{i.source}:{i.line} imports {i.target}" for i in every_import("shiftbox")
                 if i.source.startswith("shiftbox.metrics") and i.target.startswith("shiftbox.generation")]
    assert not offending, "\n".join(offending)
