"""The one `shiftbox` command line (typer): one module per command, each parsing, calling one library function and
printing (a command is at most 30 lines, tests/test_layers.py). Exit codes: 0 ok, 1 failed check, 2 usage or input error, 130 interrupted. The library never imports this package."""

from __future__ import annotations

import os
from typing import Annotated

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import typer

from .._versions import distribution_versions
from ._exit import Program, exits_fast
from .compare import compare_command
from .conformance import conformance_app
from .demo import demo
from .env_server import env_server
from .fake_llm import fake_llm
from .metrics import metrics
from .replay import replay
from .report import report
from .rescore import rescore
from .run import run
from .serve import serve
from .serve_assessor import serve_assessor_command
from .snapshots import snapshots_app
from .tasks import tasks_app

app = Program(
    name="shiftbox",
    help="Reproducible goal-shift evaluation of MCP agents: snapshots, runs, replay, metrics, reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is printed as written: `shiftbox[ray]`, `[default: …]` are not markup
)


def _print_versions(asked: bool) -> None:
    if asked:
        for name, installed in distribution_versions().items():
            typer.echo(f"{name} {installed}")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_versions,
                                               help="print the shiftbox and shiftbox-servers versions and exit")]
         = False) -> None:
    """Reproducible goal-shift evaluation of MCP agents: snapshots, runs, replay, metrics, reports."""
app.add_typer(snapshots_app, name="snapshots")
app.add_typer(tasks_app, name="tasks")
app.add_typer(conformance_app, name="conformance")
app.command("run")(exits_fast(run))
app.command("metrics")(metrics)
app.command("rescore")(rescore)
app.command("report")(report)
app.command("compare")(compare_command)
app.command("replay")(exits_fast(replay))
app.command("serve")(serve)
app.command("serve-assessor")(serve_assessor_command)
app.command("demo")(demo)
app.command("fake-llm")(fake_llm)
app.command("env-server")(env_server)

