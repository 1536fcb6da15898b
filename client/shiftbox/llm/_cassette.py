"""Cassettes: one simulation's LLM interactions, recorded in call order or replayed from a file.

A cassette is bound per simulation with `use_cassette` (a context variable, so concurrent
simulations stay apart). Replaying, a request that differs from the recording is a `CassetteMiss`
naming the simulation, the call and the first field that differs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from shiftbox_servers.kit import text_lines

from .._cassette_file import check_cassette_file
from .._jsonl import dump_json, load_json
from ..errors import CassetteFileError, CassetteMiss
from ..redact import redact
from ._model import LLMConnection, LLMRequest


class Interaction(BaseModel):
    index: int
    request: LLMRequest
    response: dict[str, Any] = Field(description="the litellm response as JSON (choices, usage, model)")


def first_difference(recorded: Any, actual: Any, path: str = "") -> str | None:
    """The JSON path of the first place two values differ, or None when equal. Equal values (a replay that
    repeats) are settled by one comparison in C; only a difference is walked, down the path that differs."""
    if recorded == actual:
        return None
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


def without_credentials(request: LLMRequest) -> LLMRequest:
    """The request as recorded: parameters passed through options (`extra.extra_headers`, …) redacted."""
    return request.model_copy(update={"params": redact(request.params)})


def read_interactions(path: Path) -> list[Interaction]:
    """A boundary cassette's interactions; CassetteFileError naming the file and the limit or line it breaks."""
    check_cassette_file(path)
    interactions = []
    for number, line in enumerate(text_lines(path.read_text()), 1):
        if line.strip():
            try:
                interactions.append(load_json(Interaction, line))
            except (ValidationError, ValueError) as exc:
                reason = " ".join(str(exc).splitlines()[:2])
                raise CassetteFileError(f"cassette {path} line {number}: not an interaction ({reason}); it was "
                                        "not written by shiftbox: record it again") from None
    return interactions


class Cassette:
    """One simulation's LLM interactions, in call order: recording, or replaying from a file."""

    over_http = False
    """True for `HttpCassette`: the call is made as if live and answered, or recorded, at the HTTP level."""

    def __init__(self, simulation_id: str, path: Path, mode: Literal["record", "replay"]):
        self.simulation_id, self.path, self.mode = simulation_id, path, mode
        self.interactions: list[Interaction] = []
        self.position = 0
        if mode == "replay":
            if not path.exists():
                raise CassetteMiss(f"cassette missing for {simulation_id}: {path} does not exist")
            self.interactions = read_interactions(path)

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

    def serving(self, connection: LLMConnection) -> AbstractContextManager[LLMConnection]:
        """Around a call that reaches litellm: the connection to call with (`HttpCassette` also routes its HTTP)."""
        return nullcontext(connection)

    def save(self) -> None:
        if self.mode == "record":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("".join(dump_json(i) + "\n" for i in self.interactions))


current_cassette: ContextVar[Cassette | None] = ContextVar("shiftbox_cassette", default=None)


@contextmanager
def use_cassette(cassette: Cassette | None) -> Iterator[Cassette | None]:
    """Bind a cassette to the current simulation (its task and the tasks it starts)."""
    token = current_cassette.set(cassette)
    try:
        yield cassette
    finally:
        current_cassette.reset(token)
        if cassette is not None:
            cassette.save()
