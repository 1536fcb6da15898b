"""bench/llm_throughput.py's ceiling row: the arithmetic worked by hand (the bench itself is never timed in tests)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO


@pytest.fixture
def llm_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import llm_throughput

    return llm_throughput


def measured(llm_bench, seconds: float, server_cpu_s: float = 0.0, problem: str | None = None):
    return llm_bench.Measured(simulations=10, seconds=seconds, cpu_s=1.0, load_1m=0.5,
                              window={"server_cpu_s": server_cpu_s, "requests": 160}, started=0.0, problem=problem,
                              split={})


def test_the_ceiling_is_the_litellm_time_over_start_up_plus_the_slower_of_client_floor_and_fake_server(llm_bench):
    side = llm_bench.Side("fast", simulations=10)
    completions = 10 * llm_bench.LLM_CALLS_PER_SIM  # 160: 16 LLM calls a simulation
    assert completions == 160
    # round 1: raw httpx 2 ms x 160 = 0.32 s is above the fake server's 0.2 s: floor 1.32 s, litellm 6.6 s -> 5.0
    # round 2: the fake server's 0.6 s is above 0.32 s: floor 1.6 s, litellm 8.0 s -> 5.0; round 3: 13.2/1.32 = 10.0
    fast = [measured(llm_bench, 2.0, 0.2), measured(llm_bench, 2.0, 0.6), measured(llm_bench, 2.0, 0.1)]
    litellm = [measured(llm_bench, 6.6), measured(llm_bench, 8.0), measured(llm_bench, 13.2)]
    row = llm_bench.ceiling_row(side, fast, litellm, raw_httpx_ms=2.0)
    assert row["ceiling_x"] == 5.0  # the median of 5.0, 5.0, 10.0
    assert row["target"].endswith("NOT met")
    assert "FAILED" not in row


def test_a_side_that_did_not_play_the_script_fails_the_ceiling_row(llm_bench):
    side = llm_bench.Side("fast", simulations=10)
    bad = measured(llm_bench, 2.0, problem="simulation 3: the agent never called the tool")
    row = llm_bench.ceiling_row(side, [bad], [measured(llm_bench, 6.0)], raw_httpx_ms=1.0)
    assert row["FAILED"] == "simulation 3: the agent never called the tool"
