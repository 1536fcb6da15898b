"""An LLM judge: NL assertions (TSR's nl_assertion channel), goal acknowledgment (GSRT) and rubric windows.

One completion per question through the LLM boundary (`shiftbox.llm.complete_blocking`, role
"judge"), so it is retried, priced, and recorded or replayed under a cassette like the agent's and
the user simulator's calls; temperature 0, prompts fixed in this module (so recordings match on
replay). The judge never raises: a failed call, an unparseable answer or an answer with the wrong
number of verdicts gives None, and the metric reports "not judged" (or falls back to the
deterministic detector) — except a replay that diverges from its cassette, which is raised. Token
usage and cost are kept per call and as a running total on the judge, apart from the agent's and the
user simulator's. Given `cassettes`, every simulation's questions are recorded to (or replayed from)
that simulation's cassette (`Judge.judging`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from shiftbox_servers.kit import MAX_INPUT_DEPTH, escape_lone_surrogates, json_depth

from ..errors import ReplayDivergence
from ..llm import (
    Cassette,
    LLMConnection,
    LLMEndpoint,
    LLMRequest,
    Usage,
    complete_blocking,
    first_message,
    use_cassette,
)
from ..trajectory import Message, Trajectory
from ._judges import RUBRIC_STRIDE, RUBRIC_WINDOW, Judge, NLVerdicts, RubricState

TOOL_RESULT_MAX_CHARS = 600
"""Tool results longer than this are cut in the NL-assertion and acknowledgment transcripts (the judge needs the
gist, not the rows); rubric windows show them whole, as VitaBench's judge sees them."""

NL_SYSTEM_PROMPT = (
    "You are a strict, impartial evaluator of conversations between a customer-service agent and a "
    "user. You decide whether statements about a conversation are true, using only the transcript. "
    "You answer with JSON only."
)

NL_USER_PROMPT = """Transcript (message index, role; tool calls and their results included):
<transcript>
{transcript}
</transcript>

Assertions about the agent's behaviour in this conversation:
{assertions}

For each assertion decide whether it is met, judging only from the transcript. An assertion is met
only if the transcript clearly shows it; if it is unclear or not shown, it is not met.

Answer with exactly one JSON object and nothing else, with one verdict per assertion ({count} in
total), in order:
{{"verdicts": [{{"index": 1, "met": true, "reason": "one short sentence"}}]}}"""

ACK_SYSTEM_PROMPT = (
    "You are a strict, impartial evaluator of conversations between a customer-service agent and a "
    "user whose goals change during the conversation. You answer with JSON only."
)

ACK_USER_PROMPT = """Transcript up to the message under review (message index, role; tool calls and results included):
<transcript>
{transcript}
</transcript>

The user's new goal: {goal}

Message under review: the assistant message [{index}]:
<message>
{message}
</message>

Does this assistant message explicitly acknowledge the user's new goal, or start working on it
(for example by asking for details it needs or calling a tool that serves it)? Continuing only with
an earlier goal, or generic small talk, does not count.

Answer with exactly one JSON object and nothing else:
{{"acknowledges": true}} or {{"acknowledges": false}}"""


RUBRIC_SYSTEM_PROMPT = (
    "You are a strict, impartial evaluator of a conversation between an assistant that can call tools and a "
    "user. The conversation is read one window of messages at a time, and you keep a running verdict and notes "
    "for every rubric item from one window to the next. You answer with JSON only."
)

RUBRIC_USER_PROMPT = """The user's full instruction (what the user set out to get done):
<instruction>
{instruction}
</instruction>

Window {number} of {windows}: messages {first} to {last} (message index, role; tool calls and their full results included; neighbouring windows share a few messages):
<window>
{transcript}
</window>

Every rubric item with its verdict and notes after the earlier windows (each one starts not met, without notes), one JSON object a line:
<rubric>
{items}
</rubric>

Update every item with what this window shows:
- An item becomes met when the assistant's replies and tool calls have now achieved it. Count the evidence its
  notes keep from earlier windows together with this window: a fact the assistant found earlier and an action
  it takes now can meet an item together.
- A met item goes back to not met only when the assistant undoes or contradicts, in this window, what met it
  (it cancels the order it placed, or replaces a right answer with a wrong one). When the user changes their
  own request, what the assistant already achieved for the earlier request stands.
- Tool results are what the assistant saw, not what it told the user; a call that failed achieved nothing.
  Quantities, amounts, dates and times must match the item exactly: the user accepting less does not meet it.
- An item this window does not concern keeps its verdict. Every item keeps its notes: repeat the earlier notes
  and add, briefly and with message indices such as [12], what this window shows about it and why a verdict
  changed.

Answer with exactly one JSON object and nothing else, one entry per item ({count} in total), in order:
{{"verdicts": [{{"index": 1, "met": true, "notes": "the item's notes, updated"}}]}}"""


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return escape_lone_surrogates(f"{name}({text})")  # an agent's lone surrogate stays sendable


