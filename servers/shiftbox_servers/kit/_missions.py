"""Missions: what a domain's goal builders hand the seeded task generator (`shiftbox tasks generate`).

A mission is plain typed data (the servers distribution cannot import the client's task model): the
goal, its action type, the user's reason, the gold calls in order with their dependencies, the facts
the user knows, which call outputs the agent must communicate (attributed to this goal in the task),
and NL assertions. A domain declares one `MissionSet`: a builder per goal label, the goal that opens
a task, who tasks are about and how the user introduces themselves.

Cross-domain dependencies (`shiftbox tasks generate-cross`): a domain may *offer* facts about its subject
(`MissionSet.facts`: kind -> a builder of a `Fact`, one read whose output holds the value, e.g. the address the
bank has on file) and *use* facts of a kind another domain offers (`MissionSet.uses`: kind -> a `FactUse`, a
goal whose mission takes the value as `{"$given": "field"}` params, e.g. the store address set to it). The user
never states the value: the agent must read it in the other domain.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._snapshot import select_rows

ActionType = Literal["single", "serial", "parallel", "chat", "clarify"]
ACTION_TYPES: tuple[str, ...] = ("single", "serial", "parallel", "chat", "clarify")
Subject = dict[str, Any]
"""A row of the snapshot a task is about (the customer), with at least `customer_id` (named in the task notes)."""
DEFAULT_SUBJECTS_QUERY = "SELECT * FROM customers ORDER BY 1"


@dataclass(frozen=True)
class MissionCall:
    """One gold call: `key` names it for `after` (dependencies) and for `{"$from": "key.field"}` params."""

    key: str
    tool: str
    params: dict[str, Any]
    after: tuple[str, ...] = ()
    required: list[str] | None = None
    """Parameters the oracle must match exactly (None: all of them)."""


@dataclass(frozen=True)
class Mission:
    """A goal's mission. Every mission needs gold calls, a chat one too (a general question grounded in one
    read, with an output to `communicate`): a goal only NL assertions check costs an agent nothing when skipped."""

    goal: str
    action_type: ActionType
    reason: str
    """What the user wants, one sentence in the second person ("You want ...")."""
    calls: tuple[MissionCall, ...]
    known: tuple[str, ...] = ()
    """Sentences for known_info (the ids and facts the user knows)."""
    communicate: tuple[str, ...] = ()
    """`"key.path"` of call outputs the agent must tell the user (dots index lists too)."""
    nl_assertions: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportedTask:
    """A task a domain's task importer read from another benchmark's file (`Domain.task_importers`): its missions
    in order (one goal each), the user's known facts and notes on where it came from."""

    id: str
    missions: tuple[Mission, ...]
    known: tuple[str, ...] = ()
    notes: str = ""
    mission_types: Mapping[str, str] = field(default_factory=dict)
    """Goal -> the mission type the source annotates (single, serial, parallel, serial+parallel, chat or clarify),
    where it says more than the action type (MMTB's serial+parallel); path evaluation reads it."""


MissionBuilder = Callable[[sqlite3.Connection, random.Random, Subject], Mission | None]
"""build(db, rng, subject): `db` is the task's episode database as earlier goals left it (read it, never
write), `rng` the generator's seeded random; None means "not feasible for this subject" (another is tried)."""


def mission_call(key: str, tool: str, params: dict[str, Any], after: tuple[str, ...] = (),
                 required: list[str] | None = None) -> MissionCall:
    """One gold call (see `MissionCall`)."""
    return MissionCall(key, tool, params, tuple(after), required)


def mission(goal: str, action_type: ActionType, reason: str, calls: list[MissionCall], *,
            known: tuple[str, ...] = (), communicate: tuple[str, ...] = (), nl: tuple[str, ...] = ()) -> Mission:
    """A goal's mission (see `Mission`)."""
    return Mission(goal, action_type, reason, tuple(calls), tuple(known), tuple(communicate), tuple(nl))


