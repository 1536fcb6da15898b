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


def test_a_fresh_run_hands_back_what_it_wrote_without_reading_it_again(tmp_path, monkeypatch):
    """The trajectories of a run into a new directory are the ones it has just written, in the file's order: kept as
    they are written, not read back from trajectories.jsonl (about 0.2 ms of CPU a simulation); a resumed run reads
    the earlier ones."""
    from pathlib import Path

    from shiftbox.trajectory import read_trajectories

    reads = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or read_bytes(self))
    out = tmp_path / "run"
    result = run_evaluation(plan_run(HANDWRITTEN, out, agent="scripted:oracle", trials=2,
                                     task_ids=["hw_banking_001", "hw_banking_002"]))
    assert "trajectories.jsonl" not in reads
    written = read_trajectories(out)
    assert len(written) == 4
    assert [t.model_dump_json() for t in result.trajectories] == [t.model_dump_json() for t in written]

    reads.clear()
    (out / "trajectories.jsonl").write_bytes(b"".join((out / "trajectories.jsonl").read_bytes().splitlines(True)[:3]))
    resumed = run_evaluation(plan_run(HANDWRITTEN, out, agent="scripted:oracle", trials=2, resume=True,
                                      task_ids=["hw_banking_001", "hw_banking_002"]))
    assert [t.model_dump_json() for t in resumed.trajectories] == [t.model_dump_json() for t in read_trajectories(out)]
    assert len(resumed.trajectories) == 4 and resumed.resumed == 3
