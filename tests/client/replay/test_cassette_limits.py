"""Issue 30 item 4: a tampered cassette never crashes `shiftbox replay`. Copies of a committed fixture whose cassette is
nested 50,000 deep (YAML, as an HTTP cassette), 100,000 deep (JSON), torn mid-line, carries a YAML exec tag or is too
large are refused before parsing: exit 2 naming the file and the limit. Replayed in a subprocess, so a segfault in
the YAML loader shows as rc 139 (what it did before)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.harness import REPO

FIXTURE = REPO / "fixtures" / "banking-litellm"
SIM = "hw_banking_001_0"
MARKER = "shiftbox-exec-tag-ran"


def tampered(tmp_path: Path, name: str, text: str | bytes) -> Path:
    """A copy of the committed fixture whose first simulation's cassette is replaced by `name` holding `text`."""
    copy = tmp_path / "fixture"
    shutil.copytree(FIXTURE, copy)
    (copy / "cassettes" / f"{SIM}.jsonl").unlink()
    target = copy / "cassettes" / name
    target.write_bytes(text if isinstance(text, bytes) else text.encode())
    return copy


def replay(fixture: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "shiftbox.cli", "replay", str(fixture), "--out", str(out),
                           "--concurrency", "1"], capture_output=True, text=True, timeout=300, env=env, cwd=out.parent)


def torn() -> str:
    lines = (FIXTURE / "cassettes" / f"{SIM}.jsonl").read_text().splitlines(keepends=True)
    return "".join(lines[:2]) + lines[2][: len(lines[2]) // 2]


CASES = {
    "yaml-deep-flow": (f"{SIM}.yaml", "interactions: " + "[" * 50_000 + "]" * 50_000 + "\nversion: 1\n",
                       "nested deeper than 100"),
    "yaml-deep-block": (f"{SIM}.yaml", "interactions:\n" + "".join(" " * i + "- \n" for i in range(3000)),
                        "nested deeper than 100"),
    "yaml-exec-tag": (f"{SIM}.yaml", f"interactions: !!python/object/apply:os.system ['touch {MARKER}']\n"
                                     "version: 1\n", "tag:yaml.org,2002:python/object/apply:os.system"),
    "json-deep": (f"{SIM}.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "nested deeper than 100"),
    "json-torn": (f"{SIM}.jsonl", None, "line 3"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tampered_cassette_is_refused_with_exit_2_naming_file_and_limit(case, tmp_path):
    name, text, named = CASES[case]
    fixture = tampered(tmp_path, name, torn() if text is None else text)
    done = replay(fixture, tmp_path / "replayed")
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    message = " ".join(done.stderr.split())
    assert f"cassettes/{name}" in message and named in message, message
    assert "Traceback" not in done.stderr
    assert not (tmp_path / MARKER).exists()


def test_python_m_shiftbox_vcr_refuses_a_deep_cassette_with_exit_2(tmp_path):
    cassette, program = tmp_path / "agent.yaml", tmp_path / "agent.py"
    cassette.write_text(CASES["yaml-deep-flow"][1])
    program.write_text("print('ran')\n")
    env = {**os.environ, "SHIFTBOX_VCR_CASSETTE": str(cassette), "SHIFTBOX_RECORD_MODE": "none"}
    done = subprocess.run([sys.executable, "-m", "shiftbox.vcr", str(program)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert str(cassette) in done.stderr and "nested deeper than 100" in done.stderr and "ran" not in done.stdout
