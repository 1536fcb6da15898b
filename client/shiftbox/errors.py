"""The errors shiftbox raises on purpose, all under one base class `ShiftboxError`.

Who is to blame decides the class: an `InfrastructureError` (a server, container or LLM provider
that could not be used) is never the agent's fault; an `AgentProgramError` (the agent's program did not
run) is no answer of the agent's either; a `ReplayDivergence` (a replay that did
something its recording does not have) is never the agent's fault either, and never retried.
The LLM errors say how an LLM call failed for good (see `shiftbox.llm`). This module imports
nothing of shiftbox, so every package can raise these without importing another.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path


class ShiftboxError(Exception):
    """Base class of the errors shiftbox raises on purpose."""


class InfrastructureError(ShiftboxError):
    """A server, container or provider could not be reached or answered outside its protocol: not the
    agent's fault."""


class AgentProgramError(ShiftboxError):
    """The agent's program did not run as an agent (it could not start or be reached, exited, crashed, broke the
    protocol or never answered): no answer of the agent's, so its simulation is not scored (docs/agents.md)."""


class DockerError(InfrastructureError):
    """No engine, no image, or a container that does not match the run: fixed by the user, not retried."""


class ToolContractError(ShiftboxError):
    """The server publishes tools (names, descriptions, schemas, annotations) other than the snapshot's
    manifest records for its tool set; the message names the tools and the fix."""


class RunPlanError(ShiftboxError, ValueError):
    """A run that cannot start as asked (`plan_run`, `replay_fixture`, `serve_gateway`); the message says what
    is wrong and how to fix it."""


class RunDirError(ShiftboxError):
    """The run directory holds something that does not fit this run."""


class NoSimulationsError(ShiftboxError, ValueError):
    """A run directory that holds no simulation yet (interrupted before the first one ended, or a `serve` log no
    session has ended in): nothing to score, report or compare (exit 1)."""


class RunWorkerError(ShiftboxError):
    """A worker process of a run (`--workers`) failed or died; the message names the simulations it did not finish."""


class RunFileError(ShiftboxError, ValueError):
    """A file of a run directory does not parse; the message names the file and the line."""


class CleanRunError(ShiftboxError):
    """The clean run given to compare against (`shiftbox metrics --clean`) could not be scored; `cause` says why."""

    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


class RecordWriteError(ShiftboxError):
    """A record (a trajectory, a `shiftbox serve` call or session line, run.json) could not be written: the disk is
    full or failing. Nothing of it was kept (a half-written line is cut off again); the message names the file and
    the cause."""

    @classmethod
    def of(cls, path: Path, exc: OSError) -> RecordWriteError:
        cause = exc.strerror or str(exc)
        if exc.errno in errno.errorcode:
            cause += f" ({errno.errorcode[exc.errno]})"
        return cls(f"cannot write {path}: {cause}; nothing of it was kept. Free space on that disk (or fix it)")


class OutputPathError(ShiftboxError, ValueError):
    """A path given to write to (a run directory, a fixture, a report, a task file, a snapshot) cannot be created: a
    file stands where a directory must be, or a directory where a file must be, or the system refuses. The message
    names the path, what is in the way and the option to change (`writing_to`)."""


@contextlib.contextmanager
def writing_to(path: Path, option: str) -> Iterator[None]:
    """Creating or writing `path`, the value of `option` (`--out`): an OSError becomes an OutputPathError."""
    try:
        yield
    except OSError as exc:
        raise OutputPathError(f"{option} {path} {_in_the_way(Path(path), exc)}; choose another {option}") from None


def make_output_folder(path: Path, option: str) -> None:
    """Create the folder `path` (and its parents), the value of `option`: one that cannot be is an OutputPathError."""
    with writing_to(path, option):
        path.mkdir(parents=True, exist_ok=True)


def _in_the_way(path: Path, exc: OSError) -> str:
    """Why `path` cannot be written: a file among its parents, `path` itself of the other kind, or the system's
    reason."""
    blocking = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        return f"cannot be created: {blocking} is a file, not a directory"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(exc, FileExistsError | NotADirectoryError) and path.exists() and not path.is_dir():
        return "is a file, not a directory"
    cause = exc.strerror or str(exc)
    return f"cannot be written ({cause}{f', {errno.errorcode[exc.errno]}' if exc.errno in errno.errorcode else ''})"


class CassetteFileError(ShiftboxError, ValueError):
    """A cassette file refused before or while it is parsed (too large, nested too deep, a YAML tag that would
    construct objects, a line that is not an interaction): the message names the file and the limit or line."""


class ReplayDivergence(ShiftboxError):
    """A replay did something the recording does not have: never the agent's fault, always an error."""


class CassetteMiss(ReplayDivergence):
    """Replay met an LLM request the recording does not have."""


class LLMError(ShiftboxError):
    """An LLM call that failed for good. `cause` is a short machine-readable kind (see `llm.cause_of`)."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


class LLMUnavailable(LLMError, InfrastructureError):
    """The LLM provider could not be used (outage, rate limit beyond retries, bad credentials)."""


class LLMRequestRejected(LLMError):
    """The provider answered but refused this request (4xx other than auth/not-found)."""


class LLMBadReply(LLMError):
    """A completion arrived but cannot be used."""


def single_error(exc: BaseException) -> BaseException:
    """What was actually raised inside (nested) task groups that each wrapped one exception."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@contextlib.contextmanager
def unwrapped_errors() -> Iterator[None]:
    """Re-raise the single exception a task group wrapped, so callers catch what was actually raised."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaf = single_error(group)
        if leaf is group:
            raise
        raise leaf from None
