"""`run_evaluation` hands back its result without writing it out as text: on Python 3.11, asyncio's runner, as it
restores the Ctrl-C handler of the main thread, formats that handler (which names the run's task, and so its
result: every trajectory, 2.5 MB of text at 200 simulations) into an error message it then discards, twice: about
0.06 s of CPU each at 200 simulations, growing with the run."""

from __future__ import annotations

import threading

from shiftbox.runs import RunResult, plan_run, run_evaluation
from tests.client.harness import HANDWRITTEN


def test_a_run_in_the_main_thread_never_formats_its_result(tmp_path, monkeypatch):
    assert threading.current_thread() is threading.main_thread()  # where the runner swaps the Ctrl-C handler
    formatted = []
    monkeypatch.setattr(RunResult, "__repr__", lambda self: formatted.append(self) or "RunResult(...)")
    result = run_evaluation(plan_run(HANDWRITTEN, tmp_path / "run", agent="scripted:oracle",
                                     task_ids=["hw_banking_001"]))
    assert [t.task_id for t in result.trajectories] == ["hw_banking_001"]
    assert formatted == []
