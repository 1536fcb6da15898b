"""`shiftbox compare RUN_A RUN_B`: paired differences between two runs, with 95% paired-bootstrap intervals."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from ._run import read_run
from .metrics import AgentScores, Comparison, compare, score_by_agent
from .trajectory import Trajectory

err = Console(stderr=True, soft_wrap=True)


@dataclass
class ComparedRuns:
    """Both runs scored (each on its own agent) and their paired comparison."""

    comparison: Comparison
    scores: dict[str, AgentScores]
    trajectories: list[Trajectory]


def _one_agent(path: Path, trajectories: list[Trajectory]) -> str:
    agents = sorted({t.agent for t in trajectories})
    if len(agents) != 1:
        found = ", ".join(agents) or "none (no simulations yet)"
        raise ValueError(f"{path} must hold the simulations of exactly one agent (found: {found}); "
                         "compare one agent's run with another's")
    return agents[0]


def _identities(trajectories: list[Trajectory]) -> tuple[set[str], set[str]]:
    """The user simulators and the tool contracts (per domain) a run's simulations used, as text."""
    users, contracts = set(), set()
    for t in trajectories:
        sim = t.user_simulator
        users.add(json.dumps(sim.model_dump(mode="json", exclude_none=True), sort_keys=True) if sim else t.user)
        contracts |= {f"{d}:{info.tool_contract or 'unrecorded'}" for d, info in t.servers.items()}
    return users, contracts


def comparability_warnings(traj_a: list[Trajectory], traj_b: list[Trajectory]) -> list[str]:
    """Why A and B may not be comparable: their simulations used other user simulators or tool contracts."""
    (users_a, contracts_a), (users_b, contracts_b) = _identities(traj_a), _identities(traj_b)
    warnings = []
    if users_a != users_b:
        warnings.append(f"the runs used different user simulators (A: {'; '.join(sorted(users_a))} | "
                        f"B: {'; '.join(sorted(users_b))}); differences may come from the simulated user")
    if contracts_a != contracts_b:
        warnings.append(f"the runs used different tool contracts (A: {', '.join(sorted(contracts_a))} | "
                        f"B: {', '.join(sorted(contracts_b))}); the agents did not see the same tools")
    return warnings


def compare_run_dirs(run_a: Path, run_b: Path, success_threshold: float = 1.0) -> ComparedRuns:
    """Score two runs (run directories or folders of them), each of one agent, and pair them by (task, trial)."""
    (traj_a, tasks_a), (traj_b, tasks_b) = read_run(run_a), read_run(run_b)
    agent_a, agent_b = _one_agent(run_a, traj_a), _one_agent(run_b, traj_b)
    label_a, label_b = agent_a, agent_b
    if agent_a == agent_b:  # two runs of one agent: tell them apart by their folders
        label_a, label_b = f"{agent_a} ({run_a})", f"{agent_b} ({run_b})"
        traj_a = [t.model_copy(update={"agent": label_a}) for t in traj_a]
        traj_b = [t.model_copy(update={"agent": label_b}) for t in traj_b]
    for task_id in tasks_a.keys() & tasks_b.keys():
        if tasks_a[task_id] != tasks_b[task_id]:
            raise ValueError(f"task {task_id!r} differs between {run_a} and {run_b}: a paired comparison needs "
                             "the same tasks")
    tasks = {**tasks_a, **tasks_b}
    scores = {**score_by_agent(traj_a, tasks, success_threshold=success_threshold),
              **score_by_agent(traj_b, tasks, success_threshold=success_threshold)}
    comparison = compare(scores[label_a].simulations, scores[label_b].simulations, label_a, label_b)
    comparison.warnings = comparability_warnings(traj_a, traj_b)
    return ComparedRuns(comparison, scores, traj_a + traj_b)


def write_comparison_report(compared: ComparedRuns, out: Path) -> Path:
    """The HTML report of both runs with the comparison on top (one self-contained file)."""
    from .report import render_html
    from .report._html import comparison_section

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(compared.scores, compared.trajectories, None,
                               comparison_section(compared.comparison)), encoding="utf-8")
    return out


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="run A: a run directory (or a folder of them) of one agent")],
    run_b: Annotated[Path, typer.Argument(help="run B, on the same tasks: differences are B - A")],
    json_out: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE",
                                              help="also write an HTML report of both runs with the comparison")] = None,
    threshold: Annotated[float, typer.Option(help="TSR at or above which a simulation counts as a success")] = 1.0,
) -> None:
    """Compare two runs: each metric's difference B - A over simulations paired by (task, trial), with a 95%
    paired-bootstrap interval over tasks (seeded: reruns print the same interval).

    An interval that contains 0 means the runs are not shown to differ on that metric.

    Example: shiftbox compare runs/demo/oracle runs/demo/late_ack --html runs/demo/compare.html
    """
    try:
        compared = compare_run_dirs(run_a, run_b, threshold)
        if html is not None:
            write_comparison_report(compared, html)
    except ValidationError as exc:
        err.print(f"[red]error:[/] a run file does not parse ({exc.error_count()} error(s), first: "
                  f"{exc.errors()[0]['msg']}); re-create the run with `shiftbox run`")
        raise typer.Exit(2) from None
    except (FileNotFoundError, KeyError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc.args[0] if exc.args else exc}")
        raise typer.Exit(2) from None
    if json_out:  # the warnings are in the JSON (`warnings`)
        typer.echo(json.dumps(compared.comparison.model_dump(mode="json"), indent=2))
        return
    for warning in compared.comparison.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    from .report import comparison_table

    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(comparison_table(compared.comparison))
    if html is not None:
        console.print(f"HTML report: {html}")
