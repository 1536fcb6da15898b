"""The fast exit of `shiftbox run` and `shiftbox replay`: once the command has ended (its results written and
fsynced, its summary printed), the program exits without the interpreter's teardown (freeing every module and
object: most of a second after a big import), keeping what an exit must do.

`exits_fast` marks a command; `Program` (the `shiftbox` app) then ends a marked command's run with `exit_now`:
other threads joined and exit handlers run as at a normal exit (worker pools, Ray, temporary files, logging),
stdout and stderr flushed, then `os._exit` with the command's exit code. Only the program does this: a command
invoked in-process (typer's test runner) returns as before.

The program freezes the garbage collector's view of what is alive as it starts, and a marked command again as it
starts (`gc.freeze`: the modules loaded so far, kept until the program ends, which a fast exit never frees
anyway): the collector's full collections then scan only what came later, not every module again. In a
100-simulation `shiftbox run` that took the full collections from about 150 ms of CPU (two during start-up, one
after the run, each scanning every module) to about 40.

`Program` also loads its commands on first use (`commands`: name -> the module and attribute defining it): a
command's module, and the library it imports, load only when that command runs or `--help` lists the commands, so
`shiftbox run` never pays for the metrics, reports and servers of the other commands.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, NoReturn, TypeVar

import typer
import typer.main
from typer.core import TyperGroup

F = TypeVar("F", bound=Callable[..., Any])
_marked: list[str] = []
"""The marked command that ran in this process (at most one)."""
_program: list[bool] = []
"""Set while `Program` runs (the `shiftbox` program, not typer's test runner): a marked command then exits fast."""


def exits_fast(command: F) -> F:
    """Mark a command: the program exits fast once it ends, whatever its exit code."""

    @functools.wraps(command)
    def marked(*args: Any, **kwargs: Any) -> Any:
        _marked.append(command.__name__)
        if _program:
            import gc  # built in: no start-up cost

            gc.freeze()  # alive until the fast exit: out of the collector's full collections
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
    """The `shiftbox` app: as typer's, plus commands loaded on first use and the fast exit of a marked command when
    it runs as the program. `commands`: name -> (module of `package`, attribute: a command function or a typer app
    of subcommands, whether the command exits fast), in the order `--help` lists them."""

    def __init__(self, *, package: str, commands: Mapping[str, tuple[str, str, bool]], **settings: Any) -> None:
        load = self._load

        class Commands(TyperGroup):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                self.commands = _LazyCommands(load, commands)

        super().__init__(cls=Commands, **settings)
        self._package, self._commands = package, commands

    def _load(self, name: str) -> Any:
        """The click command `name`, built by typer as if registered on this app (same help rendering)."""
        module, attribute, fast = self._commands[name]
        target = getattr(importlib.import_module(f"{self._package}.{module}"), attribute)
        one = typer.Typer(add_completion=False, rich_markup_mode=self.rich_markup_mode,
                          suggest_commands=self.suggest_commands, pretty_exceptions_enable=self.pretty_exceptions_enable,
                          pretty_exceptions_short=self.pretty_exceptions_short)
        if isinstance(target, typer.Typer):
            one.add_typer(target, name=name)
        else:
            one.command(name)(exits_fast(target) if fast else target)
        return typer.main.get_group(one).commands[name]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import gc  # built in: no start-up cost

        _program.append(True)
        gc.freeze()  # what the program's start loaded lives until it ends: out of the collector's full collections
        try:
            return super().__call__(*args, **kwargs)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
            if _marked and isinstance(code, int) and not isinstance(code, bool):
                exit_now(code)
            raise


class _LazyCommands(MutableMapping[str, Any]):
    """A group's commands, name -> click command, each built by `load` on first access; every name is listed (help,
    "did you mean") before any is built."""

    def __init__(self, load: Callable[[str], Any], names: Mapping[str, Any]) -> None:
        self._load, self._names, self._built = load, list(names), {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._names:
                raise KeyError(name)
            self._built[name] = self._load(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command
        if name not in self._names:
            self._names.append(name)

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
