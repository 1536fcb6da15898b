"""`shiftbox demo`: an offline scripted evaluation end to end, comparing the oracle with a flawed agent.

Runs a sample of every domain's generated task set (one trial) with the scripted user against that
domain's server, once with `scripted:oracle` and once with `scripted:late_ack` (run directories under
runs/demo/<agent>/<domain>), then prints each agent's own metrics with their 95% intervals, the
paired comparison (`shiftbox compare runs/demo/oracle runs/demo/late_ack`), and writes one HTML report.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from .tasks import Task

DEMO_AGENTS = ("scripted:oracle", "scripted:late_ack")
DEMO_DOMAINS = ("banking", "retail", "airline")


def demo_sample(tasks: list[Task]) -> list[str]:
    """One task per (persona, number of goals), the first in file order: every persona, every length."""
    chosen: dict[tuple[str, int], str] = {}
    for task in tasks:
        chosen.setdefault((task.user_scenario.persona or "-", len(task.goals)), task.id)
    return sorted(chosen.values())


def demo(out: Path = Path("runs/demo")) -> None:
    """Run the demo evaluation, print the runs, each agent's metrics and the comparison, write the HTML report."""
    from shiftbox_servers.kit import get_domain

    from ._compare_cli import compare_run_dirs, write_comparison_report
    from .cli import app
    from .report import agents_summary, comparison_table
    from .tasks import load_task_file

    console = Console(width=160)
    runner = CliRunner()
    start = time.perf_counter()
    for domain in DEMO_DOMAINS:
        tasks_file = get_domain(domain).default_snapshot_dir() / "tasks.json"
        sample = demo_sample(load_task_file(tasks_file).tasks)
        for agent in DEMO_AGENTS:
            run_dir = out / agent.split(":")[1] / domain
            args = ["run", "--domain", domain, "--tasks", str(tasks_file), "--agent", agent, "--user", "scripted",
                    "--trials", "1", "--concurrency", "4", "--out", str(run_dir)]
            args += [arg for task_id in sample for arg in ("--task-id", task_id)]
            if (run_dir / "run.json").exists():
                args.append("--resume")
            console.rule(f"[bold]{agent}[/] on {domain} ({tasks_file.name}, {len(sample)} tasks)")
            result = runner.invoke(app, args)
            console.print(result.output, end="", markup=False, highlight=False)
            if result.exit_code != 0:
                raise SystemExit(result.exit_code)
    a, b = (out / agent.split(":")[1] for agent in DEMO_AGENTS)
    compared = compare_run_dirs(a, b)
    console.rule("[bold]metrics: each agent on its own conversations, all domains")
    console.print(agents_summary(compared.scores))
    console.rule(f"[bold]shiftbox compare {a} {b}")
    console.print(comparison_table(compared.comparison))
    report = write_comparison_report(compared, out / "report.html")
    console.print(f"demo finished in {time.perf_counter() - start:.1f}s")
    console.print(f"HTML report: {report.resolve()}")
