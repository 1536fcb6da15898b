"""The seeded native task generator: goal sequences covering every ordered goal pair, solved by replay.

A domain contributes missions (`Domain.missions`, a kit `MissionSet`: goal label -> `build(db, rng,
subject) -> Mission | None`, the opener goal, who tasks are about and how they introduce themselves;
see `shiftbox_servers.kit.MissionSet`). The engine, from `random.Random(seed)` only:

1. plans n goal sequences (1 to 4 distinct goals) so that every ordered pair of the domain's goal
   labels appears at least once; most start with the identification goal (`MissionSet.opener`); personas are the whole persona catalog (`shiftbox/users/personas.json`), each in
   turn within every block of len(catalog) tasks, the blocks rotated (`persona_for`);
2. per task, picks a subject (`MissionSet.subjects`) and, goal by goal, builds the mission on the task's own episode
   (in process: the kit's `DirectSession` on a `DomainServer`) and runs its gold calls there in the order the oracle
   agent will (dependency levels), so later missions see earlier effects and created ids
   (`{"$from": "key.path"}` params) come from real outputs; a mission that is infeasible or a gold
   call that fails discards the attempt and another customer is tried;
3. takes communicate_info from the gold calls' real outputs (never a value already in known_info),
   each item attributed to the goals whose calls produced it (`communicate_info_by_goal`), and
   expected_state_digest from `shiftbox://episode/digest` at the end of the replay;
4. derives VitaBench-style rubric items from each goal's final gold calls and its communicate_info
   (`rubric_from_goals`), for the sliding-window rubric judge.

With `cover="types"` step 1 plans instead for Multi-Mission Tool Bench's switching analysis: task i gets the
i-th four-goal sequence of MMTB mission types (`type_sequences`, ordered so that the first 4, 16, 64 tasks already
hold every type sequence of length 1, 2, 3 as a prefix), over distinct goals whose builders can make those types
(`probe_types`: each builder, and each of the goal's `MissionSet.variants`, tried on the snapshot for a sample of
subjects); a goal's mission is then built, by its builder and its variants in turn, until its action type is the
wanted one (`TYPE_ROLLS` rounds). Pairs and cross-domain sets use the builders alone. Sequences no choice of distinct goals can make (a domain with one
chat goal makes no chat, chat sequence) are skipped (`feasible_type_sequences` says which remain).

Every goal gets a deterministic check: a mission without gold calls is refused (a chat mission is a
general question grounded in one read, whose output the agent must say).

Same domain, snapshot, n and seed -> byte-identical task file.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from itertools import permutations
from pathlib import Path
from typing import Any

import anyio

from shiftbox_servers.kit import (
    ACTION_TYPES,
    CLOSE_META_KEY,
    EPISODE_META_KEY,
    STATE_DIGEST_URI,
    DirectSession,
    Domain,
    DomainServer,
    Given,
    Mission,
    MissionCall,
    Snapshot,
    get_domain,
)

from ..errors import ShiftboxError, unwrapped_errors
from ..tasks import (
    MMTB_TYPE_OF,
    MMTB_TYPES,
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    Instructions,
    Task,
    TaskDescription,
    TaskFile,
    ToolCallSpec,
    UserScenario,
    action_types_note,
)
from ..users import load_personas

GENERATOR_VERSION = 3
"""2: all catalog personas (rotated blocks), chat missions grounded in a read, communicate_info_by_goal;
3: rubric items derived from the goals (`rubric_from_goals`)."""
LENGTH_CYCLE = (1, 2, 3, 4, 2, 3, 1, 4, 3, 2, 4, 3)
"""Goals per task, in turn (1 to 4)."""
PERSONA_ROTATION = 3
"""Each block of len(personas) tasks has every persona once, shifted by this much per block: with the 8
personas of the catalog and LENGTH_CYCLE, every persona gets every length within 121 tasks, and strided
samples (every 7th task: the solvability test; every 10th: the demo) meet every persona. A plain round
robin would pair each persona with only 3 of the 12 cycle positions (8 and 12 share the factor 4) and
give every 10th task only 4 personas."""
OPENER_SHARE = 0.75
"""Share of tasks that start with the identification goal (once every pair into it is covered)."""
MAX_ATTEMPTS = 200
COVERS: tuple[str, ...] = ("pairs", "types")
"""What a generated set is planned to cover: every ordered goal pair, or every MMTB mission type sequence up to 4."""
DEFAULT_TASKS = 150
"""Tasks of a `pairs` set when n is not given (a `types` set: one per feasible type sequence)."""
MAX_TASKS = 100_000
"""The most tasks one generated set holds: beyond it a count is a mistake (its goal plan alone would outgrow the
memory, and generating it would take days)."""
TYPE_LENGTH = 4
TYPE_ROLLS = 40
"""Builds of a goal's mission tried for the wanted MMTB type before the attempt is given up."""
PROBE_SUBJECTS, PROBE_ROLLS = 25, 8
"""Subjects sampled, and builds per subject and goal, when probing which MMTB types each goal's builder makes."""


