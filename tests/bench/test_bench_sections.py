"""Every `make bench` section runs (no CI job runs the whole bench): the in-process sections at smoke sizes, and the
process-spawning sections (llm, executors, HTTP load) at their full sizes with the spawned processes replaced by
stand-ins, so the page `--publish` would write is rendered from their real rows and checked to report every one of
issue 34's targets with the current columns. Figures are never asserted: they are measured in `make bench`."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from types import SimpleNamespace

import anyio
import pytest

from tests.conftest import REPO

BENCH = REPO / "bench"


@pytest.fixture
def bench(monkeypatch):
    """bench/'s modules, imported as run.py imports them (bench/ on sys.path)."""
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import executors
    import http_load
    import llm_throughput
    import run

    return SimpleNamespace(run=run, llm=llm_throughput, executors=executors, http_load=http_load)


# -- the in-process sections, at smoke sizes ---------------------------------------------------------------------


def test_the_in_process_sections_run_at_smoke_sizes(bench):
    run = bench.run
    trips = anyio.run(run.bench_round_trips, 10, ("in-memory", "http"))
    assert {row["bench"].rsplit(", ", 1)[1] for row in trips} == {"in-memory", "http"}
    assert all(row["n"] == 10 and row["tool_median_ms"] > 0 and row["echo_median_ms"] > 0 for row in trips)
    episodes = run.bench_fresh_episode(5)
    assert all(row["n"] == 5 for row in episodes) and len(episodes) >= 3  # a row per domain, the reference's beside
    memory = run.bench_episode_memory(10)
    assert [row["n"] for row in memory] == [10, 10]
    sims = anyio.run(run.bench_simulations, (1, 8), 8)
    assert [row["simulations"] for row in sims] == [8, 8] and all(row["sims_per_s"] > 0 for row in sims)
    replays = run.bench_replay()
    assert replays and all(row["ok"] is True and row["simulations"] > 0 for row in replays)
    metrics, = run.bench_metrics(40)
    assert metrics["bench"].startswith("metrics over 40 simulations")


def test_the_http_load_section_runs_at_smoke_sizes(bench):
    rows = anyio.run(lambda: bench.http_load.bench_http_load(2, 2, 1, ("2026-07-28",)))
    sdk, ours, ratio = rows
    assert (sdk["server"], ours["server"]) == ("sdk", "shiftbox") and sdk["calls"] == ours["calls"] == 4
    assert ratio["errors"] == 0 and ratio["target"].startswith("2x the SDK's calls/s in every round, 0 errors: ")


def test_the_http_load_ratios_and_their_target_per_version(bench):
    def measured(version, server, calls_per_s, cpu_ms):
        return {"protocol": version, "server": server, "calls_per_s": calls_per_s, "server_cpu_ms_per_call": cpu_ms,
                "errors": 0}

    rows = [measured("A", "sdk", 100, 0.8), measured("A", "shiftbox", 250, 0.4),  # round 1: 2.5x, 2x less CPU
            measured("A", "sdk", 100, 0.9), measured("A", "shiftbox", 210, 0.3),  # round 2: 2.1x, 3x less CPU
            measured("B", "sdk", 100, 0.8), measured("B", "shiftbox", 150, 0.0)]  # 1.5x; no CPU tick on ours
    a, b = bench.http_load.ratio_rows(rows, ("A", "B"))
    assert (a["x_sdk_calls_per_s_min"], a["x_sdk_calls_per_s_max"]) == (2.1, 2.5)
    assert (a["x_less_server_cpu_per_call_min"], a["x_less_server_cpu_per_call_max"]) == (2.0, 3.0)
    assert a["target"].endswith(": met") and b["target"].endswith(": NOT met")
    assert b["x_less_server_cpu_per_call_min"] is None and b["x_sdk_calls_per_s_min"] == 1.5


def test_the_container_section_says_why_it_skips_without_an_engine(bench, monkeypatch):
    monkeypatch.setenv("SHIFTBOX_DOCKER", "/nonexistent/docker")
    rows = anyio.run(bench.run.bench_containers, 10, 1)
    assert [row["bench"] for row in rows] == ["containers"] and rows[0]["skipped"]


# -- the process-spawning sections at full size, processes stood in for -------------------------------------------


