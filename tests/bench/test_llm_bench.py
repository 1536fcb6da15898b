"""The LLM throughput bench's smoke test: `--quick` runs whole-process sides against the fake server and
reports their figures, and a side that did not play the scripted conversation fails loudly (its rows marked,
nonzero exit). Figures are never asserted: they are measured in `make bench`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BENCH = REPO / "bench" / "llm_throughput.py"
DEVIATING = Path(__file__).with_name("deviating_server.py")


def run_bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, str(BENCH), "--quick", *args], capture_output=True, text=True,
                          timeout=280, env=env, cwd=REPO)


@pytest.mark.timeout(300)  # two `shiftbox run` processes and the fake server; about 30 s on an idle machine
def test_a_side_that_misplays_marks_its_rows_and_fails_the_bench():
    done = run_bench("--sides", "fast", "litellm", "--script", str(DEVIATING))
    assert done.returncode == 1, done.stderr
    rows = {row["bench"]: row for row in json.loads(done.stdout)["rows"]}
    fast, = (row for name, row in rows.items() if name.startswith("whole process: fast path"))
    litellm, = (row for name, row in rows.items() if name.startswith("whole process: litellm path"))
    ratio, = (row for name, row in rows.items() if name.startswith("fast path / litellm path"))

    # the fast path played the script: its row counts, with the whole-process and the window figures
    assert "FAILED" not in fast, fast["FAILED"]
    assert fast["simulations"] == 2 and fast["rounds"] == 1
    assert fast["sims_per_s"] > 0 and fast["window_sims_per_s"] > 0 and fast["cpu_ms_per_sim"] > 0
    assert fast["startup_s"] > 0 and len(fast["load_1m_at_start"]) == 1
    assert fast["target"].startswith("CPU per completion <= 1.5x raw httpx, 2 in flight: ")
    # the floor: raw httpx posting the simulation's own bodies with as many in flight, and with one
    assert fast["raw_httpx_cpu_ms_per_completion"] > 0 and fast["x_raw_httpx_cpu_at_concurrency_1"] > 0
    assert set(json.loads(done.stdout)["raw_httpx_cpu_ms_per_completion"]) == {"concurrency 1", "concurrency 2"}

    # the litellm path's agent said something else: its row and the comparison that uses it are marked
    assert "the agent's last answer is not the scripted one" in litellm["FAILED"]
    assert "2 of 2 simulations" in litellm["FAILED"]
    assert ratio["FAILED"] == litellm["FAILED"]
    assert ratio["target"].startswith("whole process >= 10x the litellm path: ")
    assert "bench: FAILED" in done.stderr and litellm["FAILED"] in done.stderr


@pytest.mark.timeout(300)  # live, two replays, two replays of one simulation; about 15 s on an idle machine
def test_the_replay_rows_say_how_far_a_replay_can_get_past_live():
    done = run_bench("--sides", "fast", "replay")
    assert done.returncode == 0, done.stderr
    rows = {row["bench"]: row for row in json.loads(done.stdout)["rows"]}
    live, = (row for name, row in rows.items() if name.startswith("whole process: fast path"))
    for tools in ("reexecute", "transcript"):
        one, = (row for name, row in rows.items()
                if name.startswith(f"whole process: `shiftbox replay --tools {tools}` of one simulation"))
        assert "FAILED" not in one and one["simulations"] == 1
        ceiling, = (row for name, row in rows.items() if name.startswith(f"replay's ceiling ({tools})"))
        assert "FAILED" not in ceiling
        # one round: the ceiling is live's seconds over the replay of one's (both rounded to 0.01 s in their rows)
        low, high = (live["seconds"] - 0.005) / (one["seconds"] + 0.005), (live["seconds"] + 0.005) / (one["seconds"] - 0.005)
        assert low - 0.005 <= ceiling["ceiling_x"] <= high + 0.005, (ceiling, live["seconds"], one["seconds"])
        assert ceiling["cpu_ceiling_x"] > 0
        reach = "within reach" if ceiling["ceiling_x"] >= 3 else "out of reach"
        assert ceiling["reach"] == f"replay >= 3x live: {reach}"
