"""`shiftbox replay` reads the transcripts it promises to compare: every tampering of a committed fixture's
`transcripts/` fails the replay, naming simulation, call and field (issue 15 item 12)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "banking-litellm"
SIM, FILE = "hw_banking_001#0", "hw_banking_001_0.jsonl"
runner = CliRunner()


def edit_call(n: int, change: Callable[[dict], None]) -> Callable[[Path], None]:
    """Change tools/call line n (0-based, after the tools/list line) of SIM's transcript."""
    def tamper(transcript: Path) -> None:
        lines = transcript.read_text().splitlines()
        call = json.loads(lines[n + 1])
        change(call)
        lines[n + 1] = json.dumps(call, sort_keys=True)
        transcript.write_text("\n".join(lines) + "\n")
    return tamper


def append_call(transcript: Path) -> None:
    lines = transcript.read_text().splitlines()
    transcript.write_text("\n".join(lines + [lines[-1]]) + "\n")


def _set(path: list[str | int], value: object) -> Callable[[dict], None]:
    def change(call: dict) -> None:
        target = call
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


TAMPERINGS = {
    "result": (edit_call(1, _set(["result", "transactions", 0, "amount"], 1.0)),
               ["call 1", "get_transactions", "result.transactions[0].amount"]),
    "arguments": (edit_call(0, _set(["arguments", "phone_number"], "+10000000000")),
                  ["call 0", "get_customer_by_phone", "arguments.phone_number"]),
    "error_kind": (edit_call(2, _set(["error_kind"], "not_found")), ["call 2", "file_dispute", "error_kind"]),
    "appended call": (append_call, ["call 3", "file_dispute"]),
    "deleted file": (lambda transcript: transcript.unlink(), [f"transcripts/{FILE}"]),
}


@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
@pytest.mark.parametrize("kind", list(TAMPERINGS))
def test_a_tampered_transcript_fails_the_replay_naming_simulation_call_and_field(tmp_path, kind, tools):
    fixture = tmp_path / "fx"
    shutil.copytree(FIXTURE, fixture)
    tamper, expected = TAMPERINGS[kind]
    tamper(fixture / "transcripts" / FILE)
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "out"), "--tools", tools])
    assert res.exit_code == 1, res.output
    assert SIM in res.output, res.output
    for text in expected:
        assert text in res.output, res.output


def edit_tools(transcript: Path) -> None:
    lines = transcript.read_text().splitlines()
    listing = json.loads(lines[0])
    listing["tools"][0]["description"] += " (edited)"
    transcript.write_text("\n".join([json.dumps(listing, sort_keys=True)] + lines[1:]) + "\n")


def test_a_tampered_tools_list_is_named(tmp_path):
    fixture = tmp_path / "fx"
    shutil.copytree(FIXTURE, fixture)
    edit_tools(fixture / "transcripts" / FILE)  # one transcript differs from the others
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "one"), "--tools", "transcript"])
    assert res.exit_code == 1 and f"{SIM}: the tools/list of transcripts/{FILE}" in res.output, res.output
    assert "[0].description" in res.output
    for transcript in (fixture / "transcripts").iterdir():
        if transcript.name != FILE:
            edit_tools(transcript)  # every transcript: consistent, but not what the server lists
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "all")])
    assert res.exit_code == 1 and "tool drift in tools/list" in res.output and "[0].description" in res.output, \
        res.output


def test_an_untampered_copy_still_replays(tmp_path):
    fixture = tmp_path / "fx"
    shutil.copytree(FIXTURE, fixture)
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "out"), "--tools", "transcript"])
    assert res.exit_code == 0, res.output
