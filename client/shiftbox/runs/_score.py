"""Scoring a run: its trajectories read once, scored per agent with the chosen definitions, and metrics.json."""

from __future__ import annotations

import json
from pathlib import Path

from ..metrics import RunMetrics, SimulationMetrics, compute_run_metrics
from ..trajectory import Trajectory
from ._files import TASKS_FILE, read_run

METRICS_FILE = "metrics.json"
COMPAT_MODES = ("agentchangebench",)
JUDGE_OPTIONS = {"api_base": str, "temperature": float, "max_retries": int}


def metrics_document(run_metrics: RunMetrics, sims: list[SimulationMetrics]) -> str:
    """The metrics file: run aggregates plus every simulation's scores; no timings, so replays compare equal."""
    doc = {"run": run_metrics.model_dump(mode="json"), "simulations": [s.model_dump(mode="json") for s in sims]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


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

        return compat_run_metrics(trajectories, tasks)
    return compute_run_metrics(trajectories, tasks, judge=judge, success_threshold=success_threshold)


def make_judge(spec: str | None, options: dict[str, str] | None = None):
    """`litellm:<model>` with options api_base, temperature, max_retries; None: the deterministic detector only.

    API keys come from the provider's usual environment variable, never from the command line.
    """
    if spec is None:
        if options:
            raise ValueError("--judge-arg needs --judge")
        return None
    kind, _, model = spec.partition(":")
    if kind != "litellm" or not model:
        raise ValueError(f"--judge {spec!r}: use litellm:<model>, e.g. litellm:openai/gpt-4.1")
    kwargs = {}
    for key, value in (options or {}).items():
        if key not in JUDGE_OPTIONS:
            raise ValueError(f"--judge-arg {key!r} is not known; use one of: {', '.join(JUDGE_OPTIONS)}")
        kwargs[key] = JUDGE_OPTIONS[key](value)
    from ..metrics import LLMJudge

    return LLMJudge(model, **kwargs)
