"""`shiftbox run`: the command line over `_run.execute_run` (progress bar, summary, exit codes)."""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from shiftbox_servers.kit import SnapshotError, get_domain, snapshots_root

from ._registry import (
    AGENT_GROUP,
    USER_GROUP,
    SpecError,
    check_spec,
    make_agent,
    make_user,
    parse_options,
)
from ._run import (
    RunConfig,
    RunDirError,
    RunFileError,
    RunMetadata,
    execute_run,
    prepare_run_dir,
    read_trajectories,
    task_file_digest,
)
from .tasks import TaskFile, satisfied_actions
from .trajectory import Trajectory
from .world import SERVER_MODES, DockerError, ToolContractError

err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/] {escape(message)}")
    return typer.Exit(code)


def resolve_snapshot(domain: str, task_file: TaskFile, snapshot: Path | None) -> Path:
    """--snapshot, else the snapshot the task file names (snapshots/<id>), else the domain's default."""
    if snapshot is not None:
        return snapshot
    if task_file.snapshot:
        path = snapshots_root() / task_file.snapshot
        if not path.exists():
            hint = ""
            if "acb" in task_file.snapshot:
                hint = (f" Import it with `shiftbox snapshots import agentchangebench {domain} "
                        f"<db file> --out {path}`.")
            raise fail(f"the tasks are written for snapshot {task_file.snapshot}, which is not at {path}.{hint} "
                       "Or pass --snapshot DIR.")
        return path
    return get_domain(domain).default_snapshot_dir()


def gold_progress(trajectory: Trajectory, task) -> tuple[int, int]:
    actions = task.evaluation_criteria.action_sets
    done = satisfied_actions(actions, [(c.name, c.arguments, c.is_error, c.error_kind) for c in trajectory.tool_calls])
    return len(done), len(actions)


def summary_table(trajectories: list[Trajectory], tasks: dict) -> Table:
    table = Table("simulation", "persona", "goals", "shifts", "end", "calls", "errors", "gold", "agent turns",
                  title="simulations")
    for t in sorted(trajectories, key=lambda t: (t.task_id, t.trial)):
        done, total = gold_progress(t, tasks[t.task_id]) if t.task_id in tasks else (0, 0)
        errors = sum(c.is_error for c in t.tool_calls)
        turns = sum(m.role == "assistant" for m in t.messages)
        end = t.termination.reason if t.termination.blame in ("none", "agent") else f"[red]{t.termination.reason}[/]"
        table.add_row(t.simulation_id, t.persona or "-", " > ".join(t.goals), str(len(t.shifts)), end,
                      str(len(t.tool_calls)), str(errors), f"{done}/{total}", str(turns))
    return table


