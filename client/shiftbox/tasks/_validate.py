"""Check task files before they are run: each finding names the task, the field, the problem and the fix.

Structure (no domain needed): duplicate task ids, duplicate action ids, `depends_on` naming no
action of the task, `required_shifts != len(goals) - 1`, action sets whose goal is not in the goal
list, communicate_info values already in known_info (the agent repeating what the user said proves
nothing; matched case-insensitively as a whole token), `communicate_info_by_goal` naming goals or items
the task lacks, and — as warnings — goals with no deterministic check
(no action set and no attributed communicate_info: only a judge could score them), and rubric items that are blank
or repeated, and cross-domain tasks (`domain` naming two domains or more) without a cross-domain
dependency (no action depends on an action of another domain: its goals can be solved one domain at a
time; a warning in a file generated with independent goals on purpose). Tools (installed domain): unknown tool names,
params the tool's schema rejects (missing params are allowed: gold specs may be partial). Snapshot
(optional): the gold path (initial-state calls, then the first allowed tool of every action set) is
replayed on a fresh episode per task; a call whose `expected_error` is set must fail with that kind
(success or another kind is an error); of the other calls, ids missing from the snapshot and rejected
arguments are errors, other failures warnings.

`record_gold_outcomes` runs the same replay to write a reference task's outcomes into it (expected
errors, final state digest): `shiftbox tasks import agentchangebench --snapshot`.

A reference task list's findings are marked `reference_data` where shiftbox answers as the reference does
(`_mark`): what is found there is the reference's own data error, which the CLI counts apart from the rest.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import anyio
from pydantic import BaseModel, Field, ValidationError

from shiftbox_servers.kit import (
    EPISODE_META_KEY,
    STATE_DIGEST_URI,
    DirectSession,
    Domain,
    DomainServer,
    Snapshot,
    SnapshotManifest,
    ToolSet,
    get_domain,
    result_error,
)

from ._model import INDEPENDENT_GOALS, ExpectedError, Task, TaskFile, ToolCallSpec
from ._reference import REFERENCE_SOURCE, is_reference_file

if TYPE_CHECKING:
    from mcp_types import CallToolResult

FILE_LEVEL = "*"


class Finding(BaseModel):
    """One problem in a task file."""

    task_id: str
    field: str
    problem: str
    fix: str
    severity: Literal["error", "warning"] = "error"
    reference_data: bool = Field(
        False, description="the problem is in a reference benchmark's own data (an imported AgentChangeBench / tau2 "
                           "task list, checked on the reference's tool set and database), not in shiftbox")


def validate_tasks(task_file: TaskFile, snapshot: Path | Snapshot | None = None,
                   toolset: str | None = None) -> list[Finding]:
    """Every finding for the file, sorted by task id, field and problem (natural number order). Tools are
    checked against `toolset` (default: the file's, `TaskFile.toolset_for`). `snapshot` is a snapshot
    directory, loaded once, or the `Snapshot` a caller loaded from one.

    With a snapshot the replay runs its own event loop (`anyio.run`): call this from sync code.
    """
    reference = is_reference_file(task_file)
    findings = _duplicate_ids(task_file)
    independent = INDEPENDENT_GOALS in task_file.source
    for task in task_file.tasks:
        findings += _structure(task) + _rubric(task) + _cross_dependency(task, independent)
    _mark(findings, reference)
    toolset = task_file.toolset_for(toolset)
    reference_tools = reference and task_file.toolset == toolset
    domains = _installed(task_file, findings)
    loaded = None if snapshot is None else as_snapshot(snapshot)
    tools = {name: _domain_tools(domain, toolset, loaded, findings) for name, domain in domains.items()}
    for task in task_file.tasks:
        if tools.get(task.domain) is not None:
            findings += _mark([f for _, _, fs in _tool_checks(task, task.domain, tools[task.domain]) for f in fs],
                              reference_tools)
    if loaded is not None:
        _check_snapshot_domain(loaded.manifest, task_file)
        if task_file.domain in domains:
            tasks = [t for t in task_file.tasks if t.domain == task_file.domain]
            findings += _mark(anyio.run(_replay, tasks, domains[task_file.domain], loaded, toolset),
                              reference_tools and is_reference_snapshot(loaded.manifest))
    return sorted(findings, key=finding_order)


def _check_snapshot_domain(manifest: SnapshotManifest, task_file: TaskFile) -> None:
    """A snapshot of another domain than the tasks' is a ValueError: its replay would check another database."""
    if manifest.domain != task_file.domain:
        raise ValueError(f"snapshot {manifest.snapshot_id} is for domain {manifest.domain!r}, but the tasks are for "
                         f"{task_file.domain!r}")


def as_snapshot(snapshot: Path | Snapshot) -> Snapshot:
    """A snapshot directory loaded (`Snapshot.load`), or the `Snapshot` a caller loaded already."""
    return snapshot if isinstance(snapshot, Snapshot) else Snapshot.load(Path(snapshot))


def _mark(findings: list[Finding], reference_data: bool) -> list[Finding]:
    """Findings of a reference task list, checked where shiftbox answers as the reference does (its structure
    always; tool names and params on the reference's tool set; gold outcomes also on its own database), are the
    reference's data errors: shiftbox would find nothing else there."""
    for f in findings:
        f.reference_data = reference_data and f.task_id != FILE_LEVEL
    return findings


def is_reference_snapshot(manifest: SnapshotManifest) -> bool:
    """The snapshot holds a reference's own database (`shiftbox snapshots import agentchangebench`)."""
    return manifest.source.startswith(f"{REFERENCE_SOURCE} ")


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def finding_order(f: Finding) -> tuple[Any, ...]:
    return (f.task_id != FILE_LEVEL, _natural(f.task_id), _natural(f.field), f.severity, f.problem)


def repeated_task_ids(task_file: TaskFile) -> dict[str, int]:
    """Each task id the file uses more than once -> how many tasks use it (in file order): an id names the task's
    simulations, so `tasks validate` reports these and a run refuses them."""
    return {i: n for i, n in Counter(t.id for t in task_file.tasks).items() if n > 1}


def _duplicate_ids(task_file: TaskFile) -> list[Finding]:
    return [Finding(task_id=i, field="id", problem=f"task id {i!r} is used by {n} tasks",
                    fix="give every task its own id") for i, n in repeated_task_ids(task_file).items()]


def _structure(task: Task) -> list[Finding]:
    found: list[Finding] = []

    def add(field: str, problem: str, fix: str, severity: Literal["error", "warning"] = "error") -> None:
        found.append(Finding(task_id=task.id, field=field, problem=problem, fix=fix, severity=severity))

    shifts = task.user_scenario.goal_shifts
    if shifts.required_shifts != len(shifts.goals) - 1:
        add("user_scenario.goal_shifts.required_shifts",
            f"required_shifts is {shifts.required_shifts} but the goal list {shifts.goals} makes "
            f"{len(shifts.goals) - 1} shifts",
            f"set required_shifts to {len(shifts.goals) - 1}, or correct the goal list")
    sets = task.evaluation_criteria.action_sets
    first: dict[str, int] = {}
    for i, action in enumerate(sets):
        first.setdefault(action.action_id, i)
    for i, action in enumerate(sets):
        at = f"evaluation_criteria.action_sets[{i}]"
        if first[action.action_id] != i:
            add(f"{at}.action_id", f"action_id {action.action_id!r} repeats action set "
                f"[{first[action.action_id]}], so the two can't be told apart when scoring",
                "give every action set of the task its own action_id (or remove the repeated set)")
        if action.goal is None:
            add(f"{at}.goal", f"action set {action.action_id!r} serves no goal, so goal-shift metrics can't "
                "credit it", f"set goal to one of {shifts.goals}", "warning")
        elif action.goal not in shifts.goals:
            add(f"{at}.goal", f"goal {action.goal!r} of action set {action.action_id!r} is not in the goal list "
                f"{shifts.goals}", f"use one of {shifts.goals}, or add the goal to goal_shifts.goals")
        for j, dep in enumerate(action.depends_on):
            if dep not in first:
                add(f"{at}.depends_on[{j}]", f"depends_on names {dep!r}, which is no action_id of this task",
                    f"use one of {sorted(first)}")
    items = task.evaluation_criteria.communicate_info
    for goal, listed in task.evaluation_criteria.communicate_info_by_goal.items():
        at = f"evaluation_criteria.communicate_info_by_goal.{goal}"
        if goal not in shifts.goals:
            add(at, f"communicate_info_by_goal names goal {goal!r}, which is not in the goal list {shifts.goals}",
                f"use one of {shifts.goals}, or add the goal to goal_shifts.goals")
        for k, item in enumerate(listed):
            if item not in items:
                add(f"{at}[{k}]", f"{item!r} is not in communicate_info, so nothing checks it",
                    "list only items of evaluation_criteria.communicate_info (or add it there)")
    for goal in task.unchecked_goals():
        i = shifts.goals.index(goal)
        add(f"user_scenario.goal_shifts.goals[{i}]",
            f"goal {goal!r} has no deterministic check (no action set serves it, no communicate_info is attributed "
            "to it), so without an LLM judge an agent that never addresses it loses nothing",
            f"add an action set with goal {goal!r} (a tool call the goal needs), or communicate_info items the agent "
            f"must say for it, listed under evaluation_criteria.communicate_info_by_goal[{goal!r}]", "warning")
    known = task.user_scenario.instructions.known_info.lower()
    for k, value in enumerate(items):
        needle = value.strip().lower()
        if needle and re.search(rf"(?<![0-9a-z]){re.escape(needle)}(?![0-9a-z])", known):
            add(f"evaluation_criteria.communicate_info[{k}]",
                f"communicate_info value {value!r} already appears in known_info, so the agent can repeat it "
                "without looking anything up",
                "remove it, or replace it with a fact the agent can only get from a tool output")
    return found


def _cross_dependency(task: Task, independent: bool) -> list[Finding]:
    """A cross-domain task needs one goal that depends on the other domain (VitaBench's cross-scenario tasks are
    one request whose parts constrain each other); without one it is two single-domain tasks in a row."""
    if "," not in task.domain or task.cross_domain_dependencies():
        return []
    return [Finding(
        task_id=task.id, field="evaluation_criteria.action_sets", severity="warning" if independent else "error",
        problem=f"cross-domain task {task.id!r} has no cross-domain dependency: no action set depends on an action "
                "of another domain, so its goals can be solved one domain at a time",
        fix="add an action set whose call takes a value read in the other domain and list that read in its "
            "depends_on (`shiftbox tasks generate-cross` writes one per task), or, for a deliberately independent "
            f"set, generate it with --independent (its source then says {INDEPENDENT_GOALS!r})")]


def _rubric(task: Task) -> list[Finding]:
    """Rubric items a judge can tell apart: none blank, none repeated (each is one verdict)."""
    found: list[Finding] = []
    seen: dict[str, int] = {}
    for k, item in enumerate(task.evaluation_criteria.rubric):
        at = f"evaluation_criteria.rubric[{k}]"
        key = " ".join(item.split()).lower()
        if not key:
            found.append(Finding(task_id=task.id, field=at, problem="rubric item is blank, so a judge has nothing to check",
                                 fix="write the check in a sentence, or remove the item"))
        elif key in seen:
            found.append(Finding(task_id=task.id, field=at, problem=f"rubric item repeats item [{seen[key]}], so it "
                                 "would be judged twice and counted twice", fix="remove the repeated item"))
        else:
            seen[key] = k
    return found


def _installed(task_file: TaskFile, findings: list[Finding]) -> dict[str, Domain]:
    """The installed domains the tasks use; one warning per domain that isn't installed."""
    domains: dict[str, Domain] = {}
    for name in sorted({t.domain for t in task_file.tasks}):
        try:
            domains[name] = get_domain(name)
        except KeyError as exc:
            findings.append(Finding(
                task_id=FILE_LEVEL, field="domain", severity="warning",
                problem=f"tool checks were skipped: domain {name!r} isn't installed ({exc.args[0]})",
                fix=f"install the shiftbox {name} domain server package to check tool names, params and ids"))
    return domains


def _domain_tools(domain: Domain, toolset: str, snapshot: Snapshot | None,
                  findings: list[Finding]) -> ToolSet | None:
    """The tools to check the calls against: the tool set's; for a domain whose tools come with its snapshot (mmtb),
    the snapshot's, or None (a warning: the checks are skipped) without one."""
    if domain.snapshot_tools is None:
        return domain.toolset(toolset)
    if snapshot is not None and snapshot.manifest.domain == domain.name:
        return domain.tools_for(snapshot, toolset)
    findings.append(Finding(
        task_id=FILE_LEVEL, field="domain", severity="warning",
        problem=f"tool checks were skipped: the tools of domain {domain.name!r} come with its snapshot",
        fix=f"pass --snapshot, the {domain.name} snapshot the tasks were imported with"))
    return None


def _calls(task: Task) -> Iterator[tuple[str, ToolCallSpec]]:
    """Every tool call the task names, with its field path."""
    for i, call in enumerate(task.initial_state.tool_calls):
        yield f"initial_state.tool_calls[{i}]", call
    for i, action in enumerate(task.evaluation_criteria.action_sets):
        for j, call in enumerate(action.allowed_tools):
            yield f"evaluation_criteria.action_sets[{i}].allowed_tools[{j}]", call


def _tool_checks(task: Task, domain: str, tools: ToolSet) -> Iterator[tuple[str, ToolCallSpec, list[Finding]]]:
    """Each call of the task with its tool-name and param findings (against the domain's tool set `tools`)."""
    for at, call in _calls(task):
        yield at, call, [Finding(task_id=task.id, field=field, problem=problem, fix=fix)
                         for field, problem, fix in _call_problems(at, call, domain, tools)]


def _call_problems(at: str, call: ToolCallSpec, domain: str, tools: ToolSet) -> list[tuple[str, str, str]]:
    name = call.function_name
    spec = tools.get(name)
    if spec is None:
        return [(f"{at}.function_name", f"unknown tool {name!r}: the {domain} domain has no such tool",
                 _suggest_tool(call, domain, tools))]
    try:
        spec.arguments_model.model_validate(call.params)
    except ValidationError as exc:
        accepted = ", ".join(spec.arguments_model.model_fields) or "no params"
        problems = []
        for err in exc.errors(include_url=False):
            if err["type"] == "missing":
                continue
            param = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append((f"{at}.params.{param}", f"param {param!r} is not in the schema of {name}",
                                 f"remove it or use one of: {accepted}"))
            else:
                problems.append((f"{at}.params.{param}", f"param {param!r} of {name} is {err.get('input')!r}, "
                                 f"which the tool rejects: {err['msg']}",
                                 "give a value of the type and format the tool's schema states"))
        return problems
    return []


def _suggest_tool(call: ToolCallSpec, domain: str, tools: ToolSet) -> str:
    """Name the tools whose schema takes exactly these params, else the closest names."""
    given = set(call.params)
    fits = [s.name for s in tools if given and given <= set(s.arguments_model.model_fields)
            and all(f in given for f, info in s.arguments_model.model_fields.items() if info.is_required())]
    if fits:
        return f"use {' or '.join(fits)}, whose params are the ones given"
    close = difflib.get_close_matches(call.function_name, [s.name for s in tools], n=2)
    return f"use {' or '.join(close)}" if close else f"use one of the {domain} tools"


@dataclass
class GoldStep:
    """One call of a task's gold path and what the server answered (`result` is None for a call skipped
    because the domain rejects it without running it: unknown tool, params outside its schema)."""

    at: str
    call: ToolCallSpec
    result: CallToolResult | None

    @property
    def error(self) -> dict[str, Any]:
        if self.result is None or not self.result.is_error:
            return {}
        return result_error(self.result) or {"kind": "unknown"}

    @property
    def kind(self) -> str | None:
        return self.error.get("kind") if self.result is not None and self.result.is_error else None


async def gold_path(client: DirectSession, task: Task, domain: str, tools: ToolSet, episode: str) -> list[GoldStep]:
    """Run the task's gold path (initial-state calls, then the first allowed tool of every action set, in
    order) in `episode` of a server offering `tools`; calls with tool-name or param problems are not run."""
    steps = []
    for at, call, problems in _tool_checks(task, domain, tools):
        if not _on_gold_path(at):
            continue
        result = None if problems else await client.call_tool(call.function_name, call.params,
                                                               meta={EPISODE_META_KEY: episode})
        steps.append(GoldStep(at, call, result))
    return steps


async def _replay(tasks: list[Task], domain: Domain, snapshot: Snapshot, toolset: str) -> list[Finding]:
    """Run each task's gold path on a fresh episode; report the calls whose outcome is not the expected one."""
    server = DomainServer(domain, snapshot, toolset=toolset)
    snapshot_id = snapshot.manifest.snapshot_id
    found: list[Finding] = []
    async with DirectSession(server) as client:
        for n, task in enumerate(tasks):
            episode = f"validate-{n}"
            for step in await gold_path(client, task, domain.name, server.tools, episode):
                if step.result is not None:
                    found += _outcome_findings(task, step, snapshot_id)
            server.episodes.drop(episode)
    return found


def _on_gold_path(at: str) -> bool:
    return at.startswith("initial_state.") or at.endswith(".allowed_tools[0]")


def _outcome_findings(task: Task, step: GoldStep, snapshot_id: str) -> list[Finding]:
    call, expected, name = step.call, step.call.expected_error, step.call.function_name
    if expected is None:
        return [_failure(task, step.at, call, step.error, snapshot_id)] if step.kind else []
    if step.kind is None:
        return [Finding(task_id=task.id, field=f"{step.at}.expected_error",
                        problem=f"the gold call {name} is expected to fail with {expected}, but it succeeds on the "
                                f"snapshot {snapshot_id}",
                        fix="remove expected_error if the call is meant to succeed, or check the task against the "
                            "snapshot it was written for")]
    if step.kind != expected:
        return [Finding(task_id=task.id, field=f"{step.at}.expected_error",
                        problem=f"the gold call {name} fails with {step.kind}, not the expected {expected}, on the "
                                f"snapshot {snapshot_id}: {step.error.get('message', '')}",
                        fix=f"set expected_error to {step.kind!r} if that failure is the one the scenario means, "
                            "or correct the call")]
    return []


def _failure(task: Task, at: str, call: ToolCallSpec, error: dict[str, Any], snapshot_id: str) -> Finding:
    kind, message = error.get("kind", "unknown"), error.get("message", "")
    param = error.get("field") or next(iter(error.get("fields") or []), None)
    field = f"{at}.params.{param}" if param in call.params else at
    name = call.function_name
    if kind == "not_found":
        value = f"id {call.params[param]!r}" if param in call.params else "an id"
        return Finding(task_id=task.id, field=field,
                       problem=f"{value} is missing from the snapshot {snapshot_id}: {name} fails ({message})",
                       fix="use an id that exists in the snapshot, or one an earlier gold call creates; if the "
                           "scenario means the call to fail (a wrong id the user gives first), set its "
                           "expected_error to 'not_found'")
    if kind == "invalid_arguments":
        return Finding(task_id=task.id, field=field,
                       problem=f"the gold call {name} doesn't match the tool's schema: {message}",
                       fix="give every required param, with values the tool accepts")
    return Finding(task_id=task.id, field=at, severity="warning",
                   problem=f"the gold call {name} fails on the snapshot {snapshot_id} ({kind}): {message}",
                   fix="change the call or the snapshot so the gold path succeeds (it produces the expected "
                       f"final state), or set its expected_error to {kind!r} if the scenario means it to fail")


# -- recording a reference task's gold outcomes ------------------------------------------------------


RECORDABLE_ERRORS = frozenset(get_args(ExpectedError))


def record_gold_outcomes(task_file: TaskFile, snapshot: Path | Snapshot,
                         task_ids: Iterable[str] | None = None) -> None:
    """Replay the gold path of each task (or of `task_ids`) on a fresh episode of the snapshot (a directory, or the
    `Snapshot` a caller loaded from one) and record, in place, what it does: `expected_error` on every gold call
    that fails with a domain error (not found, precondition failed, conflict, invalid arguments) and the final
    `expected_state_digest`.

    For tau2's task format, whose gold actions tau2 replays the same way (a failing action is part of the
    expected outcome, and the task is scored by the database it leaves). A task whose gold path has a call
    the domain rejects without running it (unknown tool, params outside the schema) or that fails any other
    way gets nothing recorded: `validate_tasks` reports it. ValueError when the snapshot is not the one the
    tasks are written for (the failures recorded would be another database's).
    """
    loaded = as_snapshot(snapshot)
    manifest = loaded.manifest
    _check_snapshot_domain(manifest, task_file)
    if task_file.snapshot and manifest.snapshot_id != task_file.snapshot:
        raise ValueError(f"the tasks are written for snapshot {task_file.snapshot}, not {manifest.snapshot_id}: "
                         "gold calls failing there would be recorded as meant to fail")
    wanted = None if task_ids is None else set(task_ids)
    tasks = [t for t in task_file.tasks if wanted is None or t.id in wanted]
    anyio.run(_record, tasks, get_domain(task_file.domain), loaded, task_file.toolset_for())


async def _record(tasks: list[Task], domain: Domain, snapshot: Snapshot, toolset: str) -> None:
    server = DomainServer(domain, snapshot, toolset=toolset)
    async with DirectSession(server) as client:
        for n, task in enumerate(tasks):
            episode = f"record-{n}"
            steps = await gold_path(client, task, domain.name, server.tools, episode)
            if all(s.result is not None and (s.kind is None or s.kind in RECORDABLE_ERRORS) for s in steps):
                for step in steps:
                    step.call.expected_error = step.kind
                res = await client.read_resource(STATE_DIGEST_URI, meta={EPISODE_META_KEY: episode})
                task.evaluation_criteria.expected_state_digest = json.loads(res.contents[0].text)["digest"]
            server.episodes.drop(episode)
