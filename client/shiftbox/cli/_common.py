"""What every command shares: one error console, one `fail`, the stdout console, and the choices `--help` lists."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from ..runs import AGENT_POLICIES, EXECUTORS
from ..trajectory import describe_invalid
from ..world import SERVER_MODES

err = Console(stderr=True, soft_wrap=True)

Threshold = Annotated[float, typer.Option(min=0.0, max=1.0, help="TSR at or above which a simulation counts as a "
                                                                 "success (0 to 1)")]
"""`--threshold` of `metrics` and `compare`: a TSR is a share, so one outside 0..1 makes every simulation a failure
(or a success)."""
Port = Annotated[int, typer.Option(min=0, max=65535, help="HTTP port on 127.0.0.1 (0: any free port)")]
"""`--port` of every command that serves: outside 0..65535 a bind fails, or wraps around to another port."""


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `error: MESSAGE` on stderr and return the exit to raise (2: usage or input error, 1: a failed check)."""
    err.print(f"[red]error:[/] {escape(message)}")
    return typer.Exit(code)


def reason(exc: Exception) -> str:
    """An exception's message for a one-line error (some carry no args; pydantic errors are many lines)."""
    if isinstance(exc, ValidationError):
        return f"a run file does not parse ({describe_invalid(exc)})"
    return str(exc.args[0]) if exc.args else (str(exc) or type(exc).__name__)


def out_console(width: int = 160) -> Console:
    """stdout: the terminal's width, or `width` columns when piped (tables stay readable in logs)."""
    return Console(width=None if sys.stdout.isatty() else width)


def choices(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A typer choice type over the library's own list of values (so `--help` lists them, one list to keep)."""
    return Enum(name, {value: value for value in values}, type=str)  # type: ignore[return-value]


ServerModeChoice = choices("ServerModeChoice", SERVER_MODES)
ExecutorChoice = choices("ExecutorChoice", EXECUTORS)
PolicyChoice = choices("PolicyChoice", AGENT_POLICIES)
RecordedFormatChoice = choices("RecordedFormatChoice", ("agentchangebench",))  # another benchmark's results file

def _compat_modes() -> tuple[str, ...]:
    from ..runs import COMPAT_MODES

    return COMPAT_MODES


def _tools_modes() -> tuple[str, ...]:
    from ..replay import TOOLS_MODES

    return TOOLS_MODES


def _transports() -> tuple[str, ...]:
    from ..serve import TRANSPORTS

    return TRANSPORTS


_LOADED_WITH_THEIR_COMMAND = {"CompatChoice": _compat_modes, "ToolsModeChoice": _tools_modes,
                              "TransportChoice": _transports}
"""Choices whose values live in a package `shiftbox run` never loads (scoring, replay, serving): each is made when
the first command taking it is loaded (`__getattr__`), its values imported by name where they are used."""


def __getattr__(name: str) -> type[Enum]:
    if name not in _LOADED_WITH_THEIR_COMMAND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    choice = globals()[name] = choices(name, _LOADED_WITH_THEIR_COMMAND[name]())
    return choice
