"""`shiftbox run`: checks and runs an evaluation (`shiftbox.runs.plan_run`, `run_evaluation`) with a progress bar,
then prints a summary of the simulations; exit 1 when the agent program failed in a simulation, or when nothing
could be scored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from shiftbox_servers.kit import SnapshotError

from .._registry import SpecError, parse_options
from .._text import clip
from ..agents import SCRIPTED_AGENTS
from ..runs import (
    RunDirError,
    RunPlan,
    RunPlanError,
    RunResult,
    RunWorkerError,
    plan_run,
    preflight_run,
    run_evaluation,
)
from ..tasks import satisfied_actions
from ..trajectory import RunFileError, Trajectory
from ..world import DockerError, ToolContractError
from ._common import ExecutorChoice, PolicyChoice, ServerModeChoice, err, fail, out_console


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
        end = t.termination.reason if t.termination.scored else f"[red]{t.termination.reason}[/]"
        table.add_row(t.simulation_id, t.persona or "-", " > ".join(t.goals), str(len(t.shifts)), end,
                      str(len(t.tool_calls)), str(errors), f"{done}/{total}", str(turns))
    return table


AGENT_HELP = (f"agent SPEC, KIND:ARG: scripted:<name> ({', '.join(SCRIPTED_AGENTS)}), litellm:<model> (e.g. "
              'litellm:openai/gpt-4.1), cmd:"<command>" (an external agent program), a2a:<URL> (a remote A2A agent), '
              "or a plug-in's kind (docs/agents.md)")


def run(
    domain: Annotated[str, typer.Option(help="domain to run (banking, …), or several separated by commas for "
                                             "cross-domain tasks (banking,airline: tools named <domain>__<tool>)")],
    tasks: Annotated[Path, typer.Option(help="task file (native, or an AgentChangeBench task list)")],
    out: Annotated[Path, typer.Option(help="run directory to write")],
    agent: Annotated[str, typer.Option(help=AGENT_HELP)] = "scripted:oracle",
    user: Annotated[str, typer.Option(help="user simulator SPEC: scripted, litellm:<model>, or a plug-in's kind")] = "scripted",
    agent_arg: Annotated[list[str] | None, typer.Option(help="agent option KEY=VALUE (repeatable)")] = None,
    user_arg: Annotated[list[str] | None, typer.Option(help="user option KEY=VALUE (repeatable)")] = None,
    trials: Annotated[int, typer.Option(min=1, help="trials per task")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="simulations at once (in all worker processes together)")] = 4,
    executor: Annotated[ExecutorChoice | None, typer.Option(
        help="where the simulations run: local (this process), processes (--workers processes of this machine) or "
             "ray (--workers Ray actors; needs shiftbox[ray]); this process writes every result [default: local, "
             "or processes when --workers > 1]")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="worker processes or Ray actors, each with its own "
                                                            "servers (default: the number of cores; at most "
                                                            "--concurrency)")] = None,
    ray_address: Annotated[str | None, typer.Option(help="the Ray cluster for --executor ray: auto (this node's), "
                                                         "HOST:PORT or ray://HOST:10001 (default: a local cluster "
                                                         "started for the run)")] = None,
    max_llm_concurrency: Annotated[int | None, typer.Option(min=1, help="live LLM calls in flight at most, across "
                                                                       "all workers (a provider's rate limit; "
                                                                       "default: no cap)")] = None,
    seed: Annotated[int, typer.Option(help="run seed; each simulation's seed is derived from it")] = 0,
    servers: Annotated[ServerModeChoice, typer.Option(help="how the domain servers run")] = ServerModeChoice.inproc,
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory (default: the task file's); with several "
                                                       "domains one per domain, separated by commas")] = None,
    task_id: Annotated[list[str] | None, typer.Option(help="run only these task ids (repeatable)")] = None,
    limit: Annotated[int | None, typer.Option(help="run only the first N tasks (of those named by --task-id), in "
                                                   "file order; recorded, so --resume and replay take the same")]
        = None,
    max_steps: Annotated[int, typer.Option(min=2, help="messages before a simulation is cut off")] = 100,
    max_tool_errors: Annotated[int, typer.Option(min=1, help="consecutive failed tool calls that end it")] = 5,
    one_tool_per_turn: Annotated[bool, typer.Option(help="execute at most one tool call per agent turn")] = False,
    resume: Annotated[bool, typer.Option(help="finish an interrupted run in --out (skips finished simulations)")] = False,
    max_retries: Annotated[int | None, typer.Option(min=0, help="retries of transient LLM errors (rate limit, "
                                                            "timeout, 5xx) for LLM agents and users")] = None,
    record: Annotated[Path | None, typer.Option(help="also write a replayable fixture (LLM cassettes and MCP "
                                                     "transcripts per simulation) to this directory")] = None,
    llm_cassettes: Annotated[str, typer.Option(
        help="how --record records LLM calls: boundary (shiftbox's cassettes: the default, faster to replay) or "
             "http (vcrpy HTTP cassettes, needs shiftbox[vcr]: a replay runs litellm's request building and "
             "response parsing again)")] = "boundary",
    retry_infra: Annotated[int, typer.Option(min=0, help="run a simulation again (fresh episode, server restarted "
                                                         "if it died) when it ends in an infrastructure error, up "
                                                         "to N times")] = 0,
    toolset: Annotated[str | None, typer.Option(
        help="tool profile of the servers: default, or agentchangebench / tau2 (the reference's exact tool set) "
             "[default: the task file's: an imported reference file's is the reference's tool set; else default]")]
        = None,
    dependency_graph: Annotated[bool, typer.Option(
        help="the servers enforce each domain's tool dependency graph: a call whose prerequisite tools have not "
             "succeeded in the episode is refused as precondition_failed (VitaBench; docs/servers.md)")] = False,
    policy: Annotated[PolicyChoice, typer.Option(
        help="the policy the agent is given: domain (the domain's policy.md) or none (VitaBench)")] = PolicyChoice.domain,
    preflight: Annotated[bool, typer.Option(
        help="before the run, one cheap request per model endpoint and A2A agent the run calls (a missing or "
             "refused key, or nobody listening, stops the run at once)")] = True,
) -> None:
    """Run simulations of TASKS with an agent and a user simulator; results go to --out as they finish.

    Example: shiftbox run --domain banking --tasks snapshots/banking/v1/tasks-handwritten.json --agent scripted:oracle --user scripted --trials 2 --out runs/demo
    """
    try:
        plan = plan_run(
            tasks, out, domain=domain, agent=agent, user=user, agent_args=parse_options(agent_arg or []),
            user_args=parse_options(user_arg or []), trials=trials, concurrency=concurrency, seed=seed,
            servers=servers.value, snapshot=snapshot, task_ids=task_id, limit=limit, max_steps=max_steps,
            max_tool_errors=max_tool_errors, one_tool_per_turn=one_tool_per_turn, resume=resume,
            max_retries=max_retries, record=record, llm_cassettes=llm_cassettes, retry_infra=retry_infra, toolset=toolset,
            dependency_graph=dependency_graph, policy=policy.value,
            executor=executor.value if executor else None, workers=workers, ray_address=ray_address,
            max_llm_concurrency=max_llm_concurrency)
        if preflight:
            preflight_run(plan)
    except (SpecError, RunPlanError) as exc:
        raise fail(str(exc)) from None
    try:
        result = run_with_progress(plan, err)
    except (RunDirError, RunFileError, RunWorkerError, SnapshotError, DockerError, ToolContractError) as exc:
        raise fail(str(exc)) from None
    print_run_summary(plan, result, out_console(), err)


def run_with_progress(plan: RunPlan, console: Console) -> RunResult:
    """`run_evaluation` with a progress bar (and the resume count) on `console`."""
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=False)
    bar = progress.add_task("simulations", total=None)

    def started(to_run: int, finished: int) -> None:
        if finished:
            console.print(f"resuming: {finished} simulations already finished in {plan.out}")
        progress.update(bar, total=to_run)

    def rerun(ids: list[str]) -> None:
        shown = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
        console.print(f"resuming: running {len(ids)} again that ended in an agent program or infrastructure "
                      f"failure ({shown})")

    with progress:
        return run_evaluation(plan, on_start=started, on_done=lambda t: progress.advance(bar), on_rerun=rerun)


def print_run_summary(plan: RunPlan, result: RunResult, out: Console, notes: Console) -> None:
    """The simulations table, where they are, and exit 1 when none could be scored (none ended on the agent)."""
    if result.fixture is not None:
        notes.print(f"fixture written to {result.fixture}")
    every, blamed = result.trajectories, result.not_the_agents_fault
    out.print(summary_table(every, {t.id: t for t in plan.task_file.tasks}))
    notes.print(f"{len(every)} simulations in {plan.out}/trajectories.jsonl"
                + (f"; {len(blamed)} ended for reasons not the agent's (user simulator or infrastructure)"
                   if blamed else ""))
    if result.agent_program_failures:
        raise fail(agent_program_failed(result.agent_program_failures, len(every)), code=1)
    if every and len(blamed) == len(every):
        raise fail(nothing_scored(blamed), code=1)
    if result.fixture_refused:
        raise fail(result.fixture_refused, code=1)


def agent_program_failed(failed: list[Trajectory], simulations: int) -> str:
    """The count, the first failure's detail (with the program's stderr tail) and the fix."""
    first = min(failed, key=lambda t: (t.task_id, t.trial))
    return (f"{len(failed)} of {simulations} simulations ended because the agent program failed (not scored); "
            f"first, {first.simulation_id}: {first.termination.detail.strip()}\nfix the agent, then run "
            "them again with the same command and --resume")


SUMMARY_DETAIL_CHARS = 1000
"""A failure's first line in the summary, shortened at a word boundary past this (an auth failure fits whole)."""


def nothing_scored(blamed: list[Trajectory]) -> str:
    """One line: every simulation failed for a reason not the agent's, and the most frequent reason."""
    reasons: dict[str, int] = {}
    for t in blamed:
        detail = clip((t.termination.detail.strip().splitlines() or [""])[0], SUMMARY_DETAIL_CHARS)
        key = f"{t.termination.blame}: {t.termination.reason}" + (f": {detail}" if detail else "")
        reasons[key] = reasons.get(key, 0) + 1
    top = max(reasons, key=lambda k: reasons[k])
    return (f"all {len(blamed)} simulations ended for reasons not the agent's, nothing to score; "
            f"{reasons[top]} ended with {top}")
