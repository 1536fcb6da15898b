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
after the run, each scanning every module) to about 40. A marked command also spaces the young collections as the
servers do (`shiftbox_servers.kit.collect_less`, the one rule for both): every 700 allocations, each young pass
also walked the objects of every simulation in flight and promoted them to the older generations, whose passes
walked them again, so collecting cost more the more simulations were in flight (a run of 520 simulations: 0.30 s
of collections with 8 in flight, 0.75 s with 256; spaced, 0.12 and 0.21 s).

`Program` also loads its commands on first use (`commands`: name -> the module and attribute defining it): a
command's module, and the library it imports, load only when that command runs or `--help` lists the commands, so
`shiftbox run` never pays for the metrics, reports and servers of the other commands. `shiftbox --help` loads none:
it lists each command with its help text read from its module's source (`_help_in_source`), which is the text the
loaded command would show.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import importlib
import importlib.util
import inspect
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, NoReturn, TypeVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

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
            # loaded already (run and replay serve tools in process); what is alive is kept until the fast exit:
            # frozen, and the young passes spaced as a server's
            from shiftbox_servers.kit import collect_less

            collect_less()
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
        load, listed = self._load, self._listed

        class Commands(TyperGroup):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                self.commands = _LazyCommands(load, commands)

            def format_commands(self, ctx: Any, formatter: Any) -> None:
                """`--help`'s list of commands, from each command's help text as its source holds it: the same rows
                as the loaded commands give, without loading them."""
                lazy = self.commands
                self.commands = {name: listed(name, lazy) for name in lazy}
                try:
                    super().format_commands(ctx, formatter)
                finally:
                    self.commands = lazy

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

    def _listed(self, name: str, lazy: _LazyCommands) -> Any:
        """The command `name` as `--help` lists it: a stand-in holding the help text its module's source gives, or the
        command itself when already loaded or when its source says more than a help text (`_help_in_source`)."""
        module, attribute, _ = self._commands.get(name, ("", "", False))
        text = None if not module or lazy.loaded(name) else _help_in_source(f"{self._package}.{module}", attribute)
        return lazy[name] if text is None else TyperCommand(name, help=text)

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


def _help_in_source(module: str, attribute: str) -> str | None:
    """The help text typer gives `attribute` of `module`, read from its source, not imported: a function's docstring,
    or the `help` of `attribute = typer.Typer(help=..., no_args_is_help=...)`. None for anything else (another
    setting could change how the command is listed: the caller loads it)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attribute and not node.decorator_list:
            return ast.get_docstring(node, clean=True)
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [attribute]
                and isinstance(call := node.value, ast.Call) and ast.unparse(call.func) == "typer.Typer"
                and not call.args and {k.arg for k in call.keywords} <= {"help", "no_args_is_help"}):
            text = next((k.value for k in call.keywords if k.arg == "help"), None)
            return inspect.cleandoc(text.value) if isinstance(text, ast.Constant) and isinstance(text.value, str) \
                else None
    return None


class _LazyCommands(MutableMapping[str, Any]):
    """A group's commands, name -> click command, each built by `load` on first access; every name is listed (help,
    "did you mean") before any is built."""

    def __init__(self, load: Callable[[str], Any], names: Mapping[str, Any]) -> None:
        self._load, self._names, self._built = load, list(names), {}

    def loaded(self, name: str) -> bool:
        return name in self._built

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
