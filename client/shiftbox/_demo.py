"""`shiftbox demo`: an offline scripted evaluation end to end, comparing the oracle with a flawed agent.

Runs a fixed sample of every domain's generated task set (one trial) with the scripted user against
that domain's server, once with `scripted:oracle` and once with `scripted:late_ack` (run directories
under runs/demo/<domain>-<agent>), then prints the metrics side by side (by agent, domain and
persona) and writes one HTML report.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

DEMO_AGENTS = ("scripted:oracle", "scripted:late_ack")
DEMO_DOMAINS = ("banking", "retail", "airline")
SAMPLE_EVERY = 10
"""Every 10th generated task: 15 per domain, every persona, 1 to 4 goals."""


def demo(out: Path = Path("runs/demo")) -> None:
    """Run the demo evaluation, print the runs and their metrics, write the HTML report."""
    from shiftbox_servers.kit import get_domain

    from ._run import TASKS_FILE, read_trajectories
    from .cli import app
    from .metrics import compute_run_metrics
    from .report import render_html, summary
    from .tasks import load_task_file

    console = Console(width=160)
    runner = CliRunner()
    start = time.perf_counter()
    trajectories, tasks = [], {}
    for domain in DEMO_DOMAINS:
        tasks_file = get_domain(domain).default_snapshot_dir() / "tasks.json"
        sample = [t.id for t in load_task_file(tasks_file).tasks[::SAMPLE_EVERY]]
        for agent in DEMO_AGENTS:
            run_dir = out / f"{domain}-{agent.split(':')[1]}"
            args = ["run", "--domain", domain, "--tasks", str(tasks_file), "--agent", agent, "--user", "scripted",
                    "--trials", "1", "--concurrency", "4", "--out", str(run_dir)]
            args += [arg for task_id in sample for arg in ("--task-id", task_id)]
            if (run_dir / "run.json").exists():
                args.append("--resume")
            console.rule(f"[bold]{agent}[/] on {domain} ({tasks_file.name})")
            result = runner.invoke(app, args)
            console.print(result.output, end="", markup=False, highlight=False)
            if result.exit_code != 0:
                raise SystemExit(result.exit_code)
            trajectories += read_trajectories(run_dir)
            tasks.update({t.id: t for t in load_task_file(run_dir / TASKS_FILE).tasks})
    run_metrics, sims = compute_run_metrics(trajectories, tasks)
    console.rule("[bold]metrics: oracle vs late_ack, all domains")
    console.print(summary(run_metrics))
    report = out / "report.html"
    report.write_text(render_html(run_metrics, sims, trajectories, None), encoding="utf-8")
    console.print(f"demo finished in {time.perf_counter() - start:.1f}s")
    console.print(f"HTML report: {report.resolve()}")