@pytest.fixture
def stood_in(bench, monkeypatch):
    """llm_throughput's and executors' processes (fake server, `shiftbox run`, raw httpx, a Ray cluster) and
    http_load's servers replaced by stand-ins: the sections' own row-making code runs, at full size, in ms."""

    def run_side(server, side, tmp, tag, record=None, capture=False):
        """What `run_side` returns for a side that played the script: 1 s of start-up, 16 requests a simulation."""
        n = side.simulations
        completions = n * bench.llm.LLM_CALLS_PER_SIM
        window = {"requests": completions, "first": 101.0, "last": 101.0 + n / 10, "first_cpu_s": 0.5,
                  "last_cpu_s": 0.5 + completions / 1000, "server_cpu_s": completions / 2000}
        return bench.llm.Measured(n, 1.5 + n / 10, 0.6 + n / 50, 1.0, window, 100.0, None,
                                  {"llm_pct": 80.0, "mcp_pct": 15.0, "harness_pct": 5.0})

    @contextlib.contextmanager
    def server(script=None):
        yield SimpleNamespace(base_url="http://127.0.0.1:9", pid=0)

    async def raw_httpx(base_url, bodies, concurrency):
        return 1.0

    @contextlib.contextmanager
    def cluster(num_cpus):
        yield SimpleNamespace(get_runtime_context=lambda: SimpleNamespace(gcs_address="127.0.0.1:6379"))

    async def measure(server, version, episodes, calls, accounts):
        return {"protocol": version, "server": server, "calls_per_s": 100 if server == "sdk" else 300,
                "server_cpu_ms_per_call": 0.6, "errors": 0, "bench": f"HTTP load, protocol {version}, {server}"}

    for module in (bench.llm, bench.executors):
        monkeypatch.setattr(module, "fake_server_process", server)
        monkeypatch.setattr(module, "run_side", run_side)
        monkeypatch.setattr(module, "conversation_bodies", lambda server, tmp: [b"{}"])
    monkeypatch.setattr(bench.llm, "raw_httpx_cpu_ms", raw_httpx)
    monkeypatch.setattr(bench.llm, "litellm_import_seconds", lambda: 4.0)
    monkeypatch.setattr(bench.executors, "ray_installed", lambda: True)
    monkeypatch.setattr(bench.executors, "local_ray_cluster", cluster)
    monkeypatch.setattr(bench.http_load, "measure", measure)
    monkeypatch.setattr(bench.http_load, "accounts_to_call", lambda: [])
    return bench


def test_a_full_run_reports_every_target_of_issue_34_with_the_current_columns(stood_in):
    run = stood_in.run
    rows = run.bench_llm() + run.bench_executors() + anyio.run(run.bench_http_load)
    assert run.missing_targets(rows) == []
    page = run.to_markdown({"machine": "stand-in", "rows": rows})
    assert "x_reference" not in page and "2.28" not in page  # the constant the issue removed, and its column
    fast, = (row for row in rows if row["bench"].startswith("whole process: fast path (httpx), concurrency 8, 100 "))
    for column in ("sims_per_s", "window_sims_per_s", "startup_s", "startup_cpu_s", "exit_after_last_request_s",
                   "cpu_ms_per_completion_in_window", "raw_httpx_cpu_ms_per_completion", "x_raw_httpx_cpu",
                   "load_1m_at_start"):
        assert f"{column}=" in page and column in fast
    ratio, = (row for row in rows if row["bench"].startswith("fast path / litellm path"))
    assert {"whole_process_x", "window_x", "cpu_per_sim_x_less", "target"} <= set(ratio)
    # the full sizes: 100 simulations a side, 200 for the workers sides, 3 rounds
    assert ratio["rounds"] == 3 and any(row["bench"].startswith("--workers 2 / one process, 200 ") for row in rows)


def test_the_concurrency_rows_run_enough_simulations_to_hold_that_many_in_flight_on_both_sides(stood_in):
    """The concurrency 256 row ran 100 simulations, so at most 100 were ever in flight, and was compared with the
    concurrency 8 side's 100. Now each row above 8 runs at least twice its concurrency, as does its base."""
    rows = {row["bench"]: row for row in stood_in.run.bench_llm()}
    for c in (64, 256):
        side, = (row for name, row in rows.items() if name.startswith(f"whole process: fast path (httpx), concurrency {c}, "))
        n = side["simulations"]
        assert n >= 2 * 256 and n % len(stood_in.llm.CUSTOMERS) == 0 and "in flight" not in side["bench"]
        base, = (row for name, row in rows.items()
                 if name.startswith(f"whole process: fast path (httpx), concurrency 8, {n} simulations"))
        ratio = rows[f"fast path, concurrency {c} / concurrency 8, {n} simulations"]
        # the stand-in's figures depend on the simulations only: sides of one size are alike, 1.0x
        assert base["simulations"] == n and ratio["whole_process_x"] == 1.0 and ratio["cpu_per_sim_x_less"] == 1.0
    assert rows["whole process: fast path (httpx), concurrency 8, 100 simulations"]["simulations"] == 100


def test_a_run_without_a_section_names_its_missing_targets(stood_in):
    run = stood_in.run
    rows = run.bench_llm() + anyio.run(run.bench_http_load)  # the executors section broke: no rows
    assert run.missing_targets(rows) == [
        "a long-lived Ray cluster adds (--ray-address (a long-lived cluster))",
        "a long-lived Ray cluster adds (--ray-keep-actors)"]
    without_c256 = [row for row in rows if "concurrency 256" not in row["bench"]]
    assert run.missing_targets(without_c256)[:2] == [
        "CPU per completion <= 1.5x raw httpx (whole process: fast path (httpx), concurrency 256,)",
        "concurrency 256 no slower than 8"]


def test_the_attack_rounds_on_http_episodes_run_at_smoke_sizes(tmp_path):
    """`make attacks`' fuzz and load rounds drive their episodes with http_load's client: a change of that client
    must not leave them broken (they reported "the round itself broke" when its signature changed)."""
    done = subprocess.run([sys.executable, str(BENCH / "attacks.py"), "--only", "fuzz", "load", "--fuzz", "10",
                           "--episodes", "3", "--rounds", "1", "--budget", "120"], capture_output=True, text=True,
                          timeout=150, cwd=REPO, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                                      "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    fuzz, load = (line for line in done.stdout.splitlines() if line.startswith(("fuzz:", "load:")))
    assert "crashes=0" in fuzz and fuzz.endswith("-> ok") and "lost_writes=0" in load and load.endswith("-> ok")
