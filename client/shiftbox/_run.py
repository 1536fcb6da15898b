"""`shiftbox run`: many simulations, run concurrently, each result appended the moment it finishes.

A run directory holds `run.json` (configuration and versions), `tasks.json` (the tasks as run) and
`trajectories.jsonl` (one trajectory per line, appended and fsynced per simulation, never rewritten).
`--resume` reads what is there, drops a torn last line left by a crash, and runs only what is
missing: a kill -9 mid-run loses nothing already written and duplicates nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

import anyio
from pydantic import BaseModel, Field, ValidationError, field_validator

from ._jsonl import dump_json, load_json
from .agents import Agent
from .llm import Cassette, use_cassette
from .orchestrator import SimulationLimits, run_simulation, simulation_id
from .redact import redact
from .tasks import Task, TaskFile
from .trajectory import Trajectory
from .users import UserSimulator
from .world import ServerMode, ToolSession, World, episode_id_for, open_run_gateway, open_world

RUN_FILE, TASKS_FILE, TRAJECTORIES_FILE = "run.json", "tasks.json", "trajectories.jsonl"


class RunConfig(BaseModel):
    """Everything that decides a run's results (concurrency does not, so it is not here)."""

    domain: str
    tasks_sha256: str
    task_ids: list[str] | None = None
    agent: str
    agent_args: dict[str, str] = Field(default_factory=dict)
    user: str
    user_args: dict[str, str] = Field(default_factory=dict)
    trials: int = 1
    seed: int = 0
    servers: ServerMode = "inproc"
    snapshot: str
    max_steps: int = 100
    max_tool_errors: int = 5
    one_tool_per_turn: bool = False
    toolset: str = Field("default", exclude_if=lambda v: v == "default",
                         description="the servers' tool profile (`--toolset`); absent when the default")

    @field_validator("agent_args", "user_args")
    @classmethod
    def _without_credentials(cls, options: dict[str, str]) -> dict[str, str]:
        """Recorded options never hold credentials (run.json, fixture.json); --resume compares them redacted."""
        return redact(options)


class RunMetadata(BaseModel):
    config: RunConfig
    shiftbox_version: str
    server: dict = Field(default_factory=dict)
    simulations: int
    user_simulator: dict | None = Field(None, description="the user simulator's identity (UserSimulatorInfo)")
    tool_contracts: dict[str, str] = Field(
        default_factory=dict, description="domain -> digest of the tools its server published (see ServerInfo)")


class RunDirError(Exception):
    """The run directory holds something that does not fit this run."""


class RunFileError(ValueError):
    """A file of a run directory does not parse; the message names the file and the line."""


def describe_invalid(exc: ValidationError) -> str:
    """A pydantic error in one line: where in the record, and what (JSON positions are within the line)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    what = re.sub(r" at line \d+ column (\d+)", r" at column \1", first.get("msg", "invalid"))
    more = f"; {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{what}{more}"


def read_run_metadata(run_dir: Path) -> RunMetadata:
    """run.json, or a RunFileError naming it."""
    run_file = run_dir / RUN_FILE
    try:
        return RunMetadata.model_validate_json(run_file.read_bytes())
    except ValidationError as exc:
        raise RunFileError(f"{run_file}: does not parse as a shiftbox run.json ({describe_invalid(exc)}); restore it or "
                           "start a new run with another --out") from None


def record_server(run_dir: Path, world: World, make_user: Callable[[], UserSimulator] | None = None) -> None:
    """Put the connected server's identity (version, snapshot, image id if a container, tool contract)
    and the user simulator's in run.json."""
    run_file = run_dir / RUN_FILE
    if not run_file.exists():
        return
    metadata = read_run_metadata(run_dir)
    metadata.server[world.domain.name] = world.info.model_dump(mode="json")
    if world.info.tool_contract is not None:
        metadata.tool_contracts[world.domain.name] = world.info.tool_contract
    if make_user is not None:
        metadata.user_simulator = make_user().identity().model_dump(mode="json", exclude_none=True)
    write_run_metadata(run_dir, metadata)


