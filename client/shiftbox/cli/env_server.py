"""`shiftbox env-server`: shiftbox episodes over HTTP for RL trainers in another process (`shiftbox.rl.serve_env`,
OpenEnv's reset/step/state)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._registry import SpecError, parse_options
from ..errors import RunPlanError
from ..rl import serve_env
from ._common import Port, err, fail


def env_server(
    tasks: Annotated[Path, typer.Option(help="the task file whose tasks the sessions play")],
    port: Port = 8770,
    user: Annotated[str, typer.Option(help="user simulator SPEC, as for `shiftbox run`")] = "scripted",
    user_arg: Annotated[list[str] | None, typer.Option(help="user option KEY=VALUE (repeatable)")] = None,
    seed: Annotated[int, typer.Option(help="run seed; each simulation's derives from it, the task and trial")] = 0,
    max_steps: Annotated[int, typer.Option(help="messages before an episode is cut off")] = 100,
    reward: Annotated[str, typer.Option(help="the reward: tsr, success, tue, action, communicate_info")] = "tsr",
) -> None:
    """Serve shiftbox episodes over HTTP on 127.0.0.1: POST /reset {"task_id", "trial", "session_id"}, POST /step
    {"action": assistant message, "session_id"}, GET /state?session_id=..., POST /close (docs/rl.md).

    Example: shiftbox env-server --tasks snapshots/banking/v1/tasks-handwritten.json --port 8770
    """
    try:
        serve_env(tasks, port=port, user=user, user_args=parse_options(user_arg or [], "--user-arg"), seed=seed,
                  max_steps=max_steps, reward=reward,
                  on_ready=lambda url: err.print(f"serving shiftbox episodes on {url} (Ctrl-C stops)", highlight=False))
    except (RunPlanError, SpecError, ImportError, OSError, ValueError) as exc:
        raise fail(str(exc)) from None
