"""Scoring a run: its trajectories read once, scored per agent with the chosen definitions, and metrics.json."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import CleanRunError
from ..llm import Cassette, check_endpoints
from ..metrics import (
    AgentScores,
    Retention,
    RunMetrics,
    SimulationMetrics,
    compute_run_metrics,
    retention,
    score_by_agent,
)
from ..trajectory import Trajectory
from ._files import TASKS_FILE, read_run
from ._preflight import refusal
from ._record import fixture_file_name

METRICS_FILE = "metrics.json"
COMPAT_MODES = ("agentchangebench",)
JUDGE_OPTIONS = {"api_base": str, "temperature": float, "max_retries": int, "rubric_window": int,
                 "rubric_stride": int}


def metrics_document(run_metrics: RunMetrics, sims: list[SimulationMetrics], *, indent: int | None = 2) -> str:
    """The metrics file: run aggregates plus every simulation's scores; no timings, so replays compare equal
    (`indent=None`: on one line, as C's encoder writes it, to compare two runs' metrics)."""
    doc = {"run": run_metrics.model_dump(mode="json"), "simulations": [s.model_dump(mode="json") for s in sims]}
    return json.dumps(doc, indent=indent, sort_keys=True) + "\n"


def write_metrics_file(run_dir: Path, run_metrics: RunMetrics, sims: list[SimulationMetrics]) -> Path | None:
    """RUN_DIR/metrics.json, when RUN_DIR is one run directory (a folder of runs gets none); returns its path."""
    if not (run_dir / TASKS_FILE).exists():
        return None
    path = run_dir / METRICS_FILE
    path.write_text(metrics_document(run_metrics, sims))
    return path


def score_run(run_dir: Path, compat: str | None = None, judge=None,
              success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """One agent's run (a run directory or a folder of them); several agents: use `score_by_agent`."""
    trajectories, tasks = read_run(Path(run_dir))
    return score_trajectories(trajectories, tasks, compat, judge, success_threshold)


def score_trajectories(trajectories: list[Trajectory], tasks: dict, compat: str | None = None, judge=None,
                       success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """One agent's trajectories scored with the chosen definitions (default, or a compat mode)."""
    if compat is not None and compat not in COMPAT_MODES:
        raise ValueError(f"compat mode {compat!r} is not known; choose one of: {', '.join(COMPAT_MODES)}")
    if compat == "agentchangebench":
        from ..agentchangebench import compat_run_metrics

        return compat_run_metrics(trajectories, tasks, judge=judge)
    return compute_run_metrics(trajectories, tasks, judge=judge, success_threshold=success_threshold)


@dataclass(frozen=True)
class RunScores:
    """What `shiftbox metrics` reports: each agent's own scores when the runs hold several agents (`agents`),
    else the one agent's metrics and simulations, with retention against a clean run when one was given."""

    metrics: RunMetrics | None = None
    simulations: list[SimulationMetrics] | None = None
    retention: list[Retention] | None = None
    agents: dict[str, AgentScores] | None = None

    def scored_runs(self) -> list[RunMetrics]:
        return [s.metrics for s in self.agents.values()] if self.agents is not None else [self.metrics]


def measure_run(run_dir: Path, *, compat: str | None = None, judge=None, threshold: float = 1.0,
                clean: Path | None = None,
                judge_cassettes: Literal["record", "replay"] | None = None) -> RunScores:
    """Score a run directory, or a folder of runs (several agents: each scored on its own, never pooled), and write
    RUN_DIR/metrics.json for one agent's run in the default definitions. `clean`: a run of the same tasks without
    goal shifts, to report retention against (CleanRunError when it cannot be scored). `judge_cassettes`: whether
    `judge` records or replays its calls (`make_judge(record=, replay=)`): per simulation of one agent's run."""
    trajectories, tasks = read_run(run_dir)
    if compat is None and len({t.agent for t in trajectories}) > 1:
        if clean is not None or judge_cassettes is not None:
            raise ValueError("--clean, --judge-record and --judge-replay take one agent's runs; give a run "
                             "directory of one agent")
        return RunScores(agents=score_by_agent(trajectories, tasks, judge=judge, success_threshold=threshold))
    run_metrics, sims = score_trajectories(trajectories, tasks, compat, judge, threshold)
    rows = None
    if clean is not None:
        try:
            clean_metrics, _ = score_run(clean, compat, None, threshold)
        except (FileNotFoundError, KeyError, ValueError) as exc:
            raise CleanRunError(exc) from exc
        rows = retention(run_metrics, clean_metrics)
    if compat is None:
        write_metrics_file(run_dir, run_metrics, sims)
    return RunScores(metrics=run_metrics, simulations=sims, retention=rows)


def judge_cassettes(folder: Path, mode: Literal["record", "replay"]) -> Callable[[str], Cassette]:
    """A judge's cassettes: one per simulation, `FOLDER/<simulation>.jsonl` (named like a fixture's)."""
    return lambda simulation_id: Cassette(simulation_id, Path(folder) / fixture_file_name(simulation_id), mode)


def make_judge(spec: str | None, options: dict[str, str] | None = None, *, record: Path | None = None,
               replay: Path | None = None, preflight: bool = False):
    """`litellm:<model>` with options api_base, temperature, max_retries, rubric_window, rubric_stride; None: the
    deterministic detector only. `record` / `replay`: a folder of judge cassettes to write, or to answer from.
    `preflight`: unless it answers from cassettes, the judge's endpoint answers one cheap request first
    (`shiftbox.llm.check_endpoints`): a missing or refused key, or nobody listening, is a ValueError naming it.

    API keys come from the provider's usual environment variable, never from the command line.
    """
    if spec is None:
        if options or record or replay:
            raise ValueError("--judge-arg, --judge-record and --judge-replay need --judge")
        return None
    if record is not None and replay is not None:
        raise ValueError("--judge-record and --judge-replay exclude each other")
    if replay is not None and not Path(replay).is_dir():
        raise ValueError(f"--judge-replay {replay}: no such folder of judge cassettes")
    kind, _, model = spec.partition(":")
    if kind != "litellm" or not model:
        raise ValueError(f"--judge {spec!r}: use litellm:<model>, e.g. litellm:openai/gpt-4.1")
    kwargs = {}
    for key, value in (options or {}).items():
        if key not in JUDGE_OPTIONS:
            raise ValueError(f"--judge-arg {key!r} is not known; use one of: {', '.join(JUDGE_OPTIONS)}")
        try:
            kwargs[key] = JUDGE_OPTIONS[key](value)
        except ValueError:
            raise ValueError(f"--judge-arg {key}={value}: not a {JUDGE_OPTIONS[key].__name__}") from None
    from ..metrics import LLMJudge

    cassettes = judge_cassettes(record, "record") if record else judge_cassettes(replay, "replay") if replay else None
    judge = LLMJudge(model, cassettes=cassettes, **kwargs)
    if preflight and replay is None:
        problems = check_endpoints(judge.endpoints())
        if problems:
            raise ValueError(refusal(problems, "scoring"))
    return judge