def tool_names_of(trajectory: Trajectory) -> dict[str, str]:
    """Tool call id -> tool name over the conversation (a result's line names its tool)."""
    return {call.id: call.name for m in trajectory.messages for call in m.tool_calls}


def message_lines(message: Message, tool_names: dict[str, str],
                  tool_max_chars: int | None = TOOL_RESULT_MAX_CHARS) -> list[str]:
    """One message as compact transcript lines; a tool result cut at `tool_max_chars` (None: whole)."""
    tag = f"[{message.index}]"
    if message.role == "tool":
        name = tool_names.get(message.tool_call_id or "", "tool")
        status = " (error)" if message.is_error else ""
        return [f"{tag} tool result {name}{status}: {_cut(message.content or '', tool_max_chars)}"]
    lines = []
    if message.content:
        lines.append(f"{tag} {message.role}: {message.content}")
    for call in message.tool_calls:
        lines.append(f"{tag} {message.role} calls tool {_call_text(call.name, call.arguments)}")
    if not lines:
        lines.append(f"{tag} {message.role}: (empty)")
    return lines


def render_transcript(trajectory: Trajectory, *, upto: int | None = None,
                      tool_max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """The conversation as compact lines, optionally only messages with index <= `upto`."""
    tool_names = tool_names_of(trajectory)
    lines: list[str] = []
    for message in trajectory.messages:
        if upto is not None and message.index > upto:
            break
        lines.extend(message_lines(message, tool_names, tool_max_chars))
    return "\n".join(lines)


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str, key: str) -> dict[str, Any] | None:
    """The first JSON object in `text` that has `key`: bare, in a code fence, or amid other prose."""
    if json_depth(text) > MAX_INPUT_DEPTH:  # `json` recurses per level: a reply nested this deep is no verdict
        return None
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            value = None
        if isinstance(value, dict) and key in value:
            return value
        for match in re.finditer(r"\{", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except ValueError:
                continue
            if isinstance(value, dict) and key in value:
                return value
    return None


def rubric_lines(items: list[RubricState]) -> str:
    """The rubric as the judge is shown it: one JSON object per item (its number, text, verdict and notes)."""
    return "\n".join(json.dumps({"index": i, "item": s.item, "met": s.met, "notes": s.notes}, ensure_ascii=False)
                     for i, s in enumerate(items, start=1))


def _numbered(texts: list[str]) -> str:
    return "\n".join(f"{i}. {text}" for i, text in enumerate(texts, start=1))


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "met"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "no", "not met", "unmet"}:
        return False
    return None


def parse_verdicts(text: str, count: int, reason: str = "reason") -> tuple[list[bool], list[str]] | None:
    """`count` verdicts (met, and the `reason` field's text) from a judge answer, or None if it does not have
    exactly those."""
    data = extract_json_object(text, "verdicts")
    if data is None or not isinstance(data["verdicts"], list) or len(data["verdicts"]) != count:
        return None
    items = data["verdicts"]
    if not all(isinstance(item, dict) for item in items):
        return None
    if all("index" in item for item in items):
        try:
            by_index = {int(item["index"]): item for item in items}
        except (TypeError, ValueError):
            return None
        if sorted(by_index) != list(range(1, count + 1)):
            return None
        items = [by_index[i] for i in range(1, count + 1)]
    met: list[bool] = []
    reasons: list[str] = []
    for item in items:
        verdict = _as_bool(item.get("met"))
        if verdict is None:
            return None
        met.append(verdict)
        reasons.append(str(item.get(reason, "")))
    return met, reasons


def parse_acknowledges(text: str) -> bool | None:
    data = extract_json_object(text, "acknowledges")
    return None if data is None else _as_bool(data["acknowledges"])


