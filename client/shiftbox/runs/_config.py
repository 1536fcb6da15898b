"""What decides a run's results (`RunConfig`), what run.json records (`RunMetadata`), and the task file digest."""

from __future__ import annotations

import hashlib
import json
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from shiftbox_servers.kit import domain_list, is_cross_domain

from ..redact import redact, redact_text
from ..tasks import Task, TaskFile
from ..world import ServerMode

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
                                   description="the servers enforce each domain's tool dependency graph "
                                               "(`--dependency-graph`, VitaBench); absent when off")
    policy: AgentPolicy = Field("domain", exclude_if=lambda v: v == "domain",
                                description="the policy an agent is given: the domain's (`domain`) or none "
                                            "(`--policy none`, VitaBench); absent when the domain's")

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
    domains are all among the run's, then the first `limit` of them. `plan_run` and replay both select with this."""
    named = set(config.task_ids or ())
    chosen = [t for t in tasks if not named or t.id in named]
    if is_cross_domain(config.domain):
        runnable = set(domain_list(config.domain))
        chosen = [t for t in chosen if set(domain_list(t.domain)) <= runnable]
    return chosen if config.limit is None else chosen[:config.limit]


def task_file_digest(task_file: TaskFile) -> str:
    return hashlib.sha256(json.dumps(task_file.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
