"""Replay speed: shiftbox's boundary cassettes against vcrpy HTTP cassettes (`--llm-cassettes http`), side by side.

    uv run python bench/run.py --only vcr        (or: uv run python bench/vcr_replay.py)

The same scripted conversations (LLM agent and LLM user on litellm's fast path, `ScriptedLLM` behind the fake
server, the hand-written banking tasks x 2 trials) are recorded twice, once per kind of cassette; the server is then
stopped and both fixtures are replayed alternately (`replay_fixture`, tools from the transcripts so the LLM side is
what differs), in this process, `ROUNDS` times each: CPU time (`time.process_time`) per replay and per LLM call. Then
each is replayed once by `shiftbox replay` in a fresh process (CPU time of the child: start-up included, and a
boundary replay never imports litellm).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import shiftbox
from shiftbox.tasks import load_task_file
from shiftbox.testing import fake_openai
from shiftbox.testing.fake_brains import ScriptedLLM

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json"
ROUNDS = 5
KEY_ENV = "SHIFTBOX_BENCH_KEY"


def record(tmp: Path) -> dict[str, Path]:
    """The two fixtures of the same conversations, recorded against one fake server."""
    fixtures = {}
    os.environ[KEY_ENV] = "sk-bench"
    with fake_openai(ScriptedLLM(load_task_file(TASKS).tasks)) as server:
        args = {"api_base": server.base_url, "api_key_env": KEY_ENV}
        for kind in ("boundary", "http"):
            plan = shiftbox.plan_run(TASKS, tmp / f"live-{kind}", agent="litellm:openai/fake-model",
                                     user="litellm:openai/fake-model", agent_args=args, user_args=args, trials=2,
                                     options=shiftbox.ExecutionOptions(concurrency=4), record=tmp / kind,
                                     llm_cassettes=kind)
            shiftbox.run_evaluation(plan)
            fixtures[kind] = tmp / kind
    del os.environ[KEY_ENV]
    return fixtures


def llm_calls(fixture: Path) -> int:
    return int(sum(u.calls for t in shiftbox.read_trajectories(fixture) for u in t.usage.values()))


def replay_cpu_s(fixture: Path, out: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one in-process replay, checked identical."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = shiftbox.replay_fixture(fixture, out, "transcript")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if not result.identical:
        raise SystemExit(f"bench: replay of {fixture.name} diverged: {result.failed} {result.problems[:3]}")
    return cpu, wall


def fresh_process_cpu_s(fixture: Path, out: Path) -> float:
    """CPU seconds of `shiftbox replay --tools transcript` in a process of its own (children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "shiftbox.cli", "replay", str(fixture), "--out", str(out), "--tools",
                    "transcript"], check=True, capture_output=True, env={**os.environ, KEY_ENV: ""})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_vcr_replay(rounds: int = ROUNDS) -> list[dict]:
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        fixtures = record(tmp)
        calls = {kind: llm_calls(fixture) for kind, fixture in fixtures.items()}
        samples: dict[str, list[tuple[float, float]]] = {kind: [] for kind in fixtures}
        for n in range(rounds + 1):  # round 0 warms up (imports, caches) and is not counted
            for kind, fixture in fixtures.items():
                sample = replay_cpu_s(fixture, tmp / f"replay-{kind}-{n}")
                if n:
                    samples[kind].append(sample)
        cold = {kind: fresh_process_cpu_s(fixture, tmp / f"cold-{kind}") for kind, fixture in fixtures.items()}
    rows = []
    boundary_cpu = statistics.median(cpu for cpu, _ in samples["boundary"])
    for kind in fixtures:
        cpu = statistics.median(c for c, _ in samples[kind])
        rows.append({
            "bench": f"replay, LLM from {'boundary cassettes' if kind == 'boundary' else 'vcrpy HTTP cassettes'}"
                     " (banking hand-written x 2, tools from transcripts)",
            "cpu_ms_per_replay": round(cpu * 1000, 1),
            "cpu_ms_per_llm_call": round(cpu * 1000 / calls[kind], 3),
            "wall_ms_per_replay": round(statistics.median(w for _, w in samples[kind]) * 1000, 1),
            "x_boundary_cpu": round(cpu / boundary_cpu, 2),
            "fresh_process_cpu_s": round(cold[kind], 2),
            "llm_calls": calls[kind],
            "rounds": rounds,
        })
    return rows


if __name__ == "__main__":
    for row in bench_vcr_replay():
        print(row)
