"""Replay tests: committed fixtures answered from their cassettes, offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.harness import HANDWRITTEN

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def offline_copy(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of a committed fixture to score, with no API key in the environment (a replay needs none)."""
    for var in ("SHIFTBOX_FAKE_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    run = tmp_path / "run"
    shutil.copytree(fixture, run)
    return run


def record_scripted(tmp_path: Path) -> Path:
    """`shiftbox run --record` of the handwritten banking tasks, 2 trials, scripted agent (10 simulations, no LLM):
    the fixture's path (the live run is in `tmp_path / "live"`)."""
    fixture = tmp_path / "fixture"
    res = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--agent",
                                   "scripted:redundant", "--trials", "2", "--out", str(tmp_path / "live"),
                                   "--record", str(fixture)])
    assert res.exit_code == 0, res.output
    return fixture
