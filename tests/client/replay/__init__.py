"""Replay tests: committed fixtures answered from their cassettes, offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def offline_copy(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of a committed fixture to score, with no API key in the environment (a replay needs none)."""
    for var in ("SHIFTBOX_FAKE_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    run = tmp_path / "run"
    shutil.copytree(fixture, run)
    return run
