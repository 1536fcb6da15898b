"""The one LLM boundary: every agent and user-simulator completion goes through `complete()`.

Live, it calls litellm. Under a recording cassette (bound per simulation with `use_cassette`), it
also writes each request and response; under a replaying one it serves the recorded response and
never touches the network — a request that differs from the recording is a `CassetteMiss` naming
the simulation, the call and the first field that differs. Recording at this boundary (rather than
patching HTTP, which is process-global) keeps concurrent simulations apart and keeps credentials
out of fixtures by construction: headers and keys are never part of a request here.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._jsonl import dump_json, load_json
from ._stopwatch import timed

Role = Literal["agent", "user", "judge"]
COST_FIELD = "shiftbox_cost_usd"
"""Added to every response: its price from litellm's local price map (0.0 for models it does not price)."""


class LLMRequest(BaseModel):
    """What decides a completion. Connection details (api_base, api_key) are deliberately not here."""

    role: Role
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    params: dict[str, Any] = Field(default_factory=dict, description="temperature, seed, tool_choice, …")


class LLMConnection(BaseModel):
    """Where and how to call: never recorded."""

    model_config = ConfigDict(extra="forbid")

    api_base: str | None = None
    api_key: str | None = None
    timeout_s: float = 120.0


class Interaction(BaseModel):
    index: int
    request: LLMRequest
    response: dict[str, Any] = Field(description="the litellm response as JSON (choices, usage, model)")


class ReplayDivergence(Exception):
    """A replay did something the recording does not have: never the agent's fault, always an error."""


class CassetteMiss(ReplayDivergence):
    """Replay met an LLM request the recording does not have."""


def first_difference(recorded: Any, actual: Any, path: str = "") -> str | None:
    """The JSON path of the first place two values differ, or None when equal."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in sorted(recorded.keys() | actual.keys()):
            if key not in recorded or key not in actual:
                return f"{path}.{key}".lstrip(".")
            found = first_difference(recorded[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for i, (a, b) in enumerate(zip(recorded, actual, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None if len(recorded) == len(actual) else f"{path} (length {len(recorded)} != {len(actual)})"
    return None if recorded == actual else (path.lstrip(".") or "(value)")


class Cassette:
    """One simulation's LLM interactions, in call order: recording, or replaying from a file."""

    def __init__(self, simulation_id: str, path: Path, mode: Literal["record", "replay"]):
        self.simulation_id, self.path, self.mode = simulation_id, path, mode
        self.interactions: list[Interaction] = []
        self.position = 0
        if mode == "replay":
            if not path.exists():
                raise CassetteMiss(f"cassette missing for {simulation_id}: {path} does not exist")
            self.interactions = [load_json(Interaction, line) for line in path.read_text().splitlines()
                                 if line.strip()]

    def replay(self, request: LLMRequest) -> dict[str, Any]:
        n = self.position
        if n >= len(self.interactions):
            raise CassetteMiss(f"cassette miss for {self.simulation_id}/call {n}: the recording has only "
                               f"{len(self.interactions)} calls ({request.role} asked for one more)")
        recorded = self.interactions[n]
        diff = first_difference(recorded.request.model_dump(mode="json"),
                                without_credentials(request).model_dump(mode="json"))
        if diff:
            raise CassetteMiss(f"cassette miss for {self.simulation_id}/call {n}: request differs in {diff}")
        self.position += 1
        return recorded.response

    def record(self, request: LLMRequest, response: dict[str, Any]) -> None:
        self.interactions.append(Interaction(index=len(self.interactions), request=without_credentials(request),
                                             response=response))

    def save(self) -> None:
        if self.mode == "record":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("".join(dump_json(i) + "\n" for i in self.interactions))


def without_credentials(request: LLMRequest) -> LLMRequest:
    """The request as recorded: parameters passed through options (`extra.extra_headers`, …) redacted."""
    from .redact import redact

    return request.model_copy(update={"params": redact(request.params)})


current_cassette: ContextVar[Cassette | None] = ContextVar("shiftbox_cassette", default=None)


@contextmanager
def use_cassette(cassette: Cassette | None):
    """Bind a cassette to the current simulation (its task and the tasks it starts)."""
    token = current_cassette.set(cassette)
    try:
        yield cassette
    finally:
        current_cassette.reset(token)
        if cassette is not None:
            cassette.save()


async def _call_litellm(request: LLMRequest, connection: LLMConnection) -> dict[str, Any]:
    from ._litellm import import_litellm

    litellm = import_litellm()
    kwargs: dict[str, Any] = dict(request.params)
    if request.tools:
        kwargs["tools"] = request.tools
    response = await litellm.acompletion(
        model=request.model, messages=request.messages, api_base=connection.api_base,
        api_key=connection.api_key, timeout=connection.timeout_s, num_retries=0,
        max_retries=0, **kwargs)  # never retries itself: llm_errors.complete_with_retries does, countably
    data = json.loads(dump_json(response))  # plain JSON values (a lone surrogate the model sent survives)
    for volatile in ("id", "created", "system_fingerprint"):  # differ per call; never part of results
        data.pop(volatile, None)
    usage = data.get("usage") or {}
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=request.model, prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0))
        data[COST_FIELD] = float(prompt_cost + completion_cost)
    except Exception:  # a model litellm does not price (local, fake): no cost rather than a failure
        data[COST_FIELD] = 0.0
    return data


async def complete(request: LLMRequest, connection: LLMConnection | None = None) -> dict[str, Any]:
    """One chat completion as JSON (`choices[0].message`, `usage`): live, recorded or replayed."""
    cassette = current_cassette.get()
    if cassette is not None and cassette.mode == "replay":
        return cassette.replay(request)
    with timed("llm_s"):
        response = await _call_litellm(request, connection or LLMConnection())
    if cassette is not None:
        cassette.record(request, response)
    return response
