"""What every command shares: one error console, one `fail`, the stdout console, and the choices `--help` lists."""

from __future__ import annotations

import sys
from enum import Enum

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from ..replay import TOOLS_MODES
from ..runs import AGENT_POLICIES, COMPAT_MODES, EXECUTORS
from ..serve import TRANSPORTS
from ..trajectory import describe_invalid
from ..world import SERVER_MODES

err = Console(stderr=True, soft_wrap=True)


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
CompatChoice = choices("CompatChoice", COMPAT_MODES)
ToolsModeChoice = choices("ToolsModeChoice", TOOLS_MODES)
TransportChoice = choices("TransportChoice", TRANSPORTS)
PolicyChoice = choices("PolicyChoice", AGENT_POLICIES)
RecordedFormatChoice = choices("RecordedFormatChoice", ("agentchangebench",))  # another benchmark's results file
