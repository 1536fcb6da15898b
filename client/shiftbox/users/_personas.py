"""The persona catalog: how a simulated user talks, kept as data in `personas.json` beside this module."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

DEFAULT_PERSONA = "EASY_1"
CATALOG_FILE = "personas.json"

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
_Templates = Annotated[tuple[_Text, ...], Field(min_length=2)]


class GoalChange(BaseModel):
    """How a persona moves between its goals, within the shift protocol (docs/agents.md#personas).

    The protocol's triggers (a resolution step, "anything else?", a transfer offer, verification failed
    twice, "I cannot help", `patience` user messages on a goal) apply to every persona; these fields
    say what differs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    style: Literal["waits", "abrupt", "stacks", "pivots", "abandons", "protocol"] = Field(
        description="a name for the behaviour below, shown in docs and reports")
    behaviour: _Text = Field(description="the behaviour in one or two sentences: the LLM user's instruction")
    moves_on_at: Literal["resolution", "first_step"] = Field(
        default="first_step", description="first_step: the first resolution step for the goal is enough to move "
                                          "on (the protocol); resolution: wait until the goal is resolved")
    patience: int = Field(default=4, ge=1, le=10, description="user messages on one goal before moving on anyway")
    stall_limit: int | None = Field(
        default=None, ge=1, description="agent replies on a goal that neither make progress nor ask anything, "
                                        "after which the user moves on (abrupt switch); None: no such limit")
    stack: int = Field(default=1, ge=1, le=3, description="goals asked for in one message when moving on")
    repeated_asks: Literal["answer", "refuse", "refuse_and_move_on"] = Field(
        default="answer", description="when the agent asks again for a fact the user already gave: give it, "
                                      "refuse (refusals), or refuse and abandon the goal")
    refusals: tuple[_Text, ...] = Field(default=(), description="said instead of repeating a fact already given")
    pause_phrases: tuple[_Text, ...] = Field(
        default=(), description="said when moving on from unfinished work (asks the agent to pause it); "
                                "none: the unfinished work is left without a word")

    @model_validator(mode="after")
    def _refusals_when_refusing(self) -> GoalChange:
        if self.repeated_asks != "answer" and len(self.refusals) < 2:
            raise ValueError("refusals needs at least two templates when repeated_asks is not 'answer'")
        if self.pause_phrases and len(self.pause_phrases) < 2:
            raise ValueError("pause_phrases needs at least two templates (or none)")
        return self


class Persona(BaseModel):
    """One persona: traits (for people and LLM prompts) and templates (for the scripted user)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    summary: str
    tone: str
    verbosity: Literal["terse", "moderate", "verbose"]
    cooperation: Literal["low", "medium", "high"]
    disclosure: Literal["all_at_once", "when_asked"] = Field(
        description="when asked for one fact: give only that one, or everything known")
    openers: _Templates
    transition_phrases: tuple[_Text, ...] = Field(
        default=(), description="said before the next goal's request; at least two unless announces_shifts is false")
    confirmations: _Templates = Field(description="answers to 'shall I go ahead?'")
    info_prefixes: _Templates = Field(description="said before handing over identifying facts")
    dont_know: _Templates = Field(description="for a fact the user lacks; '{fact}' names it")
    nudges: _Templates = Field(description="impatience when the agent stalls; the request follows")
    closings: _Templates = Field(description="last words before the stop token")

    goal_change: GoalChange = Field(description="how this persona changes goals (shift timing, stacking, pauses)")

    # -- behaviour switches ---------------------------------------------------------------------------
    announces_shifts: bool = Field(
        default=True, description="say a transition phrase before the next goal's request; false: implicit drift")
    answers_after_asks: int = Field(
        default=1, ge=1, description="how many times a fact must be asked for before it is given")
    deflections: tuple[_Text, ...] = Field(
        default=(), description="vague answers to a fact asked too few times; '{fact}' names it")
    policy_push: tuple[_Text, ...] = Field(
        default=(), description="said once, instead of cooperating, the first time the agent asks for facts "
                                "or a confirmation (e.g. 'skip the verification')")

    @field_validator("dont_know", "deflections")
    @classmethod
    def _names_the_fact(cls, templates: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        missing = [t for t in templates if "{fact}" not in t]
        if missing:
            raise ValueError(f"{info.field_name} templates must contain '{{fact}}': {missing}")
        return templates

    @model_validator(mode="after")
    def _templates_for_the_switches(self) -> Persona:
        needed = {"transition_phrases": self.announces_shifts, "deflections": self.answers_after_asks > 1,
                  "policy_push": bool(self.policy_push)}
        for name, used in needed.items():
            templates = getattr(self, name)
            if used and len(templates) < 2:
                raise ValueError(f"{name} needs at least two templates for persona {self.key!r}")
        return self


class _Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    personas: list[Persona]

    @model_validator(mode="after")
    def _unique_keys(self) -> _Catalog:
        keys = [p.key for p in self.personas]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"duplicate persona keys: {dupes}")
        return self


def catalog_identity() -> tuple[int, str]:
    """(schema_version, sha256 of the file's bytes) of the persona catalog: what a run records."""
    return _loaded()[:2]


@lru_cache(maxsize=1)
def _loaded() -> tuple[int, str, tuple[Persona, ...]]:
    """The catalog file read and parsed once a process: its schema version, the sha256 of its bytes, its personas."""
    data = resources.files(__package__).joinpath(CATALOG_FILE).read_bytes()
    catalog = _Catalog.model_validate_json(data)
    return catalog.schema_version, hashlib.sha256(data).hexdigest(), tuple(catalog.personas)


def load_personas() -> dict[str, Persona]:
    """Every persona of the catalog, by key (a fresh dict; the personas themselves are frozen)."""
    return {p.key: p for p in _loaded()[2]}


def get_persona(key: str | None) -> Persona:
    """The persona named `key`; None means the default (EASY_1)."""
    personas = load_personas()
    name = DEFAULT_PERSONA if key is None else key
    if name not in personas:
        raise KeyError(f"unknown persona {name!r}; known personas: {', '.join(personas)}")
    return personas[name]
