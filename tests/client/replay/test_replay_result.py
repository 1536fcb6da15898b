"""`replay_fixture` hands back its trajectories without writing them out as text: on Python 3.11, asyncio's runner,
as it restores the Ctrl-C handler of the main thread, formats that handler (which names the run's task, and so its
result: every trajectory replayed) into an error message it then discards, twice. The same fix as
`run_evaluation`'s (tests/client/runs/test_evaluate_result.py)."""

from __future__ import annotations

import threading

from shiftbox.replay import replay_fixture
from shiftbox.trajectory import Trajectory
from tests.client.replay import record_scripted


def test_a_replay_in_the_main_thread_never_formats_its_trajectories(tmp_path, monkeypatch):
    fixture = record_scripted(tmp_path)
    assert threading.current_thread() is threading.main_thread()  # where the runner swaps the Ctrl-C handler
    formatted = []
    monkeypatch.setattr(Trajectory, "__repr__", lambda self: formatted.append(self) or "Trajectory(...)")
    result = replay_fixture(fixture, tmp_path / "replayed")
    assert result.identical and result.simulations == 10
    assert formatted == []