@dataclass(frozen=True)
class Fact:
    """A value about the subject that one read of this domain returns, for another domain's mission."""

    phrase: str
    """How the user names it, to fit "... to {phrase}" ("the address your bank has on file")."""
    call: MissionCall
    """The read that returns it (its `after` is ignored: it runs after the domain's opener, if any)."""
    fields: Mapping[str, str]
    """Field -> "path" into the read's output (dots index lists too), e.g. {"city": "address.city"}."""
    known: tuple[str, ...] = ()
    """Sentences the user needs to point at it (e.g. "Your airline reservation is ABC123.")."""


FactBuilder = Callable[[sqlite3.Connection, random.Random, Subject], Fact | None]
"""build(db, rng, subject): the fact on the domain's episode as the task left it; None: this subject has none."""


@dataclass(frozen=True)
class Given:
    """A fact read in another domain, as a using mission sees it: its values (to check feasibility: never state
    them) and how the user names it."""

    values: Mapping[str, Any]
    phrase: str


@dataclass(frozen=True)
class FactUse:
    """A goal of this domain that needs a fact of another: `build(db, rng, subject, given)` returns the goal's
    mission, whose params name the fact's fields as `{"$given": "field"}` (None: it doesn't fit)."""

    goal: str
    build: Callable[[sqlite3.Connection, random.Random, Subject, Given], Mission | None]


def introduce_by_name(subject: Subject) -> str:
    """The default first sentence of known_info: the subject's `full_name`."""
    return f"You are {subject['full_name']}."


@dataclass(frozen=True)
class MissionSet(Mapping[str, MissionBuilder]):
    """A domain's missions for the task generator: goal label -> builder, plus the generator's view of
    the domain's customers.

    - `opener`: the identification goal most tasks start with (its calls come before every later goal's);
      None when the domain has none.
    - `subjects_query`: SQL listing who tasks are about, in a stable order (default: every `customers` row).
    - `introduce`: subject -> the first sentence of known_info (default: "You are <full_name>.").
    - `account`: subject -> the sentence naming their account here in a cross-domain task, whose known_info
      says who they are once, by name (e.g. "Your airline user id is …"); None: nothing beyond the name.
    - `facts`: fact kind (e.g. "address", "amount") -> builder of a `Fact` this domain offers another.
    - `uses`: fact kind -> the `FactUse` of this domain that needs a fact of that kind from another domain.
    - `variants`: goal -> further builders of that goal, for MMTB mission types its builder makes rarely or never
      (a chat question, a request that omits a detail). Only a plan that asks for a type draws on them
      (`--cover types`), so pairs and cross-domain sets, built from `builders` alone, keep their draws.
    """

    builders: Mapping[str, MissionBuilder] = field(default_factory=dict)
    opener: str | None = None
    subjects_query: str = DEFAULT_SUBJECTS_QUERY
    introduce: Callable[[Subject], str] = introduce_by_name
    account: Callable[[Subject], str] | None = None
    facts: Mapping[str, FactBuilder] = field(default_factory=dict)
    uses: Mapping[str, FactUse] = field(default_factory=dict)
    variants: Mapping[str, tuple[MissionBuilder, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.opener is not None and self.opener not in self.builders:
            raise ValueError(f"opener {self.opener!r} is not one of the goals: {sorted(self.builders)}")
        for kind, use in self.uses.items():
            if use.goal not in self.builders:
                raise ValueError(f"the use of fact {kind!r} names goal {use.goal!r}, which is not one of the goals: "
                                 f"{sorted(self.builders)}")
        unknown = sorted(set(self.variants) - set(self.builders))
        if unknown:
            raise ValueError(f"variants name goals {unknown}, which are not among the goals: {sorted(self.builders)}")

    def every_builder(self, goal: str) -> tuple[MissionBuilder, ...]:
        """The goal's builder, then its variants (the builders a plan asking for a mission type tries in turn)."""
        return (self.builders[goal], *self.variants.get(goal, ()))

    def __getitem__(self, goal: str) -> MissionBuilder:
        return self.builders[goal]

    def __iter__(self) -> Iterator[str]:
        return iter(self.builders)

    def __len__(self) -> int:
        return len(self.builders)

    def subjects(self, db: sqlite3.Connection) -> list[Subject]:
        """Every subject of the snapshot `db`, as `subjects_query` lists them."""
        return select_rows(db, self.subjects_query)
