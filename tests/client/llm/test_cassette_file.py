"""The limits every cassette file is checked against before it is parsed (size first, without reading it); replaying
a fixture whose cassette breaks one: tests/client/replay/test_cassette_limits.py."""

from __future__ import annotations

import pytest

from shiftbox.errors import CassetteFileError
from shiftbox.llm._cassette import check_cassette_file
from tests.client.harness import REPO


def test_a_too_large_cassette_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    with path.open("wb") as out:
        out.truncate(65 * 2**20)  # sparse: 65 MiB of zeros, never read
    with pytest.raises(CassetteFileError, match=r"big.jsonl is 68157440 bytes, over the limit of 67108864"):
        check_cassette_file(path)


def test_the_committed_cassettes_pass_the_limits():
    cassettes = sorted((REPO / "fixtures").glob("*/*cassettes/*"))
    assert len(cassettes) > 30
    for path in cassettes:
        check_cassette_file(path)

