"""Replay a recorded run's agent tool calls on shiftbox and classify each against the reference's answer.

Per simulation, two fresh episodes of the snapshot, the task's initial state applied to both:

- **as recorded**: every call with exactly the recorded arguments. Its outcome is what is compared first.
- **aligned**: the same calls, but with the ids the reference generated replaced by shiftbox's own (learnt
  when a write both accepted returned them), and without the writes the reference rejected. It follows the
  reference's state as closely as shiftbox can.

A call is `identical` or `representation` when its as-recorded outcome equals the reference's; `cascade`
when it does not, but the aligned one does (it differed only because an earlier call did); otherwise its
difference is classified on the aligned outcome (the as-recorded one when the aligned episode skipped the
call): `tool_missing`, `shiftbox_succeeds` (the reference failed), `stricter` (shiftbox failed) or
`content_differs`. The last four are looked up in the deliberate-differences table.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import DEFAULT_TOOLSET, get_domain, snapshots_root

from ..agentchangebench import REFERENCE_SNAPSHOTS, load_agentchangebench_results
from ..tasks import domain_reference_toolset
from ..trajectory import ToolCallRecord
from ..world import EpisodeClient, apply_initial_state, open_world, result_texts
from ._compare import compare_outcomes, parse_reference, strings_in
from ._differences import (
    CLASSES,
    UNEXPLAINED_CLASSES,
    DeliberateDifference,
    default_table,
    difference_class,
    find_reason,
    haystack,
    load_deliberate_differences,
)


@dataclass
class CallClass:
    """One replayed call and its class."""

    simulation: str
    task_id: str
    call: int
    message_index: int
    tool: str
    arguments: dict[str, Any]
    klass: str
    reference_error: bool
    reference: str | None
    shiftbox_error: bool
    shiftbox_kind: str | None
    shiftbox: str
    differences: list[str] = field(default_factory=list)
    deliberate: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["class"] = data.pop("klass")
        return data


@dataclass
class ConformanceReport:
    file: str
    format: str
    domain: str
    snapshot: str
    toolset: str
    table: str | None
    simulations: int = 0
    calls: list[CallClass] = field(default_factory=list)
    unanswered: int = 0

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(c.klass for c in self.calls)
        return {k: counted[k] for k in CLASSES if counted[k]}

    @property
    def unexplained(self) -> list[CallClass]:
        return [c for c in self.calls if c.klass in UNEXPLAINED_CLASSES and c.deliberate is None]

    def by_class_and_tool(self) -> dict[str, dict[str, tuple[int, int]]]:
        """class -> tool -> (calls, of which deliberate)."""
        table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
        for c in self.calls:
            cell = table[c.klass][c.tool]
            cell[0] += 1
            cell[1] += c.deliberate is not None
        return {k: {t: (v[0], v[1]) for t, v in sorted(table[k].items())} for k in CLASSES if k in table}

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file, "format": self.format, "domain": self.domain, "snapshot": self.snapshot,
            "toolset": self.toolset, "differences_table": self.table, "simulations": self.simulations,
            "counts": self.counts, "deliberate": sum(c.deliberate is not None for c in self.calls),
            "unexplained": len(self.unexplained), "unanswered": self.unanswered,
            "by_class_and_tool": {k: {t: {"calls": n, "deliberate": d} for t, (n, d) in v.items()}
                                  for k, v in self.by_class_and_tool().items()},
            "calls": [c.as_json() for c in self.calls],
        }


def _text(record: ToolCallRecord) -> str:
    """shiftbox's answer as the agent reads it: the result's text, or the structured content as JSON."""
    texts = result_texts(record._client_result)
    if record.is_error and any(texts):
        return "\n".join(texts)
    result = record.result
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def _translate(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {k: _translate(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_translate(v, ids) for v in value]
    return value


async def replay_agentchangebench(path: Path, *, snapshot_dir: Path | None = None, toolset: str | None = None,
                                  differences: Path | None = None) -> ConformanceReport:
    """Replay every agent tool call of an AgentChangeBench/tau2 results file. Defaults: the domain's reference
    snapshot, the domain's copy of the reference's tool set, docs/servers.md's deliberate-differences table.
    ValueError (naming the fix) for a file, snapshot, tool set or table that cannot be used."""
    if not path.is_file():
        raise ValueError(f"{path} does not exist or is not a file")
    table_path = differences or default_table()
    if table_path is None:
        raise ValueError("no deliberate-differences table: pass --differences docs/servers.md (of a shiftbox checkout)")
    try:
        table = load_deliberate_differences(table_path)
    except OSError as exc:
        raise ValueError(str(exc)) from None
    try:
        results = load_agentchangebench_results(path)
    except ValueError as exc:
        raise ValueError(f"{exc}\n  fix: pass an AgentChangeBench/tau2 results file with --format agentchangebench") \
            from None
    trajectories = results.trajectories
    domains = {t.domain for t in trajectories} or {t.domain for t in results.tasks.values()}
    if len(domains) != 1:
        raise ValueError(f"{path}: expected the simulations of one domain, found {sorted(domains) or 'none'}")
    (domain,) = domains
    if toolset is None:  # the reference's tool set (tau2's first for tau2's own results: no task has goals)
        tau2_file = not any(t.goals for t in results.tasks.values())
        toolset = domain_reference_toolset(domain, tau2_file) or DEFAULT_TOOLSET
    try:
        get_domain(domain).toolset(toolset)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    snapshot_dir = snapshot_dir or snapshots_root() / REFERENCE_SNAPSHOTS.get(domain, f"{domain}/acb-v1")
    if not (snapshot_dir / "manifest.json").is_file():
        raise ValueError(f"no snapshot at {snapshot_dir}\n  fix: import the reference data with `shiftbox snapshots "
                         f"import agentchangebench {domain} <db file> --out {snapshot_dir}`, or pass --snapshot DIR")
    report = ConformanceReport(file=str(path), format="agentchangebench", domain=domain,
                               snapshot=str(snapshot_dir), toolset=toolset,
                               table=str(table_path), simulations=len(trajectories))
    async with open_world(domain, servers="inproc", snapshot_dir=snapshot_dir, toolset=toolset) as world:
        read_only = {t["name"] for t in world.tools if (t.get("annotations") or {}).get("readOnlyHint")}
        for n, trajectory in enumerate(trajectories):
            task = results.tasks[trajectory.task_id]
            main, aligned = world.episode(f"conformance-{n}-as-recorded"), world.episode(f"conformance-{n}-aligned")
            for episode in (main, aligned):
                await apply_initial_state(episode, task.initial_state.tool_calls, [])
            await _replay_simulation(report, trajectory, main, aligned, read_only, table)
            for episode in (main, aligned):
                await episode.close()
    return report


async def _replay_simulation(report: ConformanceReport, trajectory, main: EpisodeClient, aligned: EpisodeClient,
                             read_only: set[str], table: list[DeliberateDifference]) -> None:
    ids: dict[str, str] = {}
    known: set[str] = set()
    for k, recorded in enumerate(trajectory.tool_calls):
        if recorded.result is None:  # no tool message answered the call
            report.unanswered += 1
            continue
        reference, reference_error = str(recorded.result), recorded.is_error
        known |= strings_in(recorded.arguments)
        writes = recorded.name not in read_only
        as_recorded = await main.call(recorded.name, dict(recorded.arguments), call_id=f"c{k}",
                                      message_index=recorded.message_index, agent_turn=recorded.agent_turn)
        skip = reference_error and writes  # the reference rejected this write: its state never had it
        followed = None if skip else await aligned.call(
            recorded.name, _translate(recorded.arguments, ids), call_id=f"c{k}",
            message_index=recorded.message_index, agent_turn=recorded.agent_turn)
        learn = writes and not reference_error
        aligned_cmp = None
        if followed is not None:
            aligned_cmp = compare_outcomes(reference, reference_error, followed.result, followed.is_error,
                                           ids=ids, learn=learn and not followed.is_error, known=known)
        main_cmp = compare_outcomes(reference, reference_error, as_recorded.result, as_recorded.is_error, ids=ids,
                                    learn=learn and followed is None and not as_recorded.is_error, known=known)
        basis, comparison = as_recorded, main_cmp
        if main_cmp.equal:
            klass = "identical" if main_cmp.identical else "representation"
        elif aligned_cmp is not None and aligned_cmp.equal:
            klass = "cascade"
        else:
            if followed is not None and aligned_cmp is not None:
                basis, comparison = followed, aligned_cmp
            klass = difference_class(reference_error, basis.is_error, basis.error_kind)
        text = _text(basis)
        deliberate = None
        if klass in UNEXPLAINED_CLASSES:
            deliberate = find_reason(table, trajectory.domain, recorded.name, klass,
                                     haystack(recorded.arguments, reference, text), comparison.differences,
                                     toolset=report.toolset)
        report.calls.append(CallClass(
            simulation=trajectory.simulation_id, task_id=trajectory.task_id, call=k,
            message_index=recorded.message_index, tool=recorded.name, arguments=recorded.arguments, klass=klass,
            reference_error=reference_error, reference=reference, shiftbox_error=basis.is_error,
            shiftbox_kind=basis.error_kind, shiftbox=text,
            differences=comparison.differences,
            deliberate=deliberate))
        known |= strings_in(parse_reference(reference))
