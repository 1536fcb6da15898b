"""What decides a run's results (`RunConfig`), how it is executed (`ExecutionOptions`), an agent its caller brings
(`ExternalAgent`), what run.json records (`RunMetadata`), and the task file digest."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from shiftbox_servers.kit import domain_list, is_cross_domain

from ..cluster import INSTALL_RAY, ray_installed
from ..errors import RunPlanError
from ..redact import redact, redact_text
from ..tasks import Task, TaskFile
from ..world import ServerMode
from ._per_mission import RunProtocol, tasks_for_protocol

AgentPolicy = Literal["domain", "none"]
"""What policy text an agent is given: its domain's, or none (VitaBench's setting, `--policy none`)."""
AGENT_POLICIES: tuple[str, ...] = get_args(AgentPolicy)


class RunConfig(BaseModel):
    """Everything that decides a run's results (concurrency does not, so it is not here)."""

    domain: str
    tasks_sha256: str
    task_ids: list[str] | None = None
    limit: int | None = Field(None, exclude_if=lambda v: v is None,
                              description="the first N of the selected tasks, in file order (`--limit`); absent "
                                          "when every one")
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
    dependency_graph: bool = Field(False, exclude_if=lambda v: not v,
                                   description="the servers' tool descriptions carry each domain's dependency graph "
                                               "(`--dependency-graph`, VitaBench); absent when off")
    graph_refusal: bool = Field(False, exclude_if=lambda v: not v,
                                description="the servers also refuse calls whose required tools have not "
                                            "succeeded (`--graph-refusal`, a shiftbox option); absent when off")
    policy: AgentPolicy = Field("domain", exclude_if=lambda v: v == "domain",
                                description="the policy an agent is given: the domain's (`domain`) or none "
                                            "(`--policy none`, VitaBench); absent when the domain's")
    protocol: RunProtocol = Field("live", exclude_if=lambda v: v == "live",
                                  description="how each task is played (`--protocol`): one live conversation "
                                              "through every goal (`live`), or one scored simulation per goal after "
                                              "the gold conversation of the earlier goals (`per-mission`, MMTB's "
                                              "teacher forcing); absent when live")

    @field_validator("agent_args", "user_args")
    @classmethod
    def _without_credentials(cls, options: dict[str, str]) -> dict[str, str]:
        """Recorded options never hold credentials (run.json, fixture.json); --resume compares them redacted."""
        return redact(options)

    @field_validator("agent", "user")
    @classmethod
    def _spec_without_credentials(cls, spec: str) -> str:
        """Nor do recorded specs (`a2a:https://user:password@host`); the run makes its roles from the specs as given
        (`RunPlan.agent_spec`)."""
        return redact_text(spec)


class RunMetadata(BaseModel):
    config: RunConfig
    shiftbox_version: str
    server: dict = Field(default_factory=dict)
    simulations: int
    user_simulator: dict | None = Field(None, description="the user simulator's identity (UserSimulatorInfo)")
    tool_contracts: dict[str, str] = Field(
        default_factory=dict, description="domain -> digest of the tools its server published (see ServerInfo)")


def selected_tasks(config: RunConfig, tasks: list[Task]) -> list[Task]:
    """The tasks a run takes, in file order: those named (`task_ids`; all without), in a cross-domain run those whose
    domains are all among the run's, then the first `limit` of them; with the per-mission protocol, each one's
    missions in its place (`mission_tasks`). `plan_run` and replay both select with this."""
    named = set(config.task_ids or ())
    chosen = [t for t in tasks if not named or t.id in named]
    if is_cross_domain(config.domain):
        runnable = set(domain_list(config.domain))
        chosen = [t for t in chosen if set(domain_list(t.domain)) <= runnable]
    chosen = chosen if config.limit is None else chosen[:config.limit]
    return tasks_for_protocol(chosen, config.protocol)


def tasks_as_run(config: RunConfig, tasks: list[Task]) -> list[Task]:
    """Every task of a run's task file as the run scores it: the tasks (live), or their missions (per-mission)."""
    return tasks_for_protocol(tasks, config.protocol)


