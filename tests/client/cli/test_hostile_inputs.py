"""Issue 30 (Low): every input file the CLI reads is refused by name (exit 2), never a raw traceback or a hang.

Each command gets a file nested 100,000 deep (JSON), a TOML database nested or dotted 100,000 deep, numbers that are
not finite and empty databases; `python -m shiftbox.vcr` gets a YAML exec tag in a cassette named `.json` and a
cassette torn inside a record. The message names the file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.harness import REPO

runner = CliRunner()
FIXTURE = REPO / "fixtures" / "banking-litellm"
DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = {"brackets": "a = " + DEEP_JSON + "\n", "dotted key": "a" + ".a" * 100_000 + " = 1\n",
             "table header": "[" + ".".join(["t"] * 100_000) + "]\n"}


def _fixture(tmp_path: Path, name: str, text: str) -> Path:
    """A copy of the committed fixture (also a run directory) with the file `name` replaced by `text`."""
    copy = tmp_path / "fixture"
    shutil.copytree(FIXTURE, copy)
    (copy / name).write_text(text)
    return copy


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


DEEP_COMMANDS = {
    # case: (the command, given tmp_path and the hostile text; the file it must name)
    "tasks validate": lambda t, x: (["tasks", "validate", str(_file(t, "tasks.json", x))], "tasks.json"),
    "tasks stats": lambda t, x: (["tasks", "stats", str(_file(t, "tasks.json", x))], "tasks.json"),
    "tasks import": lambda t, x: (["tasks", "import", "agentchangebench", str(_file(t, "tasks.json", x)),
                                   "--out", str(t / "out.json")], "tasks.json"),
    "run --tasks": lambda t, x: (["run", "--domain", "banking", "--tasks", str(_file(t, "tasks.json", x)),
                                  "--out", str(t / "run")], "tasks.json"),
    "serve --tasks": lambda t, x: (["serve", "--domain", "banking", "--tasks", str(_file(t, "tasks.json", x))],
                                   "tasks.json"),
    "fake-llm --tasks": lambda t, x: (["fake-llm", "--tasks", str(_file(t, "tasks.json", x))], "tasks.json"),
    "snapshots import db.json": lambda t, x: (["snapshots", "import", "agentchangebench", "retail",
                                               str(_file(t, "db.json", x)), "--out", str(t / "snap")], "db.json"),
    "metrics trajectories": lambda t, x: (["metrics", str(_fixture(t, "trajectories.jsonl", x + "\n"))],
                                          "trajectories.jsonl"),
    "report trajectories": lambda t, x: (["report", str(_fixture(t, "trajectories.jsonl", x + "\n")), "--html",
                                          str(t / "r.html")], "trajectories.jsonl"),
    "compare trajectories": lambda t, x: (["compare", str(_fixture(t, "trajectories.jsonl", x + "\n")),
                                           str(FIXTURE)], "trajectories.jsonl"),
    "replay fixture.json": lambda t, x: (["replay", str(_fixture(t, "fixture.json", x)), "--out", str(t / "o")],
                                         "fixture.json"),
    "replay tasks.json": lambda t, x: (["replay", str(_fixture(t, "tasks.json", x)), "--out", str(t / "o")],
                                       "tasks.json"),
    "rescore": lambda t, x: (["rescore", str(_file(t, "results.json", x))], "results.json"),
    "conformance replay": lambda t, x: (["conformance", "replay", str(_file(t, "results.json", x))], "results.json"),
}


def _refused(args: list[str], named: str, *also: str, exit_code: int = 2) -> str:
    res = runner.invoke(app, args)
    assert not (res.exception and not isinstance(res.exception, SystemExit)), repr(res.exception)
    message = " ".join(res.output.split())
    assert res.exit_code == exit_code, (res.exit_code, message[-600:])
    assert named in message and all(part in message for part in also), message[-600:]
    return message


@pytest.mark.parametrize("case", sorted(DEEP_COMMANDS))
def test_json_nested_100000_deep_is_refused_by_name(case, tmp_path):
    args, named = DEEP_COMMANDS[case](tmp_path, DEEP_JSON)
    _refused(args, named)


def test_a_deep_transcript_line_is_a_named_replay_mismatch(tmp_path):
    """A transcript that differs from its recording is a failed check of the replay (exit 1), named by file and line."""
    fixture = _fixture(tmp_path, "transcripts/hw_banking_001_0.jsonl", DEEP_JSON + "\n")
    _refused(["replay", str(fixture), "--out", str(tmp_path / "o")], "transcripts/hw_banking_001_0.jsonl line 1",
             "nested deeper than 100", exit_code=1)


@pytest.mark.parametrize("shape", sorted(DEEP_TOML))
def test_a_deep_toml_database_is_refused_quickly(shape, tmp_path):
    """tomllib builds a dotted key in quadratic time: 100,000 parts never finished before the bound."""
    source = _file(tmp_path, "db.toml", DEEP_TOML[shape])
    started = time.monotonic()
    _refused(["snapshots", "import", "agentchangebench", "banking", str(source), "--out", str(tmp_path / "s")],
             "db.toml", "nested deeper than 100")
    assert time.monotonic() - started < 10


NOT_FINITE = {
    "banking inf": ("banking", "db.toml", "[[customers]]\ncustomer_id = 'c1'\n[[accounts]]\ncurrent_balance = inf\n",
                    "inf"),
    "banking -inf": ("banking", "db.toml", "[[accounts]]\ncurrent_balance = -inf\n", "-inf"),
    "banking nan": ("banking", "db.toml", "[[accounts]]\ncurrent_balance = nan\n", "nan"),
    "banking 1e999": ("banking", "db.toml", "[[accounts]]\ncurrent_balance = 1e999\n", "1e999"),
    "retail Infinity": ("retail", "db.json", '{"products": {}, "users": {}, "orders": {"o": {"x": Infinity}}}',
                        "Infinity"),
    "retail NaN": ("retail", "db.json", '{"products": {"p": {"price": NaN}}, "users": {}, "orders": {}}', "NaN"),
    "airline -Infinity": ("airline", "db.json", '{"flights": {}, "reservations": {}, "users": {"u": [-Infinity]}}',
                          "-Infinity"),
    "airline 1e999": ("airline", "db.json", '{"flights": {}, "reservations": {}, "users": {"u": [1e999]}}', "1e999"),
}


@pytest.mark.parametrize("case", sorted(NOT_FINITE))
def test_importers_refuse_numbers_that_are_not_finite(case, tmp_path):
    domain, name, text, number = NOT_FINITE[case]
    source = _file(tmp_path, name, text)
    _refused(["snapshots", "import", "agentchangebench", domain, str(source), "--out", str(tmp_path / "s")],
             name, f"the number {number} is not finite")
    assert not (tmp_path / "s").exists()


EMPTY = {
    "banking empty file": ("banking", "db.toml", ""),
    "banking empty tables": ("banking", "db.toml", "customers = []\naccounts = []\n"),
    "retail": ("retail", "db.json", '{"products": {}, "users": {}, "orders": {}}'),
    "airline": ("airline", "db.json", '{"flights": {}, "users": {}, "reservations": {}}'),
}


@pytest.mark.parametrize("case", sorted(EMPTY))
def test_importers_refuse_an_empty_database(case, tmp_path):
    domain, name, text = EMPTY[case]
    source = _file(tmp_path, name, text)
    _refused(["snapshots", "import", "agentchangebench", domain, str(source), "--out", str(tmp_path / "s")],
             name, "an empty database", "give the reference benchmark's database file")
    assert not (tmp_path / "s").exists()


VCR_CASSETTES = {
    "exec tag in a .json cassette": ("agent.json", "interactions: !!python/object/apply:os.system ['touch {marker}']\n"
                                                   "version: 1\n", "python/object/apply:os.system"),
    "torn inside a record": ("agent.yaml", "interactions:\n- request:\n    body: abc\n    method: PO\n",
                             "not a vcrpy cassette"),
}


@pytest.mark.parametrize("case", sorted(VCR_CASSETTES))
def test_python_m_shiftbox_vcr_refuses_a_tampered_cassette_with_exit_2(case, tmp_path):
    name, text, named = VCR_CASSETTES[case]
    marker = tmp_path / "exec-tag-ran"
    cassette, program = tmp_path / name, tmp_path / "agent.py"
    cassette.write_text(text.format(marker=marker))
    program.write_text("print('ran')\n")
    env = {**os.environ, "SHIFTBOX_VCR_CASSETTE": str(cassette), "SHIFTBOX_RECORD_MODE": "none"}
    done = subprocess.run([sys.executable, "-m", "shiftbox.vcr", str(program)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert str(cassette) in done.stderr and named in done.stderr and "Traceback" not in done.stderr
    assert "ran" not in done.stdout and not marker.exists()
