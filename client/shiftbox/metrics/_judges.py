"""Judges decide the judged parts of metrics: NL assertions, goal acknowledgment and rubric windows.

One interface for an LLM judge (through the LLM boundary, see `_llm_judge.py`) and the deterministic detector used
when no judge is configured. A judge that cannot decide returns None and the metric reports the part
as not judged (NL assertions, rubric) or falls back to the detector (acknowledgment).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, Field

from .._usage import Usage
from ..trajectory import Message, Trajectory


class NLVerdicts(BaseModel):
    """One verdict per assertion, in order, with the judge's usage (counted apart from agent and user)."""

    met: list[bool]
    judge: str
    usage: Usage = Field(default_factory=Usage, description="the judge's tokens and cost for these verdicts")
    reasons: list[str] = Field(default_factory=list, description="the judge's reason for each verdict, if it gave one")


class RubricState(BaseModel):
    """A rubric item as the judge carries it from window to window: met so far or not, and its notes (the
    evidence seen so far, with message indices), which the next window's question shows it again."""

    item: str
    met: bool = False
    notes: str = ""


RUBRIC_WINDOW = 10
"""Messages per rubric window by default: VitaBench's window size."""
RUBRIC_STRIDE = 8
"""Messages from one rubric window's start to the next by default: VitaBench's window less its overlap of 2."""


class Judge:
    """What metrics ask a judge; a judge derives from this and overrides what it can decide (the defaults
    decide nothing). `usage` is its running total of LLM calls, reported apart from agent and user;
    `rubric_window` and `rubric_stride` shape the sliding windows a rubric is judged over."""

    name: str
    usage: Usage | None = None
    rubric_window: int = RUBRIC_WINDOW
    rubric_stride: int = RUBRIC_STRIDE

    @contextlib.contextmanager
    def judging(self, simulation_id: str) -> Iterator[None]:
        """Around every question about one simulation (an LLM judge binds that simulation's cassette here)."""
        yield

    def nl_assertions(self, trajectory: Trajectory, assertions: list[str]) -> NLVerdicts | None:
        """Verdicts for every assertion, or None when it cannot judge (the channel is 'not judged')."""
        return None

    def acknowledges(self, trajectory: Trajectory, message: Message, goal: str) -> bool | None:
        """Does this assistant message explicitly acknowledge or target `goal`? None = cannot tell."""
        return None

    def rubric_verdicts(self, trajectory: Trajectory, instruction: str, window: list[Message],
                        items: list[RubricState], number: int, windows: int) -> NLVerdicts | None:
        """Every item's state after window `number` of `windows` (from 0), given the user's instruction and each
        item's state and notes so far: one verdict per item (its notes as the reason), or None when it cannot
        judge (the rubric is then not judged)."""
        return None

    def ask(self, kind: str, system: str, prompt: str, parse: Callable[[str], Any | None]) -> Any | None:
        """One question whose prompts the caller wrote (another benchmark's judging procedure): the answer as
        `parse` reads it, or None when the judge cannot answer or `parse` cannot read the answer."""
        return None


def judge_report(judge: Judge) -> dict:
    """What a run's metrics say of its judge (`RunMetrics.judge`): its name and token use, apart from agent and user."""
    return {"name": judge.name, "usage": judge.usage.model_dump() if judge.usage is not None else {}}


def goal_terms(goal: str, lexicons: Mapping[str, tuple[str, ...]], generic: Iterable[str] = ()) -> tuple[str, ...]:
    """Terms tied to one goal: its own name ('account info') and the domain's lexicon for it (else the
    label's words), less the domain's generic terms ('account'), which name no goal in particular."""
    common = {w.lower().strip() for w in generic}
    label = " ".join(w for w in re.split(r"[_\s]+", goal.lower()) if w)
    words = lexicons.get(goal) or tuple(w for w in label.split() if len(w) > 2)
    return tuple(dict.fromkeys(t for t in (label, *(w.lower() for w in words)) if t.strip() not in common))


ECHO_MIN_WORDS = 3
"""A customer message this long or longer, quoted back whole, is an echo; a shorter one ("dispute") may well
be the agent's own word."""


def _words(text: str) -> str:
    return " ".join(text.lower().split())


def without_echoes(trajectory: Trajectory, message: Message) -> str:
    """The assistant message's text (lowercased, whitespace collapsed) less every earlier customer message of
    `ECHO_MIN_WORDS` words or more that it quotes whole: repeating the customer's words acknowledges nothing."""
    text = _words(message.content or "")
    quoted = {_words(m.content or "") for m in trajectory.messages if m.role == "user" and m.index < message.index}
    for echo in sorted((q for q in quoted if len(q.split()) >= ECHO_MIN_WORDS), key=len, reverse=True):
        text = text.replace(echo, " ")
    return text


class DeterministicDetector(Judge):
    """Acknowledgment without an LLM: the text uses a term tied to the goal, or the turn calls a relevant tool."""

    name = "detector"

    def __init__(self, lexicons: Mapping[str, tuple[str, ...]], relevant_tools: Mapping[str, set[str]],
                 generic_terms: Iterable[str] = ()):
        self.lexicons = lexicons
        self.relevant_tools = relevant_tools
        self.generic_terms = tuple(generic_terms)

    def nl_assertions(self, trajectory: Trajectory, assertions: list[str]) -> NLVerdicts | None:
        return None

    def acknowledges(self, trajectory: Trajectory, message: Message, goal: str) -> bool | None:
        text = without_echoes(trajectory, message)
        terms = goal_terms(goal, self.lexicons, self.generic_terms)
        if any(re.search(rf"\b{re.escape(term)}", text) for term in terms):
            return True
        tools = self.relevant_tools.get(goal, set())
        return any(call.name in tools for call in message.tool_calls)