def run(
    domain: Annotated[str, typer.Option(help="domain to run (banking, …)")],
    tasks: Annotated[Path, typer.Option(help="task file (native, or an AgentChangeBench task list)")],
    out: Annotated[Path, typer.Option(help="run directory to write")],
    agent: Annotated[str, typer.Option(help="agent SPEC, e.g. scripted:oracle")] = "scripted:oracle",
    user: Annotated[str, typer.Option(help="user simulator SPEC, e.g. scripted")] = "scripted",
    agent_arg: Annotated[list[str] | None, typer.Option(help="agent option KEY=VALUE (repeatable)")] = None,
    user_arg: Annotated[list[str] | None, typer.Option(help="user option KEY=VALUE (repeatable)")] = None,
    trials: Annotated[int, typer.Option(min=1, help="trials per task")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="simulations at once")] = 4,
    seed: Annotated[int, typer.Option(help="run seed; each simulation's seed is derived from it")] = 0,
    servers: Annotated[str, typer.Option(help=f"how servers run: {'|'.join(SERVER_MODES)}")] = "inproc",
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory (default: the task file's)")] = None,
    task_id: Annotated[list[str] | None, typer.Option(help="run only these task ids (repeatable)")] = None,
    max_steps: Annotated[int, typer.Option(min=2, help="messages before a simulation is cut off")] = 100,
    max_tool_errors: Annotated[int, typer.Option(min=1, help="consecutive failed tool calls that end it")] = 5,
    one_tool_per_turn: Annotated[bool, typer.Option(help="execute at most one tool call per agent turn")] = False,
    resume: Annotated[bool, typer.Option(help="finish an interrupted run in --out (skips finished simulations)")] = False,
    max_retries: Annotated[int | None, typer.Option(min=0, help="retries of transient LLM errors (rate limit, "
                                                            "timeout, 5xx) for LLM agents and users")] = None,
    record: Annotated[Path | None, typer.Option(help="also write a replayable fixture (LLM cassettes and MCP "
                                                     "transcripts per simulation) to this directory")] = None,
    retry_infra: Annotated[int, typer.Option(min=0, help="run a simulation again (fresh episode, server restarted "
                                                         "if it died) when it ends in an infrastructure error, up "
                                                         "to N times")] = 0,
    toolset: Annotated[str, typer.Option(help="tool profile of the servers: default, or agentchangebench (the "
                                              "reference's exact tool set, with log_shift_event)")] = "default",
) -> None:
    """Run simulations of TASKS with an agent and a user simulator; results go to --out as they finish.

    Example: shiftbox run --domain banking --tasks snapshots/banking/v1/tasks-handwritten.json --agent scripted:oracle --user scripted --trials 2 --out runs/demo
    """
    from .tasks import load_task_file

    if servers not in SERVER_MODES:
        raise fail(f"--servers {servers!r} is not one of {', '.join(SERVER_MODES)}")
    try:
        get_domain(domain).toolset(toolset)
        check_spec(AGENT_GROUP, agent)
        check_spec(USER_GROUP, user)
        agent_options, user_options = parse_options(agent_arg or []), parse_options(user_arg or [])
        if max_retries is not None:  # for the roles an LLM plays; scripted roles have nothing to retry
            for spec, options in ((agent, agent_options), (user, user_options)):
                if spec.startswith("litellm:"):
                    options.setdefault("max_retries", str(max_retries))
        for made in (make_agent(agent, agent_options), make_user(user, user_options)):  # fail on bad options now,
            made.preflight()                                                      # not in every simulation
    except (KeyError, SpecError, ValueError) as exc:
        raise fail(str(exc.args[0])) from None
    if not tasks.is_file():
        raise fail(f"task file {tasks} does not exist")
    try:
        task_file = load_task_file(tasks)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if task_file.domain != domain:
        raise fail(f"{tasks} holds {task_file.domain} tasks, not {domain}")
    selected = task_file.tasks
    if task_id:
        known = {t.id for t in selected}
        missing = [i for i in task_id if i not in known]
        if missing:
            raise fail(f"task ids not in {tasks}: {', '.join(missing)}")
        selected = [t for t in selected if t.id in set(task_id)]
    snapshot_dir = resolve_snapshot(domain, task_file, snapshot)
    if servers == "docker":  # engine and image, before anything is written to --out
        from .world._docker import find_image

        try:
            find_image(domain)
        except DockerError as exc:
            raise fail(str(exc)) from None
    config = RunConfig(
        domain=domain, tasks_sha256=task_file_digest(task_file), task_ids=task_id, agent=agent,
        agent_args=agent_options, user=user, user_args=user_options, trials=trials, seed=seed,
        servers=servers, snapshot=str(snapshot_dir), max_steps=max_steps, max_tool_errors=max_tool_errors,
        one_tool_per_turn=one_tool_per_turn, toolset=toolset,
    )
    metadata = RunMetadata(config=config, shiftbox_version=version("shiftbox"),
                           simulations=len(selected) * trials)
    try:
        finished = prepare_run_dir(out, metadata, task_file, resume)
    except (RunDirError, RunFileError) as exc:
        raise fail(str(exc)) from None
    if finished:
        err.print(f"resuming: {len(finished)} simulations already finished in {out}")

    hooks = None
    if record is not None:
        from .replay import RecordHooks

        if resume:
            raise fail("--record cannot be combined with --resume: a fixture must hold one uninterrupted recording")
        hooks = RecordHooks(record)
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=False)
    bar = progress.add_task("simulations", total=None)
    try:
        with progress:
            anyio.run(lambda: execute_run(
                config, selected, out,
                make_agent=lambda: make_agent(agent, agent_options),
                make_user=lambda: make_user(user, user_options),
                concurrency=concurrency, finished=finished,
                on_start=lambda n: progress.update(bar, total=n),
                on_done=lambda t: progress.advance(bar),
                hooks=hooks, retry_infra=retry_infra,
            ))
    except (SnapshotError, DockerError, ToolContractError) as exc:
        raise fail(str(exc)) from None
    if record is not None:
        from .replay import finish_fixture

        finish_fixture(record, out)
        err.print(f"fixture written to {record}")
    every = read_trajectories(out)
    Console(width=None if sys.stdout.isatty() else 160).print(summary_table(every, {t.id: t for t in task_file.tasks}))
    blamed = [t for t in every if t.termination.blame in ("user", "infrastructure")]
    err.print(f"{len(every)} simulations in {out}/trajectories.jsonl"
              + (f"; {len(blamed)} ended for reasons not the agent's (user simulator or infrastructure)"
                 if blamed else ""))
    if every and len(blamed) == len(every):
        raise fail(nothing_scored(blamed), code=1)


def nothing_scored(blamed: list[Trajectory]) -> str:
    """One line: every simulation failed for a reason not the agent's, and the most frequent reason."""
    reasons: dict[str, int] = {}
    for t in blamed:
        detail = (t.termination.detail.strip().splitlines() or [""])[0][:240]
        key = f"{t.termination.blame}: {t.termination.reason}" + (f": {detail}" if detail else "")
        reasons[key] = reasons.get(key, 0) + 1
    top = max(reasons, key=lambda k: reasons[k])
    return (f"all {len(blamed)} simulations ended for reasons not the agent's, nothing to score; "
            f"{reasons[top]} ended with {top}")
