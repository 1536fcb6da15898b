"""What an assessment request says: the participant to assess and the run's options, read from an A2A message."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..agents.a2a_agent import HANDOVERS

EXAMPLE = '{"participants": {"agent": "http://127.0.0.1:9009"}, "config": {"trials": 1}}'


class AssessmentConfig(BaseModel):
    """The run options a request may choose; the task file, domain and user are the assessor's own."""

    model_config = ConfigDict(extra="forbid")
    task_ids: list[str] | None = Field(None, description="the tasks to run (default: every task of the file)")
    limit: int | None = Field(None, ge=1, description="only the first LIMIT of them")
    trials: int = Field(1, ge=1, le=100)
    seed: int = 0
    max_steps: int = Field(100, ge=1)
    handover: str = Field("text", description=f"how the tools' URL and policy reach the participant: {HANDOVERS}")
    timeout: float | None = Field(None, gt=0, description="seconds the participant may take per turn")


class AssessmentRequest(BaseModel):
    """AgentBeats' request shape: participants by role (exactly one here, any role name) and a config."""

    model_config = ConfigDict(extra="forbid")
    participants: dict[str, str]
    config: AssessmentConfig = Field(default_factory=AssessmentConfig)

    @property
    def participant(self) -> str:
        """The one participant's base URL."""
        return next(iter(self.participants.values()))


class BadRequest(ValueError):
    """A request the assessor cannot run; the message names the problem and the expected shape."""


def read_request(text: str, data: list[Any]) -> AssessmentRequest:
    """The request from a message's data parts (the first object), else from its text as JSON."""
    if data:
        raw: Any = data[0]
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadRequest(f"the assessment request is not JSON ({exc.msg}); send e.g. {EXAMPLE}") from None
    try:
        request = AssessmentRequest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors())
        raise BadRequest(f"the assessment request does not fit ({problems}); send e.g. {EXAMPLE}") from None
    if len(request.participants) != 1:
        raise BadRequest(f"an assessment takes exactly one participant (got {len(request.participants)}); "
                         f"send e.g. {EXAMPLE}")
    if not request.participant.startswith(("http://", "https://")):
        raise BadRequest(f"the participant's URL must be http(s) (got {request.participant!r}); send e.g. {EXAMPLE}")
    if request.config.handover not in HANDOVERS:
        raise BadRequest(f"config.handover must be one of {', '.join(HANDOVERS)} (got {request.config.handover!r})")
    return request
