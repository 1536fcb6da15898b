"""`shiftbox run`: checks and runs an evaluation (`shiftbox.runs.plan_run`, `run_evaluation`) with a progress bar,
then prints its end (`shiftbox.runs.summarize_run`); exit 1 when the agent program failed in a simulation or when
nothing could be scored, 130 on Ctrl-C."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console, Group
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from shiftbox_servers.kit import SnapshotError

from .._registry import SpecError, parse_options
from ..agents import SCRIPTED_AGENTS
from ..errors import OutputPathError
from ..runs import (
    ExecutionOptions,
    RecordWriteError,
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
from ..trajectory import RunFileError, Trajectory, read_trajectories
from ..world import DockerError, ToolContractError
from ._common import ExecutorChoice, PolicyChoice, ServerModeChoice, err, fail, out_console

if TYPE_CHECKING:
    from ..runs import RunSummary


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
        turns = sum(m.role == "assistant" and m.agent_turn is not None for m in t.messages)  # not a gold dialogue's
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
    trials: Annotated[int, typer.Option(help="trials per task")] = 1,
    concurrency: Annotated[int, typer.Option(help="simulations at once (in all worker processes together)")] = 4,
    executor: Annotated[ExecutorChoice | None, typer.Option(
        help="where the simulations run: local (this process), processes (--workers processes of this machine) or "
             "ray (--workers Ray actors; needs shiftbox[ray]); this process writes every result [default: local, "
             "or processes when --workers > 1]")] = None,
    workers: Annotated[int | None, typer.Option(help="worker processes or Ray actors, each with its own "
                                                            "servers (default: the number of cores; at most "
                                                            "--concurrency)")] = None,
    ray_address: Annotated[str | None, typer.Option(help="the Ray cluster for --executor ray: auto (this node's), "
                                                         "HOST:PORT or ray://HOST:10001 (default: a local cluster "
                                                         "started for the run)")] = None,
    worker_cpus: Annotated[float, typer.Option(help="CPUs each Ray actor reserves on its node for the whole run "
                                                    "(--executor ray; Ray spreads the actors across the nodes "
                                                    "with room)")] = 1.0,
    worker_memory_mb: Annotated[int | None, typer.Option(help="memory (MiB) each Ray actor reserves on its node "
                                                               "(--executor ray; default: none)")] = None,
    ray_keep_actors: Annotated[int | None, typer.Option(
        metavar="SECONDS", help="keep the Ray actors on the --ray-address cluster after the run, for the next runs "
                                "of this shiftbox there (they start in a fraction of a second), until idle SECONDS; "
                                "they hold their CPUs while idle; `shiftbox ray-actors stop` ends them [default: "
                                "each run starts its own actors and ends them]")] = None,
    max_llm_concurrency: Annotated[int | None, typer.Option(help="live LLM calls in flight at most, across "
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
    max_steps: Annotated[int, typer.Option(help="messages before a simulation is cut off")] = 100,
    max_tool_errors: Annotated[int, typer.Option(help="consecutive failed tool calls that end it")] = 5,
    one_tool_per_turn: Annotated[bool, typer.Option(help="execute at most one tool call per agent turn")] = False,
    resume: Annotated[bool, typer.Option(help="finish an interrupted run in --out (skips finished simulations)")] = False,
    max_retries: Annotated[int | None, typer.Option(help="retries of transient LLM errors (rate limit, "
                                                            "timeout, 5xx) for LLM agents and users")] = None,
    record: Annotated[Path | None, typer.Option(help="also write a replayable fixture (LLM cassettes and MCP "
                                                     "transcripts per simulation) to this directory")] = None,
    llm_cassettes: Annotated[str, typer.Option(
        help="how --record records LLM calls: boundary (shiftbox's cassettes: the default, faster to replay) or "
             "http (vcrpy HTTP cassettes, needs shiftbox[vcr]: a replay runs the LLM client's request building and "
             "response parsing again: litellm's, or the fast path's own)")] = "boundary",
    retry_infra: Annotated[int, typer.Option(help="run a simulation again (fresh episode, server restarted "
                                                         "if it died) when it ends in an infrastructure error, up "
                                                         "to N times")] = 0,
    toolset: Annotated[str | None, typer.Option(
        help="tool profile of the servers: default, or agentchangebench / tau2 (the reference's exact tool set) "
             "[default: the task file's: an imported reference file's is the reference's tool set; else default]")]
        = None,
    dependency_graph: Annotated[bool, typer.Option(
        help="each tool's description carries its preconditions and postconditions from the domain's dependency "
             "graph; nothing is refused for its order (VitaBench; docs/servers.md)")] = False,
    graph_refusal: Annotated[bool, typer.Option(
        help="with --dependency-graph, the servers also refuse a call whose required tools have not succeeded "
             "in the episode, as precondition_failed (a shiftbox option, not VitaBench's; docs/servers.md)")]
        = False,
    policy: Annotated[PolicyChoice, typer.Option(
        help="the policy the agent is given: domain (the domain's policy.md) or none (VitaBench)")] = PolicyChoice.domain,
    protocol: Annotated[str, typer.Option(
        help="how each task is played: live (one conversation through every goal) or per-mission (each goal its own "
             "scored simulation, <task>~m<k>, started from the gold conversation of the goals before it: MMTB's "
             "teacher forcing; docs/metrics.md). Not the scripted user's shift protocol (--user-arg protocol=...)")]
        = "live",
    preflight: Annotated[bool, typer.Option(
        help="before the run, one cheap request per model endpoint and A2A agent the run calls (a missing or "
             "refused key, or nobody listening, stops the run at once)")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="also print one row per simulation at the end "
                                                                  "(default: the headline only)")] = False,
) -> None:
    """Run simulations of TASKS with an agent and a user simulator; results go to --out as they finish.

    Example: shiftbox run --domain banking --tasks snapshots/banking/v1/tasks-handwritten.json --agent scripted:oracle --user scripted --trials 2 --out runs/demo
    """
    try:
        options = ExecutionOptions(concurrency=concurrency, retry_infra=retry_infra,
                                   executor=executor.value if executor else None, workers=workers,
                                   ray_address=ray_address, max_llm_concurrency=max_llm_concurrency,
                                   worker_cpus=worker_cpus, worker_memory_mb=worker_memory_mb,
                                   ray_keep_actors=ray_keep_actors,
                                   leave_cluster_in_background=True)  # the program exits next (fast exit joins it)
        plan = plan_run(
            tasks, out, domain=domain, agent=agent, user=user, agent_args=parse_options(agent_arg or [], "--agent-arg"),
            user_args=parse_options(user_arg or [], "--user-arg"), trials=trials, options=options, seed=seed,
            servers=servers.value, snapshot=snapshot, task_ids=task_id, limit=limit, max_steps=max_steps,
            max_tool_errors=max_tool_errors, one_tool_per_turn=one_tool_per_turn, resume=resume,
            max_retries=max_retries, record=record, llm_cassettes=llm_cassettes, toolset=toolset,
            dependency_graph=dependency_graph, policy=policy.value, protocol=protocol, graph_refusal=graph_refusal)
        if preflight:
            preflight_run(plan)
    except (SpecError, RunPlanError) as exc:
        raise fail(str(exc)) from None
    try:
        result = run_with_progress(plan, err)
    except (RunDirError, RunFileError, OutputPathError, RunWorkerError, SnapshotError, DockerError,
            ToolContractError) as exc:
        raise fail(str(exc)) from None
    except RecordWriteError as exc:  # a full disk: what is written stays, what failed was cut off
        raise fail(f"{exc}, then finish the run with `{resume_command()}`") from None
    except KeyboardInterrupt:
        raise interrupted(plan) from None
    print_run_summary(plan, result, out_console(), err, verbose=verbose)


def interrupted(plan: RunPlan) -> typer.Exit:
    """Ctrl-C: how many simulations are written, and the command that finishes the run (exit 130, as shells do)."""
    done = len(read_trajectories(plan.out)) if (plan.out / "trajectories.jsonl").exists() else 0
    err.print(f"interrupted: {done} of {plan.metadata.simulations} simulations done; finish with "
              f"`{escape(resume_command())}`")
    return typer.Exit(130)


def resume_command() -> str:
    """This command line with --resume: what finishes an interrupted run."""
    args = sys.argv[1:] + ([] if "--resume" in sys.argv else ["--resume"])
    return shlex.join(["shiftbox", *args])


def run_with_progress(plan: RunPlan, console: Console) -> RunResult:
    """`run_evaluation` with a progress bar (and the resume count) on `console`. The bar redraws itself (a thread,
    10 times a second) only where a redraw shows: on a terminal or in Jupyter; to a file or a pipe only its final
    state is printed (rich's behaviour), so it is drawn then alone, not 10 times a second for nothing."""
    shown_live = console.is_jupyter or (console.is_terminal and not console.is_dumb_terminal)  # as rich's Live draws
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=False, auto_refresh=shown_live)
    bar: list[TaskID] = []  # made as the simulations start: an --out refused before shows no empty bar

    def started(to_run: int, finished: int) -> None:
        if finished:
            console.print(f"resuming: {finished} simulations already finished in {plan.out}")
        bar.append(progress.add_task("simulations", total=to_run))

    def rerun(ids: list[str]) -> None:
        shown = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
        console.print(f"resuming: running {len(ids)} again that ended in an agent program or infrastructure "
                      f"failure ({shown})")

    with progress:
        return run_evaluation(plan, on_start=started, on_done=lambda t: progress.advance(bar[0]), on_rerun=rerun)


