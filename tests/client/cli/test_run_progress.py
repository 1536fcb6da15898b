"""`shiftbox run`'s progress bar redraws itself (rich's refresh thread, 10 times a second) only where a redraw shows,
a terminal: to a file or a pipe rich prints only the bar's final state, which stays as it was."""

from __future__ import annotations

import threading
from io import StringIO
from types import SimpleNamespace

import pytest
from rich.console import Console

import shiftbox.cli.run as run_cli


def _redrawing() -> bool:
    return any(type(thread).__name__ == "_RefreshThread" for thread in threading.enumerate())


@pytest.mark.parametrize("terminal", [False, True])
def test_the_bar_redraws_itself_only_on_a_terminal(monkeypatch, terminal):
    during: list[bool] = []

    def run_evaluation(plan, *, on_start, on_done, on_rerun):
        on_start(2, 0)
        during.append(_redrawing())
        for _ in range(2):
            on_done(None)
        return "result"

    monkeypatch.setattr(run_cli, "run_evaluation", run_evaluation)
    written = StringIO()
    console = Console(file=written, force_terminal=terminal, width=80)
    assert run_cli.run_with_progress(SimpleNamespace(out="out"), console) == "result"
    assert during == [terminal]
    assert "simulations" in written.getvalue() and "2/2" in written.getvalue()  # the final state, either way