class GenerationError(ShiftboxError, RuntimeError):
    """The generator could not build a task (a domain's missions don't fit its snapshot)."""


def generate_tasks(domain: str, snapshot_dir: Path, *, n: int | None = None, seed: int,
                   cover: str = "pairs") -> TaskFile:
    """n tasks for `domain` on the snapshot, reproducible from `seed`, planned to cover every ordered goal pair
    (`cover="pairs"`, n default `DEFAULT_TASKS`) or every MMTB mission type sequence up to 4 goals (`"types"`, n
    default: one task per feasible four-type sequence, which covers every shorter one as a prefix).

    Runs its own event loop (`anyio.run`): call it from sync code.
    """
    if cover not in COVERS:
        raise ValueError(f"cover {cover!r} is not one of {', '.join(COVERS)}")
    dom = get_domain(domain)
    if not dom.missions:
        raise ValueError(f"domain {domain!r} has no task missions; fix: give its Domain(...) a `missions` "
                         "MissionSet (goal label -> builder), as shiftbox_servers.banking._missions does")
    if n is not None and not 1 <= n <= MAX_TASKS:
        raise ValueError(f"n must be at least 1 and at most {MAX_TASKS:,}, got {n}")
    snapshot = Snapshot.load(Path(snapshot_dir))
    if snapshot.manifest.domain != domain:
        raise ValueError(f"snapshot {snapshot.manifest.snapshot_id} is for domain {snapshot.manifest.domain!r}, "
                         f"not {domain!r}")

    with unwrapped_errors():  # a GenerationError raised inside the MCP client's task group, not a group of one
        return anyio.run(_generate, dom, snapshot, n, seed, cover)


# -- the goal plan ---------------------------------------------------------------------------------


def catalog_personas() -> tuple[str, ...]:
    """The persona keys of the catalog, in catalog order (the one list of personas)."""

    return tuple(load_personas())


