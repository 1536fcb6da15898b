"""The fast exit of `shiftbox run` and `shiftbox replay`: once the command has ended (its results written and
fsynced, its summary printed), the program exits without the interpreter's teardown (freeing every module and
object: most of a second after a big import), keeping what an exit must do.

`exits_fast` marks a command; `Program` (the `shiftbox` app) then ends a marked command's run with `exit_now`:
other threads joined and exit handlers run as at a normal exit (worker pools, Ray, temporary files, logging),
stdout and stderr flushed, then `os._exit` with the command's exit code. Only the program does this: a command
invoked in-process (typer's test runner) returns as before.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])
_marked: list[str] = []
"""The marked command that ran in this process (at most one)."""


def exits_fast(command: F) -> F:
    """Mark a command: the program exits fast once it ends, whatever its exit code."""

    @functools.wraps(command)
    def marked(*args: Any, **kwargs: Any) -> Any:
        _marked.append(command.__name__)
        return command(*args, **kwargs)

    return marked  # type: ignore[return-value]


def exit_now(code: int) -> NoReturn:
    """Exit with `code` as a normal exit would, less the interpreter's teardown."""
    threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads, as the interpreter's exit does
    atexit._run_exitfuncs()  # worker pools, Ray, weakref finalizers, logging.shutdown
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or a pipe whose reader left: nothing to write
            stream.flush()
    os._exit(code)


class Program(typer.Typer):
    """The `shiftbox` app: as typer's, plus the fast exit of a marked command when it runs as the program."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
            if _marked and isinstance(code, int) and not isinstance(code, bool):
                exit_now(code)
            raise
