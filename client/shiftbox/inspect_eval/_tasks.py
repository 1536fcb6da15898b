"""The Inspect tasks `shiftbox/banking`, `shiftbox/retail`, `shiftbox/airline` and `shiftbox/task_file`, registered
when Inspect loads the `inspect_ai` entry point of the shiftbox package."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from shiftbox_servers.kit import get_domain

from ..redact import redact
from ..runs import ExecutionOptions, ExternalAgent, RunPlan, RunPlanError, plan_run
from ..tasks import Task as ShiftboxTask
from ._episode import close_episode, episode_setup
from ._scorer import pass_hat, shiftbox_scores
from ._solver import TASK_KEY, simulation

INSPECT_AGENT = ExternalAgent("inspect")
"""The agent of an Inspect task: the eval's model (`InspectModelAgent`, made by the solver); the run config records
it as `external:inspect`."""
DEFAULT_TASKS = "tasks.json"
"""A domain task's default task set: the committed one beside the domain's default snapshot."""


def default_task_file(domain: str) -> Path:
    return get_domain(domain).default_snapshot_dir() / DEFAULT_TASKS


def sample(task: ShiftboxTask) -> Sample:
    """One shiftbox task as an Inspect sample: the input shows why the customer calls (the simulated user says it
    in its own words), the metadata holds the whole task."""
    return Sample(id=task.id, input=task.user_scenario.instructions.reason_for_call or task.id,
                  metadata={"domain": task.domain, "persona": task.user_scenario.persona, "goals": task.goals,
                            TASK_KEY: task.model_dump(mode="json")})


def refuse_credentials(user_args: dict[str, Any]) -> None:
    """Inspect writes task options to its log as given, beyond shiftbox's redaction (`shiftbox.redact`): an option
    holding a credential (a key, a header, a URL's user:password or `?token=`) is refused, naming the way in that
    is never written (`api_key_env`, the variable holding the key)."""
    given = {k: str(v) for k, v in user_args.items()}
    holding = sorted(k for k, v in given.items() if redact({k: v}) != {k: v})
    if holding:
        raise RunPlanError(f"-T user_args: {', '.join(holding)} holds a credential, and Inspect writes task options "
                           "to its log as given; pass the key as api_key_env=VARIABLE (the variable holding it) and "
                           "keep user:password, tokens and headers out of the options")


def shiftbox_task(tasks: str | Path | None = None, *, domain: str | None = None, user: str = "scripted",
                  user_args: dict[str, Any] | None = None, task_ids: list[str] | str | None = None, seed: int = 0,
                  max_steps: int = 100, max_tool_errors: int = 5, one_tool_per_turn: bool = False,
                  policy: str = "domain", toolset: str | None = None, dependency_graph: bool = False,
                  graph_refusal: bool = False, servers: str = "inproc", snapshot: str | None = None, retry_infra: int = 0,
                  success_threshold: float = 1.0) -> Task:
    """shiftbox tasks as an Inspect task; the options are `shiftbox run`'s (docs/cli.md), checked by `plan_run`
    (a bad one raises `RunPlanError` naming the fix) when the task is made, before any sample. `tasks` defaults to the domain's committed task set.
    The solver runs each sample's simulation with the eval's model; a solver swapped in (`--solver`) plays it
    through the episode the setup step starts (`shiftbox_tools()`, docs/inspect.md)."""
    user_options: Any = user_args if user_args is not None else {}
    if isinstance(user_options, Mapping):  # YAML values of `-T`; anything else is refused by `plan_run`, naming it
        user_options = {k: str(v) for k, v in user_options.items()}
        refuse_credentials(user_options)
    if isinstance(success_threshold, bool) or not isinstance(success_threshold, int | float):
        raise RunPlanError(f"success_threshold {success_threshold!r}: give a number (TSR at or above it is a success)")
    if tasks is None:
        if domain is None:
            raise ValueError("give tasks=FILE (a shiftbox task file) or a domain")
        tasks = default_task_file(domain)
    ids = [task_ids] if isinstance(task_ids, str) else task_ids
    plan: RunPlan = plan_run(tasks, ".", domain=domain, agent=INSPECT_AGENT, user=user, user_args=user_options,
                             task_ids=ids, seed=seed, options=ExecutionOptions(retry_infra=retry_infra),
                             servers=servers, snapshot=snapshot, max_steps=max_steps, max_tool_errors=max_tool_errors,
                             one_tool_per_turn=one_tool_per_turn, toolset=toolset,
                             dependency_graph=dependency_graph, graph_refusal=graph_refusal, policy=policy)
    return Task(dataset=MemoryDataset([sample(t) for t in plan.tasks], name=f"shiftbox-{plan.config.domain}"),
                solver=simulation(plan), setup=episode_setup(plan), cleanup=close_episode,
                scorer=shiftbox_scores(success_threshold),
                epochs=Epochs(1, ["mean", pass_hat()]),
                metadata={"shiftbox_run_config": plan.config.model_dump(mode="json")})


@task
def task_file(tasks: str, **options: Any) -> Task:
    """The tasks of a shiftbox task file (`-T tasks=FILE`; any domain, cross-domain files too)."""
    return shiftbox_task(tasks, **options)


@task
def banking(**options: Any) -> Task:
    """shiftbox's banking tasks (the committed set, or `-T tasks=FILE`)."""
    return shiftbox_task(domain="banking", **options)


@task
def retail(**options: Any) -> Task:
    """shiftbox's retail tasks (the committed set, or `-T tasks=FILE`)."""
    return shiftbox_task(domain="retail", **options)


@task
def airline(**options: Any) -> Task:
    """shiftbox's airline tasks (the committed set, or `-T tasks=FILE`)."""
    return shiftbox_task(domain="airline", **options)
