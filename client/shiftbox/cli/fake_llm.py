"""`shiftbox fake-llm`: the fake OpenAI-compatible server (`shiftbox.testing.fake_llm.serve_fake_llm`) until Ctrl-C,
to try the `litellm:` and `cmd:` agents offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..testing.fake_llm import DEFAULT_PORT, DEFAULT_TASK_FILES, serve_fake_llm
from ._common import Port, err, fail


def fake_llm(
    port: Port = DEFAULT_PORT,
    tasks: Annotated[list[Path] | None, typer.Option(
        help=f"task file whose agent and user it plays (repeatable; default: every {DEFAULT_TASK_FILES} under "
             "the snapshots root)")] = None,
) -> None:
    """Serve a fake OpenAI-compatible LLM on 127.0.0.1 until Ctrl-C: it plays the agent and the user simulator of
    the tasks, deterministically, so `--agent litellm:…`, `--user litellm:…` and `cmd:` agents run offline.

    Example: shiftbox fake-llm --port 8767   (then, in another terminal, the `shiftbox run` it prints)
    """
    try:
        answered = serve_fake_llm(tasks, port=port, announce=lambda line: typer.echo(line))
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    err.print(f"stopped after {answered} completions")