class LLMJudge(Judge):
    """The Judge protocol answered by an LLM (any litellm model string, e.g. "openai/gpt-4o-mini").

    `max_retries` retries of transient failures per question; `extra` adds completion parameters
    (`timeout` there sets the call's timeout in seconds). `usage` is the running total over this
    judge's calls; `log` keeps one entry per call (kind, usage, raw answer, parsed result, error).
    `rubric_window` messages per rubric window, `rubric_stride` messages between window starts (1 to
    `rubric_window`: no message is skipped); `cassettes` gives a simulation's cassette by its id.
    """

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 temperature: float = 0.0, max_retries: int = 2, extra: dict[str, Any] | None = None,
                 rubric_window: int = RUBRIC_WINDOW, rubric_stride: int = RUBRIC_STRIDE,
                 cassettes: Callable[[str], Cassette] | None = None):
        if rubric_window < 1 or not 1 <= rubric_stride <= rubric_window:
            raise ValueError(f"rubric_window {rubric_window}, rubric_stride {rubric_stride}: the window needs at "
                             "least 1 message and the stride 1 to rubric_window (a longer stride skips messages)")
        self.model = model
        self.name = f"llm:{model}"
        self.temperature = temperature
        self.max_retries = max_retries
        self.rubric_window, self.rubric_stride = rubric_window, rubric_stride
        self.cassettes = cassettes
        self.extra = dict(extra or {})
        timeout = self.extra.pop("timeout", None)
        self.connection = LLMConnection(api_base=api_base, api_key=api_key,
                                        **({} if timeout is None else {"timeout_s": float(timeout)}))
        self.usage = Usage()
        self.log: list[dict[str, Any]] = []

    def endpoints(self) -> list[LLMEndpoint]:
        """What the preflight checks before a live scoring (`make_judge`)."""
        return [LLMEndpoint(model=self.model, api_base=self.connection.api_base, role="judge")]

    # -- the Judge protocol ------------------------------------------------------------------------

    @contextlib.contextmanager
    def judging(self, simulation_id: str) -> Iterator[None]:
        if self.cassettes is None:
            yield
            return
        with use_cassette(self.cassettes(simulation_id)):
            yield

    def nl_assertions(self, trajectory: Trajectory, assertions: list[str]) -> NLVerdicts | None:
        if not assertions:
            return NLVerdicts(met=[], judge=self.name)
        prompt = NL_USER_PROMPT.format(transcript=render_transcript(trajectory), assertions=_numbered(assertions),
                                       count=len(assertions))
        return self._verdicts("nl_assertions", NL_SYSTEM_PROMPT, prompt, len(assertions))

    def rubric_verdicts(self, trajectory: Trajectory, instruction: str, window: list[Message],
                        items: list[RubricState], number: int, windows: int) -> NLVerdicts | None:
        if not items or not window:
            return NLVerdicts(met=[s.met for s in items], judge=self.name, reasons=[s.notes for s in items])
        tool_names = tool_names_of(trajectory)
        transcript = "\n".join(line for m in window for line in message_lines(m, tool_names, None))
        prompt = RUBRIC_USER_PROMPT.format(
            instruction=instruction, number=number + 1, windows=windows, first=window[0].index,
            last=window[-1].index, transcript=transcript, items=rubric_lines(items), count=len(items))
        return self._verdicts("rubric_window", RUBRIC_SYSTEM_PROMPT, prompt, len(items), reason="notes")

    def acknowledges(self, trajectory: Trajectory, message: Message, goal: str) -> bool | None:
        tool_names = tool_names_of(trajectory)
        prompt = ACK_USER_PROMPT.format(
            transcript=render_transcript(trajectory, upto=message.index), goal=goal,
            index=message.index, message="\n".join(message_lines(message, tool_names)))
        answer, _, entry = self._ask("acknowledges", ACK_SYSTEM_PROMPT, prompt)
        if answer is None:
            return None
        verdict = parse_acknowledges(answer)
        entry["result"] = verdict
        if verdict is None:
            entry["error"] = "could not read {\"acknowledges\": bool} from the answer"
        return verdict

    def ask(self, kind: str, system: str, prompt: str, parse: Callable[[str], Any | None]) -> Any | None:
        answer, _, entry = self._ask(kind, system, prompt)
        if answer is None:
            return None
        result = parse(answer)
        entry["result"] = result
        if result is None:
            entry["error"] = f"could not read the {kind} answer"
        return result

    # -- one LLM call ------------------------------------------------------------------------------

    def _verdicts(self, kind: str, system: str, prompt: str, count: int, reason: str = "reason") -> NLVerdicts | None:
        """`count` verdicts from one question, or None when the call failed or the answer lacks them."""
        answer, usage, entry = self._ask(kind, system, prompt)
        if answer is None:
            return None
        parsed = parse_verdicts(answer, count, reason)
        entry["result"] = None if parsed is None else {"met": parsed[0], "reasons": parsed[1]}
        if parsed is None:
            entry["error"] = f"could not read {count} verdicts from the answer"
            return None
        return NLVerdicts(met=parsed[0], judge=self.name, usage=usage or Usage(), reasons=parsed[1])

    def request(self, system: str, prompt: str) -> LLMRequest:
        """The completion request for one question."""
        return LLMRequest(role="judge", model=self.model,
                          messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                          params={"temperature": self.temperature, **self.extra})

    def _ask(self, kind: str, system: str, prompt: str) -> tuple[str | None, Usage | None, dict[str, Any]]:
        """The answer text, the call's usage and its log entry; answer None when the call failed."""
        entry: dict[str, Any] = {"kind": kind, "usage": None, "answer": None, "result": None,
                                 "error": None}
        self.log.append(entry)
        try:
            response = complete_blocking(self.request(system, prompt), self.connection,
                                         retries=self.max_retries, what=f"judge {self.name}")
        except ReplayDivergence:  # a replay that does not repeat its recording is no verdict to drop
            raise
        except Exception as exc:  # the judge never raises: the metric says "not judged"
            entry["error"] = f"{type(exc).__name__}: {exc}"
            return None, None, entry
        usage = Usage.of_response(response)
        entry["usage"] = usage
        self.usage += usage
        answer = first_message(response).get("content")
        if not isinstance(answer, str) or not answer.strip():
            entry["error"] = "empty answer"
            return None, usage, entry
        entry["answer"] = answer
        return answer, usage, entry
