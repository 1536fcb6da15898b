"""`shiftbox metrics RUN_DIR`: score a run directory (`shiftbox.runs.score_run`) and write RUN_DIR/metrics.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .._registry import parse_options
from ..errors import CleanRunError, NoSimulationsError, ReplayDivergence
from ..metrics import AgentScores, RunMetrics
from ..runs import make_judge, measure_run
from ._common import CompatChoice, Threshold, fail, out_console, reason


def metrics(
    run_dir: Annotated[Path, typer.Argument(help="a run directory written by `shiftbox run`, or a folder of them "
                                                 "(each agent is then scored on its own)")],
    json_out: Annotated[bool, typer.Option("--json", help="print the run metrics as JSON")] = False,
    compat: Annotated[CompatChoice | None, typer.Option(help="reproduce another benchmark's definitions")] = None,
    judge: Annotated[str | None, typer.Option(help="LLM judge for NL assertions, acknowledgment and rubric items "
                                                   "(with --compat agentchangebench: the reference's GSRT judge), "
                                                   "litellm:<model>")] = None,
    judge_arg: Annotated[list[str] | None, typer.Option(
        help="judge option KEY=VALUE: api_base, temperature, max_retries, rubric_window (messages per rubric "
             "window, default 10), rubric_stride (messages between window starts, default 8)")] = None,
    judge_record: Annotated[Path | None, typer.Option(help="record the judge's calls: one cassette per simulation "
                                                           "in this folder")] = None,
    judge_replay: Annotated[Path | None, typer.Option(help="answer the judge's calls from the cassettes in this "
                                                           "folder (offline; a request not recorded is an error)")] = None,
    threshold: Threshold = 1.0,
    clean: Annotated[Path | None, typer.Option(help="a run of the same tasks without goal shifts: report "
                                                    "retention and drop of TSR and TUE against it")] = None,
    preflight: Annotated[bool, typer.Option(help="before scoring, one cheap request to the --judge model's endpoint "
                                                 "(a missing or refused key stops it at once; never with "
                                                 "--judge-replay)")] = True,
) -> None:
    """Compute TSR, TUE, TCRR, GSRT, pass^k and the rubric pass rate for a run; writes RUN_DIR/metrics.json.

    Example: shiftbox metrics runs/demo/oracle --json
    """
    try:
        the_judge = make_judge(judge, parse_options(judge_arg or [], "--judge-arg"), record=judge_record, replay=judge_replay,
                               preflight=preflight)
        scores = measure_run(run_dir, compat=compat.value if compat is not None else None, judge=the_judge,
                             threshold=threshold, clean=clean,
                             judge_cassettes="record" if judge_record else "replay" if judge_replay else None)
    except NoSimulationsError as exc:
        raise fail(reason(exc), code=1) from None
    except CleanRunError as exc:
        raise fail(f"--clean: {reason(exc.cause)}") from None
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise fail(reason(exc)) from None
    except ReplayDivergence as exc:
        raise fail(f"--judge-replay: {reason(exc)}", code=1) from None
    if scores.agents is not None:
        _print_agents(scores.agents, json_out)
    elif json_out:
        doc = scores.metrics.model_dump(mode="json")
        if scores.retention is not None:
            doc["retention"] = [r.model_dump(mode="json") for r in scores.retention]
        typer.echo(json.dumps(doc, indent=2))
    else:
        from ..report import retention_table, summary

        console = out_console()
        console.print(summary(scores.metrics))
        if scores.retention is not None:
            console.print(retention_table(scores.retention))
    _require_scored(scores.scored_runs())


def _require_scored(runs: list[RunMetrics]) -> None:
    """Exit 1 when no simulation could be scored: the figures printed above are then undefined, not zero."""
    if not any(m.scored_simulations for m in runs):
        every = sum(m.simulations for m in runs)
        why = ", ".join(f"{reason} {n}" for m in runs for reason, n in sorted(m.excluded.items()))
        raise fail(f"no scored simulations: all {every} ended for reasons not the agent's ({why}); fix the cause "
                   "and run them again (`shiftbox run ... --resume`)", code=1)


def _print_agents(scores: dict[str, AgentScores], json_out: bool) -> None:
    """Several agents: each one's own metrics, never pooled (JSON: agent -> run metrics)."""
    if json_out:
        typer.echo(json.dumps({a: s.metrics.model_dump(mode="json") for a, s in scores.items()}, indent=2))
        return
    from ..report import agents_summary

    out_console().print(agents_summary(scores))
