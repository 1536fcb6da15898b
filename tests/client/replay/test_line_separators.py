"""A recorded text may hold U+2028, U+2029 or U+0085: JSON carries them raw inside a string, and shiftbox writes them
so (pydantic does not escape them), but `str.splitlines()` also ends a line at each of them. The cassette and
transcript readers split on them, so a fixture whose LLM answer or tool result held one was refused as a line that is
not an interaction. A line of these files ends at "\\n" only (how they are written)."""

from __future__ import annotations

import json

from shiftbox.replay import ReplayHooks
from shiftbox.replay._fixture import Interaction, dump_json, read_transcript
from tests.client.replay import FIXTURES, offline_copy

SEPARATORS = "one\u2028two\u2029three\x85four"


def test_a_cassette_answer_holding_unicode_line_separators_is_replayed(tmp_path, monkeypatch):
    fixture = offline_copy(FIXTURES / "banking-litellm", tmp_path, monkeypatch)
    answers = {}
    for sim in ("hw_banking_001#0", "hw_banking_002#0"):  # read whole first, then with the tools list cut
        path = fixture / "cassettes" / f"{sim.replace('#', '_')}.jsonl"
        lines = path.read_text().split("\n")
        first = Interaction.model_validate_json(lines[0])
        odd = first.model_copy(update={"response": {**first.response, "note": SEPARATORS}})
        lines[0] = dump_json(odd)
        assert SEPARATORS in lines[0]  # written raw
        path.write_text("\n".join(lines))
        answers[sim] = odd
    hooks = ReplayHooks(fixture, "reexecute")
    for sim, odd in answers.items():
        assert hooks.cassette(sim).replay(odd.request)["note"] == SEPARATORS


def test_a_transcript_result_holding_unicode_line_separators_is_read(tmp_path):
    path = tmp_path / "hw_banking_001_0.jsonl"
    call = {"method": "tools/call", "name": "get_customer_by_id", "arguments": {}, "result": {"note": SEPARATORS}}
    path.write_text(json.dumps({"method": "tools/list", "tools": []}) + "\n"
                    + json.dumps(call, ensure_ascii=False) + "\n")
    assert read_transcript(path) == ([], [call])