def write_run_metadata(run_dir: Path, metadata: RunMetadata) -> None:
    """Replace run.json whole (write, then rename): a crash leaves the old file or the new one."""
    run_file = run_dir / RUN_FILE
    tmp = run_file.with_suffix(".tmp")
    tmp.write_text(metadata.model_dump_json(indent=2) + "\n")
    tmp.replace(run_file)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_trajectories(run_dir: Path, *, repair: bool = False) -> list[Trajectory]:
    """Every complete trajectory line; a torn last line (crash mid-write) is ignored or cut off.

    A complete line that is not a trajectory is a RunFileError naming the file and the line.
    """
    path = run_dir / TRAJECTORIES_FILE
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    trajectories = []
    for number, line in enumerate(complete.splitlines(), 1):
        if not line.strip():
            continue
        try:
            trajectories.append(load_json(Trajectory, line))
        except ValidationError as exc:
            raise RunFileError(f"{path} line {number}: does not parse as a trajectory ({describe_invalid(exc)}); remove or "
                               "restore that line") from None
    if repair and len(complete) != len(data):
        with path.open("r+b") as f:
            f.truncate(len(complete))
    return trajectories


def run_dirs(path: Path) -> list[Path]:
    """A run directory, or a folder holding run directories at any depth (sorted): what `metrics`, `report` and
    `compare` read."""
    if (path / TASKS_FILE).exists():
        return [path]
    found = sorted({p.parent for p in path.rglob(TASKS_FILE)}) if path.is_dir() else []
    if not found:
        raise FileNotFoundError(f"{path} is not a run directory (no {TASKS_FILE}) nor a folder of them; "
                                "create one with `shiftbox run --out DIR`")
    return found


def read_run(path: Path) -> tuple[list[Trajectory], dict[str, Task]]:
    """Every trajectory and task of a run directory or of a folder of run directories."""
    from .tasks import load_task_file

    trajectories: list[Trajectory] = []
    tasks: dict[str, Task] = {}
    for run_dir in run_dirs(path):
        for task in load_task_file(run_dir / TASKS_FILE).tasks:
            if tasks.setdefault(task.id, task) != task:
                raise ValueError(f"task {task.id!r} differs between the run directories under {path}; "
                                 "score them separately")
        trajectories += read_trajectories(run_dir)
    return trajectories, tasks


def prepare_run_dir(run_dir: Path, metadata: RunMetadata, task_file: TaskFile, resume: bool) -> set[str]:
    """Create or reopen a run directory; returns the simulation ids already finished."""
    run_file = run_dir / RUN_FILE
    if run_file.exists():
        if not resume:
            raise RunDirError(f"{run_dir} already holds a run; add --resume to finish it, or choose another --out")
        previous = read_run_metadata(run_dir).config
        if previous != metadata.config:
            changed = [k for k in RunConfig.model_fields
                       if getattr(previous, k) != getattr(metadata.config, k)]
            raise RunDirError(f"{run_dir} holds a run with a different configuration ({', '.join(changed)} "
                              "changed); use the original options or another --out")
        return {t.simulation_id for t in read_trajectories(run_dir, repair=True)}
    if resume and run_dir.exists() and any(run_dir.iterdir()):
        raise RunDirError(f"{run_dir} is not a shiftbox run directory (no {RUN_FILE}); nothing to resume")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / TASKS_FILE).write_text(task_file.model_dump_json(indent=2) + "\n")
    write_run_metadata(run_dir, metadata)
    return set()


class ResultWriter:
    """Appends one trajectory per line and fsyncs it: what is written survives a kill -9."""

    def __init__(self, path: Path):
        self._file = path.open("ab")
        self._lock = anyio.Lock()

    async def append(self, trajectory: Trajectory) -> None:
        line = dump_json(trajectory).encode() + b"\n"  # a lone surrogate an agent sent: escaped
        async with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


