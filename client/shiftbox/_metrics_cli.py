"""`shiftbox metrics RUN_DIR`: score a run directory and write RUN_DIR/metrics.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from ._registry import parse_options
from ._run import TASKS_FILE, read_run
from .metrics import (
    AgentScores,
    RunMetrics,
    SimulationMetrics,
    compute_run_metrics,
    retention,
    score_by_agent,
)

METRICS_FILE = "metrics.json"
COMPAT_MODES = ("agentchangebench",)
err = Console(stderr=True, soft_wrap=True)


def reason(exc: Exception) -> str:
    """An exception's message for a one-line error (some carry no args; pydantic errors are many lines)."""
    if isinstance(exc, ValidationError):
        from ._run import describe_invalid

        return f"a run file does not parse ({describe_invalid(exc)})"
    return str(exc.args[0]) if exc.args else (str(exc) or type(exc).__name__)


def metrics_document(run_metrics: RunMetrics, sims: list[SimulationMetrics]) -> str:
    """The metrics file: run aggregates plus every simulation's scores; no timings, so replays compare equal."""
    doc = {"run": run_metrics.model_dump(mode="json"), "simulations": [s.model_dump(mode="json") for s in sims]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def score_run(run_dir: Path, compat: str | None = None, judge=None,
              success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """One agent's run (a run directory or a folder of them); several agents: use `score_by_agent`."""
    trajectories, tasks = read_run(run_dir)
    return score_trajectories(trajectories, tasks, compat, judge, success_threshold)


def score_trajectories(trajectories: list, tasks: dict, compat: str | None = None, judge=None,
                       success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """One agent's trajectories scored with the chosen definitions (default, or a compat mode)."""
    if compat == "agentchangebench":
        from .metrics._agentchangebench import compat_run_metrics

        return compat_run_metrics(trajectories, tasks)
    return compute_run_metrics(trajectories, tasks, judge=judge, success_threshold=success_threshold)


JUDGE_OPTIONS = {"api_base": str, "temperature": float, "max_retries": int}


def make_judge(spec: str | None, options: dict[str, str] | None = None):
    """`--judge litellm:<model>` with `--judge-arg api_base=…`; None: the deterministic detector only.

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
    from .metrics._llm_judge import LLMJudge

    return LLMJudge(model, **kwargs)


def metrics(
    run_dir: Annotated[Path, typer.Argument(help="a run directory written by `shiftbox run`, or a folder of them "
                                                 "(each agent is then scored on its own)")],
    json_out: Annotated[bool, typer.Option("--json", help="print the run metrics as JSON")] = False,
    compat: Annotated[str | None, typer.Option(help="reproduce another benchmark's definitions: agentchangebench")] = None,
    judge: Annotated[str | None, typer.Option(help="LLM judge for NL assertions and acknowledgment, litellm:<model>")] = None,
    judge_arg: Annotated[list[str] | None, typer.Option(help="judge option KEY=VALUE: api_base, temperature, max_retries")] = None,
    threshold: Annotated[float, typer.Option(help="TSR at or above which a simulation counts as a success")] = 1.0,
    clean: Annotated[Path | None, typer.Option(help="a run of the same tasks without goal shifts: report "
                                                    "retention and drop of TSR and TUE against it")] = None,
) -> None:
    """Compute TSR, TUE, TCRR, GSRT and pass^k for a run; writes RUN_DIR/metrics.json (default definitions).

    Example: shiftbox metrics runs/demo/oracle --json
    """
    if compat is not None and compat not in COMPAT_MODES:
        err.print(f"[red]error:[/] --compat {compat!r} is not known; choose one of: {', '.join(COMPAT_MODES)}")
        raise typer.Exit(2)
    try:
        the_judge = make_judge(judge, parse_options(judge_arg or []))
        trajectories, tasks = read_run(run_dir)
        if compat is None and len({t.agent for t in trajectories}) > 1:
            if clean is not None:
                raise ValueError("--clean compares one agent's runs; give a run directory of one agent")
            scores = score_by_agent(trajectories, tasks, judge=the_judge, success_threshold=threshold)
            _print_agents(scores, json_out)
            return
        run_metrics, sims = score_trajectories(trajectories, tasks, compat, the_judge, threshold)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(reason(exc))}")
        raise typer.Exit(2) from None
    rows = None
    if clean is not None:
        try:
            clean_metrics, _ = score_run(clean, compat, None, threshold)
        except (FileNotFoundError, KeyError, ValueError) as exc:
            err.print(f"[red]error:[/] --clean: {escape(reason(exc))}")
            raise typer.Exit(2) from None
        rows = retention(run_metrics, clean_metrics)
    if compat is None and (run_dir / TASKS_FILE).exists():
        (run_dir / METRICS_FILE).write_text(metrics_document(run_metrics, sims))
    if json_out:
        doc = run_metrics.model_dump(mode="json")
        if rows is not None:
            doc["retention"] = [r.model_dump(mode="json") for r in rows]
        typer.echo(json.dumps(doc, indent=2))
        return
    from .report import retention_table, summary

    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(summary(run_metrics))
    if rows is not None:
        console.print(retention_table(rows))


def _print_agents(scores: dict[str, AgentScores], json_out: bool) -> None:
    """Several agents: each one's own metrics, never pooled (JSON: agent -> run metrics)."""
    if json_out:
        typer.echo(json.dumps({a: s.metrics.model_dump(mode="json") for a, s in scores.items()}, indent=2))
        return
    from .report import agents_summary

    Console(width=None if sys.stdout.isatty() else 160).print(agents_summary(scores))
