"""The fake OpenAI-compatible server as a program (`shiftbox fake-llm`, `python -m shiftbox.testing.fake_llm`):
it plays the agent and the user simulator of a task file (`ScriptedLLM`) on 127.0.0.1 until Ctrl-C, so the
`litellm:` and `cmd:` paths can be tried offline, with no key and no Python code."""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from shiftbox_servers.kit import snapshots_root

from ..tasks import Task, load_task_file
from .fake_brains import ScriptedLLM
from .fake_openai import DEFAULT_MODEL, FakeOpenAI

DEFAULT_TASK_FILES = "tasks-handwritten.json"
FAKE_KEY = "sk-fake"
DEFAULT_PORT = 8767


def default_task_files() -> list[Path]:
    """The hand-written task file of every domain under the snapshots root (what the quickstart runs)."""
    return sorted(snapshots_root().glob(f"*/*/{DEFAULT_TASK_FILES}"))


def scripted_tasks(task_files: list[Path]) -> list[Task]:
    """Every task of the files (ValueError naming a file that is missing or does not parse)."""
    if not task_files:
        raise ValueError(f"no task files: none given, and no */*/{DEFAULT_TASK_FILES} under {snapshots_root()}; "
                         "pass --tasks FILE")
    tasks: list[Task] = []
    for path in task_files:
        if not Path(path).is_file():
            raise ValueError(f"task file {path} does not exist")
        tasks += load_task_file(Path(path)).tasks
    return tasks


def how_to_use(base_url: str, model: str = DEFAULT_MODEL) -> str:
    """What to pass `shiftbox run` to use the server: the key to export, the agent and user options."""
    return "\n".join([
        f"export OPENAI_API_KEY={FAKE_KEY}   # any key: the fake server checks none",
        f"litellm agent and user:  --agent litellm:openai/{model} --agent-arg api_base={base_url} "
        f"--user litellm:openai/{model} --user-arg api_base={base_url}",
        f"example cmd agent:       --agent 'cmd:python examples/minimal_agent/agent.py --model openai/{model} "
        f"--api-base {base_url}'",
    ])


def serve_fake_llm(task_files: list[Path] | None = None, *, port: int = DEFAULT_PORT,
                   announce: Callable[[str], None] = print, stop: threading.Event | None = None) -> int:
    """Serve `ScriptedLLM` over the tasks of `task_files` (default: `default_task_files()`) on 127.0.0.1:`port` (0:
    any free port) until Ctrl-C (or `stop` is set); `announce` gets the base URL line, then how to use it.
    Returns the number of completions answered. ValueError: bad task files; OSError: the port is taken."""
    files = list(task_files) if task_files else default_task_files()
    tasks = scripted_tasks(files)
    server = FakeOpenAI(ScriptedLLM(tasks), port=port).start()
    try:
        # Ctrl-C is how it is meant to stop, from the moment it serves: also while it still announces (a reader that
        # has the lines it needs may interrupt it then)
        with contextlib.suppress(KeyboardInterrupt):
            announce(f"fake OpenAI-compatible server at {server.base_url}")
            announce(f"it plays the agent and the user of {len(tasks)} tasks ({', '.join(str(f) for f in files)}); "
                     "any model name; Ctrl-C to stop")
            announce(how_to_use(server.base_url))
            (stop or threading.Event()).wait()
        return len(server.requests)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    """`python -m shiftbox.testing.fake_llm [--port N] [--tasks FILE ...]`."""
    parser = argparse.ArgumentParser(prog="python -m shiftbox.testing.fake_llm",
                                     description="Serve the fake OpenAI-compatible server until Ctrl-C.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")
    parser.add_argument("--tasks", type=Path, action="append", help="task file whose agent and user it plays "
                        f"(repeatable; default: every {DEFAULT_TASK_FILES} under the snapshots root)")
    args = parser.parse_args(argv)
    try:
        answered = serve_fake_llm(args.tasks, port=args.port, announce=lambda line: print(line, flush=True))
    except (ValueError, OSError) as exc:
        parser.exit(2, f"error: {exc}\n")
    print(f"stopped after {answered} completions", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