def persona_for(i: int, personas: tuple[str, ...]) -> str:
    """Task i's persona: block i // len(personas) has each persona once, rotated by PERSONA_ROTATION per block."""
    n = len(personas)
    return personas[(i + PERSONA_ROTATION * (i // n)) % n]


def plan_goals(labels: list[str], n: int, rng: random.Random, opener: str | None) -> list[list[str]]:
    """n goal sequences; greedy on uncovered ordered pairs, so every pair appears once n is large enough."""
    uncovered = {(a, b) for a in labels for b in labels if a != b}
    plans: list[list[str]] = []
    for i in range(n):
        length = min(LENGTH_CYCLE[i % len(LENGTH_CYCLE)], len(labels))
        into_opener = sorted(a for a, b in uncovered if b == opener)
        if opener is not None and rng.random() < OPENER_SHARE and not (into_opener and rng.random() < 0.5):
            seq = [opener]
        elif into_opener and length > 1:
            seq = [rng.choice(into_opener)]
        else:
            seq = [rng.choice(labels)]
        while len(seq) < length:
            options = [b for b in labels if b not in seq]
            fresh = [b for b in options if (seq[-1], b) in uncovered]
            # Prefer a fresh pair that also leaves a fresh pair to continue with.
            onward = [b for b in fresh if any((b, c) in uncovered for c in labels if c not in seq and c != b)]
            seq.append(rng.choice(onward or fresh or options))
            uncovered.discard((seq[-2], seq[-1]))
        plans.append(seq)
    return plans


def type_sequences(length: int = TYPE_LENGTH) -> list[tuple[str, ...]]:
    """Every sequence of `length` MMTB mission types, the first type changing fastest: the first 4**k of them hold
    every sequence of length k as a prefix, so a set cut short still covers every shorter prefix."""
    m = len(MMTB_TYPES)
    return [tuple(MMTB_TYPES[(i // m ** p) % m] for p in range(length)) for i in range(m ** length)]


def probe_types(domain: Domain, db: sqlite3.Connection, subjects: list[dict[str, Any]], rng: random.Random
                ) -> dict[str, set[str]]:
    """Goal label -> the MMTB types its builder made on the snapshot, for a sample of subjects (seeded)."""
    made: dict[str, set[str]] = {goal: set() for goal in sorted(domain.missions)}
    for subject in rng.sample(subjects, min(PROBE_SUBJECTS, len(subjects))):
        for goal in made:
            for build in domain.missions.every_builder(goal):
                for _ in range(PROBE_ROLLS):
                    mission = build(db, rng, subject)
                    if mission is not None and mission.action_type in MMTB_TYPE_OF:
                        made[goal].add(MMTB_TYPE_OF[mission.action_type])
    return made


def goal_choices(types: tuple[str, ...], capable: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Every sequence of distinct goals whose builders can make `types` in order (sorted)."""
    return [goals for goals in permutations(sorted(capable), len(types))
            if all(t in capable[g] for g, t in zip(goals, types, strict=True))]


def feasible_type_sequences(capable: dict[str, set[str]], length: int = TYPE_LENGTH
                            ) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
    """Type sequence -> its goal choices, for the sequences (in `type_sequences` order) that have any."""
    found = {types: goal_choices(types, capable) for types in type_sequences(length)}
    return {types: choices for types, choices in found.items() if choices}


# -- missions --------------------------------------------------------------------------------------


def _oracle_order(calls: tuple[MissionCall, ...]) -> list[MissionCall]:
    """Calls by dependency level (stable): the order the oracle runs them, batched or one per turn."""
    level: dict[str, int] = {}
    for call in calls:
        unknown = [k for k in call.after if k not in level]
        if unknown:
            raise GenerationError(f"call {call.key!r} depends on {unknown}, which are not earlier calls")
        level[call.key] = 1 + max((level[k] for k in call.after), default=-1)
    return sorted(calls, key=lambda c: level[c.key])


def _lookup(value: Any, path: list[str]) -> Any:
    for part in path:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _resolve(params: Any, outputs: dict[str, Any], given: dict[str, Any] | None = None) -> Any:
    """Params with `{"$from": "key.path"}` (an earlier call's output) and `{"$given": "field"}` (a fact read in
    another domain) replaced by their values."""
    if isinstance(params, dict):
        if set(params) == {"$from"}:
            key, *path = params["$from"].split(".")
            return _lookup(outputs[key], path)
        if set(params) == {"$given"}:
            return (given or {})[params["$given"]]
        return {k: _resolve(v, outputs, given) for k, v in params.items()}
    if isinstance(params, list):
        return [_resolve(v, outputs, given) for v in params]
    return params


def given_params(params: dict[str, Any]) -> list[str]:
    """The params a fact read in another domain fills (`{"$given": "field"}`)."""
    return [k for k, v in params.items() if isinstance(v, dict) and set(v) == {"$given"}]


def _fact_text(value: Any) -> str | None:
    """A value as the agent would read it in the tool output (JSON numbers); None for nothing worth saying."""
    if value is None or isinstance(value, bool | dict | list) or (isinstance(value, int | float) and value == 0):
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _in_text(value: str, text: str) -> bool:
    """The validator's rule: the value appears in the text as a whole token, case-insensitively."""
    needle = value.strip().lower()
    return bool(re.search(rf"(?<![0-9a-z]){re.escape(needle)}(?![0-9a-z])", text.lower()))


# -- the engine ------------------------------------------------------------------------------------


async def _generate(domain: Domain, snapshot: Snapshot, n: int | None, seed: int, cover: str) -> TaskFile:
    rng = random.Random(seed)
    labels = sorted(domain.missions)
    base = snapshot.open_copy()
    try:
        subjects = domain.missions.subjects(base)
        if not subjects:
            raise GenerationError(f"snapshot {snapshot.manifest.snapshot_id} has no customers to build tasks for")
        wanted: list[tuple[str, ...] | None]
        if cover == "pairs":
            plans = plan_goals(labels, DEFAULT_TASKS if n is None else n, rng, domain.missions.opener)
            wanted, choices = [None] * len(plans), {}
        else:
            choices = feasible_type_sequences(probe_types(domain, base, subjects, rng))
            order = list(choices)
            wanted = [order[i % len(order)] for i in range(len(order) if n is None else n)]
            plans = [list(rng.choice(choices[types])) for types in wanted]
    finally:
        base.close()
    label = f"generator v{GENERATOR_VERSION} seed={seed}" + ("" if cover == "pairs" else f" cover={cover}")
    server = DomainServer(domain, snapshot, max_episodes=4)
    personas = catalog_personas()
    tasks: list[Task] = []
    async with DirectSession(server) as client:
        for i, goals in enumerate(plans):
            task_id = f"gen_{domain.name}_{i + 1:03d}"
            persona = persona_for(i, personas)
            types = wanted[i]
            for attempt in range(MAX_ATTEMPTS):  # each attempt on an episode of its own (a closed id stays closed)
                if types is not None and attempt:  # the types again, maybe over other goals
                    goals = list(rng.choice(choices[types]))
                task = await _build_task(client, server, task_id, f"{task_id}.{attempt}", persona, goals,
                                         rng.choice(subjects), rng, label, types)
                if task is not None:
                    tasks.append(task)
                    break
            else:
                what = f"the goals {goals}" if types is None else f"the mission types {list(types)}"
                raise GenerationError(f"no customer makes {what} feasible after {MAX_ATTEMPTS} attempts; "
                                      "fix: loosen the missions' preconditions or enrich the snapshot")
    return TaskFile(domain=domain.name, snapshot=snapshot.manifest.snapshot_id, source=label, tasks=tasks)


async def _build_task(client: DirectSession, server: DomainServer, task_id: str, episode: str, persona: str,
                      goals: list[str], subject: dict[str, Any], rng: random.Random, label: str,
                      types: tuple[str, ...] | None = None) -> Task | None:
    """One attempt: build and run every goal's mission on a fresh episode (of the MMTB type `types` names, when
    given); None if anything doesn't fit."""
    meta = {EPISODE_META_KEY: episode}
    missions: list[Mission] = []
    action_sets: list[ActionSet] = []
    outputs: dict[str, dict[str, Any]] = {}
    opened: list[str] = []
    for k, goal in enumerate(goals):
        played = await play_mission(client, server, episode, goal, subject, rng, opened,
                                    want=None if types is None else types[k])
        if played is None:
            server.episodes.drop(episode)
            return None
        mission, sets, outputs[goal] = played
        missions.append(mission)
        action_sets.extend(sets)
        if goal == server.domain.missions.opener:
            opened = [a.action_id for a in action_sets if a.goal == goal]
    res = await client.read_resource(STATE_DIGEST_URI, meta={**meta, CLOSE_META_KEY: True})
    digest = json.loads(res.contents[0].text)["digest"]

    intro = server.domain.missions.introduce(subject)
    known = " ".join(dict.fromkeys([intro] + [s for m in missions for s in m.known]))
    communicate, by_goal = communicated(missions, outputs, known)
    return _task(task_id, server.domain.name, persona, goals, missions, known,
                 EvaluationCriteria(action_sets=action_sets, communicate_info=communicate,
                                    communicate_info_by_goal=by_goal,
                                    nl_assertions=[a for m in missions for a in m.nl_assertions],
                                    expected_state_digest=digest),
                 f"{label}; subject {subject.get('customer_id', '?')}")


async def play_mission(client: DirectSession, server: DomainServer, episode: str, goal: str, subject: dict[str, Any],
                       rng: random.Random, opened: list[str], given: Given | None = None, given_by: str = "",
                       want: str | None = None
                       ) -> tuple[Mission, list[ActionSet], dict[str, Any]] | None:
    """Build `goal`'s mission on the episode as earlier goals left it and run its gold calls there in the
    oracle's order: the mission, its action sets (after `opened`, the opener's actions, when a call has no
    dependency of its own) and each call's output by key; None if the mission doesn't fit or a call fails.
    With `given` (a fact read in another domain by action `given_by`), the goal's `FactUse` builds the mission
    and each call that takes a given value also depends on `given_by`. `want`: an MMTB mission type the mission
    must have (up to `TYPE_ROLLS` builds; None if none has it)."""
    meta = {EPISODE_META_KEY: episode}
    db: sqlite3.Connection = server.episodes.get(episode).db
    missions = server.domain.missions
    if given is not None:
        use = next(u for u in missions.uses.values() if u.goal == goal)
        builders: tuple[Any, ...] = (lambda db, rng, subject: use.build(db, rng, subject, given),)
    else:
        builders = (missions[goal],) if want is None else missions.every_builder(goal)
    mission = _wanted_mission(builders, db, rng, subject, want)
    if mission is None:
        return None
    if mission.goal != goal or mission.action_type not in ACTION_TYPES:
        raise GenerationError(f"the {goal!r} builder returned goal {mission.goal!r} / action type "
                              f"{mission.action_type!r}; fix the builder")
    if not mission.calls:
        raise GenerationError(f"the {goal!r} builder returned a mission without gold calls, so nothing "
                              "deterministic would check the goal; fix the builder: ground it in a read whose "
                              "output the agent must communicate")
    mine: dict[str, Any] = {}
    action_sets: list[ActionSet] = []
    for call in _oracle_order(mission.calls):
        params = _resolve(call.params, mine, dict(given.values) if given else None)
        result = await client.call_tool(call.tool, params, meta=meta)
        if result.is_error:
            return None
        mine[call.key] = result.structured_content
        deps = [f"{goal}.{k}" for k in call.after] or list(opened)
        if given_params(call.params):
            deps.append(given_by)
        action_sets.append(ActionSet(
            action_id=f"{goal}.{call.key}", goal=goal,
            allowed_tools=[ToolCallSpec(function_name=call.tool, params=params)],
            depends_on=deps, required_parameters=call.required))
    return mission, action_sets, mine


def _wanted_mission(builders: tuple[Any, ...], db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any],
                    want: str | None) -> Mission | None:
    """The first mission the builders make, in turn, of MMTB type `want` (any type when None: the first builder,
    once), up to `TYPE_ROLLS` rounds; None when none does, or when every builder finds the subject infeasible."""
    for _ in range(1 if want is None else TYPE_ROLLS):
        made = []
        for build in builders:
            mission = build(db, rng, subject)
            if mission is not None and (want is None or MMTB_TYPE_OF.get(mission.action_type) == want):
                return mission
            made.append(mission)
        if all(m is None for m in made):
            return None
    return None


def communicated(missions: list[Mission], outputs: dict[str, dict[str, Any]], known: str
                 ) -> tuple[list[str], dict[str, list[str]]]:
    """communicate_info read from the gold calls' outputs (never a value already in `known`), and each item
    attributed to the goals whose calls produced it."""
    communicate: list[str] = []
    by_goal: dict[str, list[str]] = {}
    for mission in missions:
        for ref in mission.communicate:
            key, *path = ref.split(".")
            try:
                value = _fact_text(_lookup(outputs[mission.goal][key], path))
            except (KeyError, IndexError, ValueError, TypeError):
                raise GenerationError(f"{mission.goal} mission: communicate {ref!r} names no output value") from None
            if not value or _in_text(value, known):
                continue
            if value not in communicate:
                communicate.append(value)
            mine = by_goal.setdefault(mission.goal, [])
            if value not in mine:
                mine.append(value)  # an earlier goal may have it too: said once, it counts for both
    return communicate, by_goal


def _rubric_value(value: Any) -> str:
    """An argument as a rubric item shows it: a string as is, anything else as JSON, never with a double quote
    (quotes in an item mark the phrases a transcript must show)."""
    if value == "":
        return "(empty)"
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)).replace('"', "'")


def rubric_from_goals(goals: list[str], criteria: EvaluationCriteria) -> list[str]:
    """VitaBench-style rubric items for a task, one check of the outcome at a time, goal by goal: each final gold
    call of the goal (no other call of the goal depends on it) made with its checked arguments and succeeding (or
    failing as the task expects), then each value the agent must tell the user for that goal."""
    items: list[str] = []
    for k, goal in enumerate(goals, start=1):
        head = f"Request {k} ({re.sub(r'_+', ' ', goal).strip()}):"
        mine = [a for a in criteria.action_sets if a.goal == goal]
        needed = {d for a in mine for d in a.depends_on}
        for action in (a for a in mine if a.action_id not in needed):
            spec = action.allowed_tools[0]
            checked = action.required_parameters if action.required_parameters is not None else sorted(spec.params)
            args = ", ".join(f"{name} {_rubric_value(spec.params[name])}" for name in checked if name in spec.params)
            outcome = ("the call succeeds" if spec.expected_error is None
                       else f"the call is refused as expected ({spec.expected_error})")
            items.append(f'{head} the agent calls "{spec.function_name}"' + (f" with {args}" if args else "")
                         + f", and {outcome}.")
        for value in criteria.communicate_info_by_goal.get(goal, []):
            items.append(f'{head} the agent tells the user "{_rubric_value(value)}".')
    return list(dict.fromkeys(items))


def _task(task_id: str, domain: str, persona: str, goals: list[str], missions: list[Mission], known: str,
          criteria: EvaluationCriteria, notes: str) -> Task:
    """A generated task: the user's instructions from the missions, each goal's action type, rubric items from its
    goals (every generator path builds its task here). The notes record the types too, as this generator
    version's files always have (the field is then left out of the file)."""
    steps = [f"{k + 1}. {m.reason}" for k, m in enumerate(missions)]
    types = {g: m.action_type for g, m in zip(goals, missions, strict=True)}
    criteria = criteria.model_copy(update={"rubric": rubric_from_goals(goals, criteria)})
    return Task(
        id=task_id, domain=domain,
        description=TaskDescription(
            purpose=", then ".join(re.sub(r"_+", " ", g) for g in goals).capitalize(),
            relevant_policies=f"shiftbox {domain} agent policy",
            notes=f"{notes}; {action_types_note(types)}"),
        user_scenario=UserScenario(
            persona=persona,
            instructions=Instructions(
                reason_for_call=missions[0].reason, known_info=known,
                task_instructions="Raise one request at a time, in this order:\n" + "\n".join(steps)),
            goal_shifts=GoalShifts(required_shifts=len(goals) - 1, goals=list(goals), action_types=types)),
        evaluation_criteria=criteria,
    )