class RunHooks:
    """What record and replay change about a run; the defaults are a plain live run."""

    def world(self, config: RunConfig):
        return open_world(config.domain, servers=config.servers, snapshot_dir=Path(config.snapshot),
                          toolset=config.toolset)

    def cassette(self, simulation_id: str) -> Cassette | None:
        return None

    def episode(self, world: World, task: Task, trial: int, episode_id: str) -> ToolSession | None:
        return None

    def agent(self, task: Task, trial: int, make_agent: Callable[[], Agent]) -> Agent:
        return make_agent()

    def finished(self, trajectory: Trajectory, world: World) -> None:
        return None


async def execute_run(
    config: RunConfig,
    tasks: list[Task],
    run_dir: Path,
    *,
    make_agent: Callable[[], Agent],
    make_user: Callable[[], UserSimulator],
    concurrency: int,
    finished: set[str],
    on_done: Callable[[Trajectory], None] = lambda t: None,
    on_start: Callable[[int], None] = lambda n: None,
    hooks: RunHooks | None = None,
    retry_infra: int = 0,
) -> list[Trajectory]:
    """Run every (task, trial) not in `finished`; returns the new trajectories in completion order.

    A simulation that ends in an infrastructure error (server gone, LLM provider down) is run again
    from the start, in a fresh episode, up to `retry_infra` times; only its last attempt is written.
    Before that, at the call level, a read-only tool call (`readOnlyHint`) whose transport failed is
    resent up to `retry_infra` times; a call to any other tool is never resent (it may have acted).
    """
    hooks = hooks or RunHooks()
    work = [(task, trial) for task in tasks for trial in range(config.trials)
            if simulation_id(task.id, trial) not in finished]
    on_start(len(work))
    results: list[Trajectory] = []
    limits = SimulationLimits(config.max_steps, config.max_tool_errors, config.one_tool_per_turn)
    writer = ResultWriter(run_dir / TRAJECTORIES_FILE)
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    # random, so no other program can name this run's episodes on a server it reaches (docs/servers.md)
    run_tag = "r" + secrets.token_hex(8)
    needs_gateway = bool(work) and hooks.agent(*work[0], make_agent).uses_gateway
    try:
        async with hooks.world(config) as world, contextlib.AsyncExitStack() as stack:
            record_server(run_dir, world, make_user)
            world.read_only_retries = retry_infra  # a read-only call is resent after a transport failure
            gateway = await stack.enter_async_context(open_run_gateway(world)) if needs_gateway else None

            async def attempt(task: Task, trial: int, number: int) -> Trajectory:
                parts = (run_tag, task.id, str(trial)) + ((f"retry{number}",) if number else ())
                episode_id = episode_id_for(*parts)  # a retry never reuses the failed attempt's database
                episode = hooks.episode(world, task, trial, episode_id) or world.episode(episode_id)
                with use_cassette(hooks.cassette(simulation_id(task.id, trial))):
                    return await run_simulation(task, trial, config.seed, hooks.agent(task, trial, make_agent),
                                                make_user(), world, limits, run_tag, episode, gateway)

            async def one(task: Task, trial: int) -> None:
                async with limiter:
                    for number in range(retry_infra + 1):
                        trajectory = await attempt(task, trial, number)
                        if not is_retryable(trajectory) or number == retry_infra:
                            break
                        await world.recover()  # restart the server if it died
                    if number:
                        trajectory.timing["attempts"] = number + 1
                    hooks.finished(trajectory, world)
                    await writer.append(trajectory)
                    results.append(trajectory)
                    on_done(trajectory)

            async with anyio.create_task_group() as tg:
                for task, trial in work:
                    tg.start_soon(one, task, trial)
    finally:
        writer.close()
    return results


def is_retryable(trajectory: Trajectory) -> bool:
    """Infrastructure failures are retried; a replay mismatch is a finding, never retried."""
    return trajectory.termination.blame == "infrastructure" and trajectory.termination.reason != "replay_mismatch"


def task_file_digest(task_file: TaskFile) -> str:
    return hashlib.sha256(json.dumps(task_file.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
