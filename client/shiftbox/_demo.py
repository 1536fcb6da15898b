"""`shiftbox demo`: an offline scripted evaluation end to end, comparing the oracle with a flawed agent.

Runs the hand-written banking tasks with the scripted user against the banking server, once with
`scripted:oracle` and once with `scripted:late_ack` (run directories under runs/demo/), then prints
the metrics of both side by side and writes one HTML report comparing them.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

DEMO_AGENTS = ("scripted:oracle", "scripted:late_ack")


def demo(out: Path = Path("runs/demo")) -> None:
    """Run the demo evaluation, print the runs and their metrics, write the HTML report."""
    from shiftbox_servers.kit import get_domain

    from ._run import TASKS_FILE, read_trajectories
    from .cli import app
    from .metrics import compute_run_metrics
    from .report import render_html, summary
    from .tasks import load_task_file

    console = Console(width=160)
    tasks_file = get_domain("banking").default_snapshot_dir() / "tasks-handwritten.json"
    runner = CliRunner()
    start = time.perf_counter()
    trajectories = []
    for agent in DEMO_AGENTS:
        run_dir = out / agent.split(":")[1]
        args = ["run", "--domain", "banking", "--tasks", str(tasks_file), "--agent", agent, "--user", "scripted",
                "--trials", "2", "--concurrency", "4", "--out", str(run_dir)]
        if (run_dir / "run.json").exists():
            args.append("--resume")
        console.rule(f"[bold]{agent}[/] on {tasks_file.name}")
        result = runner.invoke(app, args)
        console.print(result.output, end="", markup=False, highlight=False)
        if result.exit_code != 0:
            raise SystemExit(result.exit_code)
        trajectories += read_trajectories(run_dir)
    tasks = {t.id: t for t in load_task_file(out / "oracle" / TASKS_FILE).tasks}
    run_metrics, sims = compute_run_metrics(trajectories, tasks)
    console.rule("[bold]metrics: oracle vs late_ack")
    console.print(summary(run_metrics))
    report = out / "report.html"
    report.write_text(render_html(run_metrics, sims, trajectories, None), encoding="utf-8")
    console.print(f"demo finished in {time.perf_counter() - start:.1f}s")
    console.print(f"HTML report: {report.resolve()}")
