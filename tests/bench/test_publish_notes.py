"""`make bench --publish` rewrites docs/benchmarks.md but keeps its hand-written measurement notes."""

from __future__ import annotations

import pytest

from tests.conftest import REPO


@pytest.fixture
def bench_run(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import run

    return run


def test_the_notes_are_kept_from_their_heading_to_the_end(bench_run, tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("# shiftbox benchmarks\n\n- **a row**: x=1\n\nProse.\n\n## Measurement notes\n\nBefore 2 ms, after 1 ms.\n")
    assert bench_run.kept_notes(page) == "## Measurement notes\n\nBefore 2 ms, after 1 ms.\n"


def test_a_page_without_notes_or_no_page_keeps_nothing(bench_run, tmp_path):
    page = tmp_path / "benchmarks.md"
    assert bench_run.kept_notes(page) == ""
    page.write_text("# shiftbox benchmarks\n\nThe words ## Measurement notes inside a line are not the heading.\n")
    assert bench_run.kept_notes(page) == ""


def test_the_published_page_has_its_notes_section():
    notes = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert notes.count("\n## Measurement notes\n") == 1