def print_run_summary(plan: RunPlan, result: RunResult, out: Console, notes: Console, verbose: bool = False,
                      next_steps: bool = True) -> None:
    """The run's end (headline per agent, not scored and why, LLM use, what to run next unless `next_steps` is off);
    with `verbose`, first one row per simulation. Exit 1 when an agent program failed, when none could be scored, or
    when `--record`'s fixture was refused."""
    from ..runs import summarize_run  # scoring (the metrics package) loads once the run has ended

    if result.fixture is not None:
        notes.print(f"fixture written to {result.fixture}")
    tasks = {t.id: t for t in plan.tasks}  # as run: with --protocol per-mission, the missions
    if verbose:
        out.print(summary_table(result.trajectories, tasks))
    summary = summarize_run(plan.out, result.trajectories, tasks, planned=plan.metadata.simulations,
                            resumed=result.resumed)
    out.print(run_end(summary))
    if next_steps and summary.next_commands:  # one line each, never wrapped: they are copied as they are
        out.print("next: " + "\n      ".join(escape(c) for c in summary.next_commands), soft_wrap=True)
    if result.agent_program_failures:  # first: its detail carries the program's stderr tail
        raise fail(agent_program_failed(result.agent_program_failures, len(result.trajectories)), code=1)
    if summary.simulations and not summary.scored:
        raise fail(nothing_scored(summary), code=1)
    if result.fixture_refused:
        raise fail(result.fixture_refused, code=1)


