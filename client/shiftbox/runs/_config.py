"""What decides a run's results (`RunConfig`), what run.json records (`RunMetadata`), and the task file digest."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, Field, field_validator

from ..redact import redact
from ..tasks import TaskFile
from ..world import ServerMode


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



def task_file_digest(task_file: TaskFile) -> str:
    return hashlib.sha256(json.dumps(task_file.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
