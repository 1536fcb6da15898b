"""A fixture's per-simulation files (cassettes, transcripts, judge cassettes) are named by one function,
`fixture_file_name`: names that cannot collide (`a/b` and `a_b` shared one transcript, so the fixture failed its own
replay) and that fit a file system (a 300-character task id with `--record` was a raw OSError), while the committed
fixtures' names stay what they were (issue 30, Low)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import fixture_file_name
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, REPO

runner = CliRunner()
LONG = "t" * 150 + "/" + "u" * 149
ODD_IDS = ["a/b", "a_b", "a b", "a#1", LONG, "é" * 200]


def test_names_of_different_simulations_differ_and_fit_a_file_name():
    sims = [f"{task}#{trial}" for task in ODD_IDS + ["a", "a_1", "hw_banking_001"] for trial in (0, 1, 10)]
    sims += ["a_b", "a_1_0", "3f2a9c1e-uuid-like", "a_b_0"]  # ids of imported runs carry no #trial
    names = [fixture_file_name(s) for s in sims]
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    for name in names:
        assert len(name.encode()) <= 255 and re.fullmatch(r"[A-Za-z0-9_.~-]+\.jsonl", name), name
    assert fixture_file_name(f"{LONG}#0").startswith("t" * 40)  # still readable: the id's start, then a hash


def test_the_committed_fixtures_keep_their_file_names():
    """The names before this change (`<task>_<trial>.jsonl`) for the ids recorded so far, so every committed
    fixture, and every fixture users recorded with such ids, replays as it is."""
    fixtures = sorted(p.parent for p in (REPO / "fixtures").glob("*/fixture.json"))
    assert fixtures
    for fixture in fixtures:
        for folder in ("cassettes", "transcripts", "judge-cassettes", "compat-gsrt-cassettes"):
            if (fixture / folder).is_dir():
                named = {fixture_file_name(t.simulation_id) for t in read_trajectories(fixture)}
                assert {p.name for p in (fixture / folder).iterdir()} <= named, (fixture, folder)
    assert fixture_file_name("hw_banking_001#1") == "hw_banking_001_1.jsonl"


@pytest.fixture
def odd_tasks(tmp_path) -> Path:
    """The handwritten banking file with hw_banking_001 again under ids that once collided or were too long."""
    data = json.loads(HANDWRITTEN.read_text())
    [first] = [t for t in data["tasks"] if t["id"] == "hw_banking_001"]
    data["tasks"] = [dict(first, id=task_id) for task_id in ("a/b", "a_b", LONG)]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))
    return path


def test_a_fixture_of_odd_task_ids_records_and_replays(tmp_path, odd_tasks):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(odd_tasks), "--out", str(tmp_path / "live"),
                              "--snapshot", str(HANDWRITTEN.parent), "--record", str(tmp_path / "fx")])
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "fx" / "transcripts").iterdir())) == 3  # one each, none overwritten
    replayed = runner.invoke(app, ["replay", str(tmp_path / "fx"), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 0, replayed.output
    assert sorted(t.task_id for t in read_trajectories(tmp_path / "again")) == sorted(["a/b", "a_b", LONG])
