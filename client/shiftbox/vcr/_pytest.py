"""What the pytest plugin's `shiftbox_vcr` fixture hands a test: the cassette it runs under, and how to run an agent
program (a `cmd:` agent, a subprocess vcrpy cannot patch from here) under the same cassette."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._cassettes import CASSETTE_ENV, RECORD_MODE_ENV, use_cassette


@dataclass(frozen=True)
class AgentCassette:
    """The cassette a test runs under: its file, record mode and the vcrpy `Cassette` (`cassette.play_count`,
    `cassette.all_played`, `cassette.requests`)."""

    path: Path
    record_mode: str
    cassette: Any

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for an agent program run as `python -m shiftbox.vcr PROGRAM` (see `command`): this
        cassette and record mode, over `base` (default: this process's environment)."""
        return {**(os.environ if base is None else base), CASSETTE_ENV: str(self.path),
                RECORD_MODE_ENV: self.record_mode}

    def command(self, program: str | Path, *args: str) -> list[str]:
        """`python -m shiftbox.vcr PROGRAM ARGS…` with this interpreter: run it with `env()`."""
        return [sys.executable, "-m", "shiftbox.vcr", os.fspath(program), *args]


def replay_problem(path: Path, record_mode: str) -> str | None:
    """Why the test cannot run under this cassette: replay only (record mode `none`) and it was never recorded."""
    if record_mode == "none" and not path.exists():
        return (f"no cassette to replay at {path} (record mode none): record it once against the LLM endpoint "
                f"with `pytest --shiftbox-record=once` (or {RECORD_MODE_ENV}=once)")
    return None


@contextmanager
def agent_cassette(path: Path, record_mode: str) -> Iterator[AgentCassette]:
    """The test's body under the cassette (vcrpy's patches on for this process, saved at the end)."""
    with use_cassette(path, record_mode) as cassette:
        yield AgentCassette(path, record_mode, cassette)
