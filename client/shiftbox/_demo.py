"""`shiftbox demo`: an offline scripted evaluation end to end, comparing the oracle with a flawed agent.

Runs the hand-written banking tasks with the scripted user against the banking server, once with
`scripted:oracle` and once with `scripted:late_ack`, writes both run directories under runs/demo/,
and prints the per-simulation summary of each.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

DEMO_AGENTS = ("scripted:oracle", "scripted:late_ack")


def demo(out: Path = Path("runs/demo")) -> None:
    """Run the demo evaluation and print its summaries."""
    from shiftbox_servers.kit import get_domain

    from .cli import app

    console = Console(width=160)
    tasks = get_domain("banking").default_snapshot_dir() / "tasks-handwritten.json"
    runner = CliRunner()
    start = time.perf_counter()
    for agent in DEMO_AGENTS:
        run_dir = out / agent.split(":")[1]
        args = ["run", "--domain", "banking", "--tasks", str(tasks), "--agent", agent, "--user", "scripted",
                "--trials", "2", "--concurrency", "4", "--out", str(run_dir)]
        if (run_dir / "run.json").exists():
            args.append("--resume")
        console.rule(f"[bold]{agent}[/] on {tasks.name}")
        result = runner.invoke(app, args)
        console.print(result.output, end="", markup=False, highlight=False)
        if result.exit_code != 0:
            raise SystemExit(result.exit_code)
    console.print(f"demo finished in {time.perf_counter() - start:.1f}s; trajectories under {out}/")