def agent_program_failed(failed: list[Trajectory], simulations: int) -> str:
    """The count, the first failure's detail (with the program's stderr tail) and the fix."""
    first = min(failed, key=lambda t: (t.task_id, t.trial))
    return (f"{len(failed)} of {simulations} simulations ended because the agent program failed (not scored); "
            f"first, {first.simulation_id}: {first.termination.detail.strip()}\nfix the agent, then run "
            "them again with the same command and --resume")


def run_end(s: RunSummary) -> Group:
    """What `shiftbox run` ends with, before the next commands: the summary as tables and lines."""
    from ..report import run_headline_table, usage_table

    parts: list = [f"{s.simulations} simulations in {s.out}/trajectories.jsonl: {s.scored} scored, "
                   f"{s.simulations - s.scored} not scored" + (f" ({s.resumed} finished before this resume)"
                                                              if s.resumed else "")]
    if s.scored:
        parts.append(run_headline_table(s.agents))
    elif s.simulations:
        parts.append("no headline: no simulation could be scored")
    if s.not_scored:
        parts.append("not scored (left out of the headline), by blame and termination reason:")
        parts += [escape(f"  {g.simulations} × {g.blame}: {g.reason} (first: {g.first}"
                         + (f": {g.detail})" if g.detail else ")")) for g in s.not_scored]
    parts.append(usage_table(s.usage) if s.usage else "LLM tokens and cost: no LLM calls")
    return Group(*parts)


def nothing_scored(s: RunSummary) -> str:
    """One line: every simulation failed for a reason not the agent's, and the most frequent reason."""
    top = s.not_scored[0]
    reason = f"{top.blame}: {top.reason}" + (f": {top.detail}" if top.detail else "")
    return (f"all {s.simulations} simulations ended for reasons not the agent's, nothing to score; "
            f"{top.simulations} ended with {reason}")
