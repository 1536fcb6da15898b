"""The one `shiftbox` command line (typer). Exit codes: 0 ok, 1 failed check, 2 usage or input error."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import typer

from ._compare_cli import compare_command
from ._conformance_cli import conformance_app
from ._metrics_cli import metrics
from ._replay_cli import replay
from ._report_cli import report
from ._rescore_cli import rescore
from ._run_cli import run
from ._serve_cli import serve
from ._snapshots_cli import snapshots_app
from ._tasks_cli import tasks_app

app = typer.Typer(
    name="shiftbox",
    help="Reproducible goal-shift evaluation of MCP agents: snapshots, runs, replay, metrics, reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(snapshots_app, name="snapshots")
app.add_typer(tasks_app, name="tasks")
app.add_typer(conformance_app, name="conformance")
app.command("run")(run)
app.command("metrics")(metrics)
app.command("rescore")(rescore)
app.command("report")(report)
app.command("compare")(compare_command)
app.command("replay")(replay)
app.command("serve")(serve)


@app.command("demo")
def demo() -> None:
    """Offline demo: the scripted oracle and a flawed agent (late_ack) on a sample of every domain's generated tasks.

    The sample holds one task per persona and number of goals. Writes runs/demo/<agent>/<domain>/, prints
    each run's simulations, each agent's metrics with 95% intervals and `shiftbox compare` of the two, and
    writes runs/demo/report.html.

    Example: shiftbox demo
    """
    from ._demo import demo as run

    run()


if __name__ == "__main__":
    app()
