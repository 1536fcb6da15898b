"""`shiftbox demo`: an offline scripted evaluation end to end, comparing the oracle with a flawed agent.

Runs a sample of every domain's generated task set (each installed domain with tasks, `task_domains()`, in
name order; one trial) with the scripted user against that domain's server, once with `scripted:oracle` and once with `scripted:late_ack` (run directories under
runs/demo/<agent>/<domain>; each ends with its headline), then prints each agent's own metrics with their 95% intervals, the
GSRT by persona with the two agents side by side (each persona changes goals its own way), the paired
comparison (`shiftbox compare runs/demo/oracle runs/demo/late_ack`), and writes one HTML report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from shiftbox_servers.kit import get_domain, task_domains

from ..errors import OutputPathError, make_output_folder
from ..report import agents_summary, comparison_table, persona_gsrt_table
from ..runs import compare_run_dirs, plan_run, write_comparison_report
from ..tasks import Task, load_task_file
from ..users import load_personas
from ._common import fail
from .run import print_run_summary, run_with_progress

DEMO_AGENTS = ("scripted:oracle", "scripted:late_ack")


def demo_sample(tasks: list[Task]) -> list[str]:
    """One task per (persona, number of goals), the first in file order: every persona, every length."""
    chosen: dict[tuple[str, int], str] = {}
    for task in tasks:
        chosen.setdefault((task.user_scenario.persona or "-", len(task.goals)), task.id)
    return sorted(chosen.values())


def demo(out: Annotated[Path, typer.Option(help="folder for the demo's runs and report")] = Path("runs/demo")) -> None:
    """Offline demo: the scripted oracle and a flawed agent (late_ack) on a sample of every domain's generated tasks.

    The sample holds one task per persona and number of goals. Writes OUT/<agent>/<domain>/ (default runs/demo), prints
    each run's headline, each agent's metrics with 95% intervals and `shiftbox compare` of the two, and
    writes OUT/report.html.

    Example: shiftbox demo
    """
    try:  # every run and the report go under it: one that cannot be a folder is refused before any run
        make_output_folder(out, "--out")
    except OutputPathError as exc:
        raise fail(str(exc)) from None
    console = Console(width=160)
    start = time.perf_counter()
    for domain in task_domains():
        tasks_file = get_domain(domain).default_snapshot_dir() / "tasks.json"
        sample = demo_sample(load_task_file(tasks_file).tasks)
        for agent in DEMO_AGENTS:
            run_dir = out / agent.split(":")[1] / domain
            plan = plan_run(tasks_file, run_dir, domain=domain, agent=agent, user="scripted", trials=1,
                            task_ids=sample, resume=(run_dir / "run.json").exists())
            console.rule(f"[bold]{agent}[/] on {domain} ({tasks_file.name}, {len(sample)} tasks)")
            print_run_summary(plan, run_with_progress(plan, console), console, console, next_steps=False)
    a, b = (out / agent.split(":")[1] for agent in DEMO_AGENTS)
    compared = compare_run_dirs(a, b)
    console.rule("[bold]metrics: each agent on its own conversations, all domains")
    console.print(agents_summary(compared.scores))
    console.rule("[bold]GSRT by persona: how each persona's way of changing goals meets a late acknowledgment")
    styles = {key: p.goal_change.style for key, p in load_personas().items()}
    console.print(persona_gsrt_table(compared.scores, styles))
    console.rule(f"[bold]shiftbox compare {a} {b}")
    console.print(comparison_table(compared.comparison))
    report = write_comparison_report(compared, out / "report.html")
    console.print(f"demo finished in {time.perf_counter() - start:.1f}s")
    console.print(f"HTML report: {report.resolve()}")
