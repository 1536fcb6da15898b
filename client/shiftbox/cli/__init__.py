"""The one `shiftbox` command line (typer): one module per command, each parsing, calling one library function and
printing (a command is at most 30 lines, tests/test_layers.py). Exit codes: 0 ok, 1 failed check, 2 usage or input error, 130 interrupted. The library never imports this package."""

from __future__ import annotations

import os
from typing import Annotated

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import typer

from .._versions import distribution_versions
from ._exit import Program

COMMANDS: dict[str, tuple[str, str, bool]] = {  # name -> (module, attribute, exits fast), in `--help`'s order
    "run": ("run", "run", True), "metrics": ("metrics", "metrics", False), "rescore": ("rescore", "rescore", False),
    "report": ("report", "report", False), "compare": ("compare", "compare_command", False),
    "replay": ("replay", "replay", True), "serve": ("serve", "serve", False),
    "serve-assessor": ("serve_assessor", "serve_assessor_command", False), "demo": ("demo", "demo", False),
    "fake-llm": ("fake_llm", "fake_llm", False), "env-server": ("env_server", "env_server", False),
    "snapshots": ("snapshots", "snapshots_app", False), "tasks": ("tasks", "tasks_app", False),
    "conformance": ("conformance", "conformance_app", False),
    "ray-actors": ("ray_actors", "ray_actors_app", False),
}
"""Each command's module loads when the command runs (or `--help` lists them): `shiftbox run` imports only its own."""

app = Program(
    package=__name__,
    commands=COMMANDS,
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