def task_file_digest(task_file: TaskFile) -> str:
    return hashlib.sha256(json.dumps(task_file.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


Executor = Literal["local", "processes", "ray"]
EXECUTORS: tuple[str, ...] = get_args(Executor)


@dataclass(frozen=True)
class ExecutionOptions:
    """How a run's simulations are executed, what does not decide their results (that is `RunConfig`): the one
    object `shiftbox run`, `plan_run`'s callers, Inspect and the RL environments build, and `execute_run` takes.

    `executor` says where the simulations run: "local" in this process; "processes" in `workers` processes of this
    machine (default: `default_workers()`, the cores this process may use); "ray" in `workers` Ray actors on the
    cluster at `ray_address` (or a local cluster started for the run). Without `executor`, `workers` > 1 means
    "processes"; both are resolved when the object is made. `concurrency`: simulations at once, in all workers
    together. `retry_infra`: times a simulation that ended in an infrastructure error is run again.
    `max_llm_concurrency` caps the live LLM calls in flight across all workers (a provider's rate limit counts
    every worker's requests). `worker_cpus` and `worker_memory_mb` are what each Ray actor reserves on its node for
    the whole run (Ray places an actor only where that much is free, spreading the actors across the nodes).
    `ray_keep_actors` (seconds) keeps the Ray actors after the run, for the next runs of the same shiftbox code on
    the cluster, until idle that long (`_ray.KeptActor`); it needs a cluster that outlives the run.
    `leave_cluster_in_background`: a run on a cluster that outlives it leaves it (`ray.shutdown`, often 0.25 s) in a
    thread joined at the process's exit, not before it returns: for a caller that exits next (`shiftbox run`); a
    library caller that goes on using Ray in the process keeps the default, which returns once it has left.
    Checked when made: a bad value is a `RunPlanError` naming the option."""

    concurrency: int = 4
    retry_infra: int = 0
    executor: Executor | None = None
    workers: int | None = None
    ray_address: str | None = None
    max_llm_concurrency: int | None = None
    worker_cpus: float = 1.0
    worker_memory_mb: int | None = None
    ray_keep_actors: int | None = None
    leave_cluster_in_background: bool = False

    def __post_init__(self) -> None:
        check_option_values({"concurrency": self.concurrency, "retry_infra": self.retry_infra,
                             "workers": self.workers, "max_llm_concurrency": self.max_llm_concurrency,
                             "worker_memory_mb": self.worker_memory_mb, "ray_keep_actors": self.ray_keep_actors})
        if isinstance(self.worker_cpus, bool) or not isinstance(self.worker_cpus, int | float) or not (
                0 < self.worker_cpus < float("inf")):
            raise RunPlanError(f"--worker-cpus (worker_cpus) {self.worker_cpus!r}: give a number above 0 (a "
                               "fraction such as 0.5 lets two actors share a CPU)")
        executor, workers = resolve_executor(self.executor, self.workers, self.ray_address)
        if executor != "ray" and (self.worker_cpus != 1 or self.worker_memory_mb is not None):
            raise RunPlanError("--worker-cpus and --worker-memory-mb are for --executor ray (what each Ray actor "
                               "reserves on its node)")
        if self.ray_keep_actors is not None:
            check_keep_actors(executor, self.ray_address)
        object.__setattr__(self, "executor", executor)
        object.__setattr__(self, "workers", workers)


@dataclass(frozen=True)
class ExternalAgent:
    """An agent the plan's caller brings and makes itself (Inspect's model under test, an RL environment's policy):
    `plan_run` checks no agent spec for it, and the run's config records it as what it is, `external:<name>`."""

    name: str

    @property
    def spec(self) -> str:
        return f"{EXTERNAL_AGENT_KIND}:{self.name}"


EXTERNAL_AGENT_KIND = "external"


def is_external_agent(spec: str) -> bool:
    """Whether a recorded agent spec names an agent its caller brought (`ExternalAgent`): no spec makes it."""
    return spec.split(":", 1)[0] == EXTERNAL_AGENT_KIND


MAX_SIMULATIONS = 1_000_000
"""The most simulations one run plans (tasks × trials): beyond it `--trials` is a mistake, not a run (its plan
alone would outgrow the memory)."""

WHOLE_NUMBERS: dict[str, tuple[int | None, str]] = {
    "trials": (1, ""), "concurrency": (1, ""), "seed": (None, ""), "max_steps": (2, ""), "max_tool_errors": (1, ""),
    "retry_infra": (0, ""), "max_retries": (0, ", or leave it out for each model's default"),
    "workers": (1, ", or leave it out for the default"), "max_llm_concurrency": (1, ", or leave it out for no cap"),
    "worker_memory_mb": (1, ", or leave it out to reserve none"),
    "ray_keep_actors": (1, " (seconds idle before the kept actors exit), or leave it out to end them with the run"),
    "limit": (1, " (the first N tasks of the file), or leave it out for all"),
}
"""A run's whole-number options: the least each takes (None: any) and what else to do; the options that may be
left out (None) are those with a hint."""
SWITCHES = ("one_tool_per_turn", "resume", "dependency_graph", "graph_refusal")
MAPPINGS = {"agent_args": "--agent-arg", "user_args": "--user-arg"}


def check_option_values(given: Mapping[str, object]) -> None:
    """Each option's value has its kind and range (whole numbers, true/false, mappings of options, task ids), so a
    bad one is refused before anything runs, named as `shiftbox run` (`--max-steps`) and Inspect (`-T max_steps`)
    name it. The CLI's parsing gives the kinds; a caller from Python or Inspect's `-T` (YAML values) may not."""
    for name, value in given.items():
        said = f"--{name.replace('_', '-')} ({name}) {value!r}"
        if name in WHOLE_NUMBERS:
            least, hint = WHOLE_NUMBERS[name]
            if value is None and hint:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise RunPlanError(f"{said}: give a whole number" + (f", at least {least}" if least is not None else ""))
            if least is not None and value < least:
                raise RunPlanError(f"{said}: give a whole number, at least {least}{hint}")
        elif name in SWITCHES and not isinstance(value, bool):
            raise RunPlanError(f"{said}: give true or false")
        elif name in MAPPINGS and value is not None and not (
                isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            raise RunPlanError(f"{name} {value!r}: give a mapping of option names to values "
                               f"(`{MAPPINGS[name]} KEY=VALUE`, Inspect `-T {name}={{KEY: VALUE}}`)")
        elif name == "task_ids" and value is not None and not (
                isinstance(value, list) and all(isinstance(i, str) for i in value)):
            raise RunPlanError(f"task_ids {value!r}: give a task id or a list of them (`--task-id ID`, repeatable; "
                               "Inspect `-T task_ids=[a,b]`)")


def check_keep_actors(executor: str, ray_address: str | None) -> None:
    """Kept actors need Ray, and a cluster that outlives the run: `--ray-address`, or one this process joined."""
    if executor != "ray":
        raise RunPlanError("--ray-keep-actors is for --executor ray (Ray actors kept for the next runs)")
    ray = sys.modules.get("ray")
    if ray_address is None and not (ray is not None and ray.is_initialized()):
        raise RunPlanError("--ray-keep-actors needs --ray-address (a cluster that outlives the run, e.g. one started "
                           "with `ray start --head`): a cluster the run starts for itself ends with it, and its "
                           "actors too")


def resolve_executor(executor: str | None, workers: int | None, ray_address: str | None) -> tuple[Executor, int]:
    """The executor and its number of workers, from the options as given (see `ExecutionOptions`)."""
    if executor is None:
        executor = "processes" if workers is not None and workers > 1 else "local"
    if executor not in EXECUTORS:
        raise RunPlanError(f"--executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    if executor == "local" and workers not in (None, 1):
        raise RunPlanError(f"--executor local runs every simulation in this process; for --workers {workers} "
                           "use --executor processes (this machine) or --executor ray")
    if ray_address is not None and executor != "ray":
        raise RunPlanError("--ray-address is for --executor ray")
    if executor == "ray" and not ray_installed():
        raise RunPlanError(f"--executor ray needs Ray, an optional extra: {INSTALL_RAY}")
    if workers is None:
        workers = 1 if executor == "local" else default_workers()
    return executor, workers  # type: ignore[return-value]


def default_workers() -> int:
    """The cores this process may run on (its CPU affinity), the default of `shiftbox run --workers`."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
