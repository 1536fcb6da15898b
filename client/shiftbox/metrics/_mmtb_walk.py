"""Multi-Mission Tool Bench's decision tree (its `bench_test/tool_call_graph.py`, read and re-written here): the agent's
steps of one mission walked down every valid way of doing the mission's gold steps; the first step that matches no
candidate ends the mission.

The gold steps are the mission's calls (each after the calls it depends on), preceded on a clarification mission by
the question for the missing detail and followed by the final answer. An agent step is one reply: its tool calls,
or its text when it calls nothing. At each step:

- calls: their tool names (as a multiset) must be those of a set of ready gold calls, taken whole; ready calls of the
  same tool next to each other in the gold list go all in one step or one per step, one after another (a step with
  some of them and not the others, or with the first and then something else, matches nothing). Arguments are not
  looked at here (`_mmtb_arguments`, after a walk that reached the answer);
- text: it is the question when the question is the candidate step, the final answer (ending the walk, correct) when
  the answer is; any other text (a reply while a call is due), or an empty reply, matches nothing.

A walk is optimal when it reached the answer in the fewest steps any valid way takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal

from ._paths import fewest_steps

ASK, ANSWER = "@ask", "@answer"
"""The keys of the two gold steps that are text: the clarifying question and the final answer."""

Ending = Literal["answered", "unmatched_call", "text_instead_of_call", "empty_reply", "unfinished"]
"""How a walk ended: the final answer, or the first step matching no candidate (a call, a text, an empty reply), or the
steps ran out before the answer."""


@dataclass(frozen=True)
class GoldCall:
    """One gold call of a mission: the tools it allows (name -> the gold arguments it accepts) and the gold calls it
    follows."""

    key: str
    tools: Mapping[str, Sequence[Mapping[str, Any]]]
    after: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AgentStep:
    """One agent reply: its tool calls (name, arguments), or its text when it makes none."""

    text: str | None = None
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()


@dataclass
class Walk:
    """The result of walking a mission's steps."""

    ending: Ending
    steps: int = 0
    """Agent steps that matched a candidate, the final answer included."""
    items: int = 0
    """Matched gold steps: the calls of the matched call steps, one per matched text step (MMTB's progress count)."""
    calls: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    """The matched calls, in order (their arguments are checked after a walk that reached the answer)."""

    @property
    def answered(self) -> bool:
        return self.ending == "answered"


@dataclass(frozen=True)
class Mission:
    """A mission's gold steps: its gold calls in the gold order, whether it starts with a clarifying question."""

    calls: tuple[GoldCall, ...]
    clarify: bool = False

    @property
    def length(self) -> int:
        """Gold steps, the question and the final answer included (MMTB's answer-list length)."""
        return len(self.calls) + int(self.clarify) + 1

    def graph(self) -> dict[str, list[str]]:
        keys = {c.key for c in self.calls}
        return {c.key: sorted(d for d in c.after if d in keys) for c in self.calls}

    def fewest_steps(self, parallel: bool = True) -> int:
        """Steps of the shortest valid walk: the question, the longest dependency chain (one step a call without
        parallel calls), the answer."""
        return int(self.clarify) + fewest_steps(self.graph(), parallel) + 1

    def structure(self) -> Literal["serial", "parallel", "serial+parallel"] | None:
        """MMTB's multi-call class: the gold calls, in order, cut into layers (a call depending on one of the current
        layer starts the next); `serial` with several layers, `parallel` with a layer of several calls, both, or None
        (one call, or none)."""
        layers: list[list[str]] = [[]]
        for call in self.calls:
            if call.after & set(layers[-1]):
                layers.append([])
            layers[-1].append(call.key)
        serial, parallel = len(layers) > 1, any(len(layer) > 1 for layer in layers)
        if serial and parallel:
            return "serial+parallel"
        return "serial" if serial else "parallel" if parallel else None


def _runs(ready: Sequence[GoldCall]) -> list[list[GoldCall]]:
    """Ready gold calls cut into runs of neighbours (in gold order) allowing the same tools."""
    runs: list[list[GoldCall]] = []
    for call in ready:
        if runs and set(runs[-1][-1].tools) == set(call.tools):
            runs[-1].append(call)
        else:
            runs.append([call])
    return runs


def _fits(chosen: Sequence[GoldCall], names: Sequence[str]) -> bool:
    """The calls' tool names can be handed out one to each chosen gold call allowing it (a bipartite matching, found
    by augmenting paths)."""
    if len(chosen) != len(names):
        return False
    holder: dict[int, int] = {}  # gold call index -> the name index it holds

    def place(name: int, seen: set[int]) -> bool:
        for i, call in enumerate(chosen):
            if names[name] in call.tools and i not in seen:
                seen.add(i)
                if i not in holder or place(holder[i], seen):
                    holder[i] = name
                    return True
        return False

    return all(place(n, set()) for n in range(len(names)))


def _match(ready: Sequence[GoldCall], names: Sequence[str]) -> tuple[list[GoldCall], list[GoldCall]] | None:
    """The ready gold calls a step's calls match (the first set in gold order), and the run they commit to doing one
    per step after this one; None when no allowed set matches."""
    runs = [run for run in _runs(ready) if len(run) > 1]
    called = set(names)
    for chosen in combinations([c for c in ready if called & c.tools.keys()], len(names)):
        if not _fits(chosen, names):
            continue
        keys = {c.key for c in chosen}
        for run in runs:
            taken = [c for c in run if c.key in keys]
            if len(chosen) == 1 and taken == run[:1]:
                return list(chosen), run[1:]
            if taken and len(taken) != len(run):
                break
        else:
            return list(chosen), []
    return None


def walk(mission: Mission, steps: Iterable[AgentStep]) -> Walk:
    """Walk the agent's steps down the mission's decision tree (module docstring); steps after the answer are not
    looked at."""
    done: set[str] = set()
    queued: list[GoldCall] = []
    result = Walk("unfinished")
    for step in steps:
        if step.calls:
            names = [name for name, _ in step.calls]
            ready = [c for c in mission.calls if c.key not in done and c.after <= done
                     and (not mission.clarify or ASK in done)]
            if queued:
                found = (queued[:1], queued[1:]) if _fits(queued[:1], names) else None
            else:
                found = _match(ready, names)
            if found is None:
                result.ending = "unmatched_call"
                return result
            chosen, queued = found
            done.update(c.key for c in chosen)
            result.calls.extend(step.calls)
            result.items += len(step.calls)
        elif not step.text:
            result.ending = "empty_reply"
            return result
        elif mission.clarify and ASK not in done:
            done.add(ASK)
            result.items += 1
        elif not queued and all(c.key in done for c in mission.calls):
            result.steps += 1
            result.items += 1
            result.ending = "answered"
            return result
        else:
            result.ending = "text_instead_of_call"
            return result
        result.steps += 1
    return result
