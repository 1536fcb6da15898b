"""The seeded cross-domain task generator: one customer, goals alternating between two domains.

For every ordered pair of the given domains (banking→airline, airline→banking, …) it writes `per_pair` tasks
whose goals alternate between the pair's domains (2 to 4 goals, the first domain first), so every shift
crosses a domain boundary. Each goal's mission comes from its domain's `MissionSet` and is run, as the single
domain generator does (`play_mission`), on that domain's own episode; tools, goals and action ids are then
namespaced (`banking__get_account`, `shiftbox_servers.kit.namespaced`).

The customer is one person in both domains: a subject of each domain's `MissionSet.subjects` with the same
full name (the first such row of each). The user states the name once (`You are NAME.`), then each domain's
account sentence (`MissionSet.account`: the bank's phone number, the airline's user id), and every identity
fact a gold call's arguments use ("Your date of birth is …"); an attempt in which the user would state two
different values of one identity fact (a date of birth, email, phone or zip code that the two snapshots
hold differently, in known_info or a gold call's arguments) is discarded, so the identity the user gives
is consistent across the domains. Same domains, per_pair and seed give a
byte-identical task file.

Dependent goals (the default, generator v2; VitaBench's cross-scenario requests constrain each other): every
task has a later goal that needs a value only the other domain holds. A domain *uses* a fact kind
(`MissionSet.uses`: banking pays an amount, retail sets an address) that the other *offers*
(`MissionSet.facts`: the airline's or the store's price paid, the bank's or the airline's address); the
generator runs the offering domain's read on its episode, builds the using goal's mission with the values
(`{"$given": ...}` params) and records the read as an action of that goal whose action the using call
`depends_on`: a cross-domain dependency. When an earlier goal made that very call (the airline profile its
reservation lookup read), the using call depends on that action instead: the gold path never repeats a call
for the read (an attempt where the value changed since, or a later goal repeats the read, is discarded).
The user names the value ("what you paid for your store order #W…"), never states it. `independent=True`
gives v1's independent goals, unchanged.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
from dataclasses import replace
from typing import Any

import anyio

from shiftbox_servers.kit import (
    CLOSE_META_KEY,
    EPISODE_META_KEY,
    NAMESPACE_SEPARATOR,
    STATE_DIGEST_URI,
    DirectSession,
    DomainServer,
    Fact,
    Given,
    Mission,
    Snapshot,
    combined_state_digest,
    get_domain,
    namespaced,
)

from ..errors import unwrapped_errors
from ..tasks import INDEPENDENT_GOALS, ActionSet, EvaluationCriteria, Task, TaskFile, ToolCallSpec
from ._generate import (
    MAX_ATTEMPTS,
    MAX_TASKS,
    OPENER_SHARE,
    GenerationError,
    _in_text,
    _lookup,
    _task,
    catalog_personas,
    communicated,
    given_params,
    persona_for,
    play_mission,
)

CROSS_GENERATOR_VERSION = 2
"""2: every task has a cross-domain dependency (v1, independent goals: `independent=True`)."""
INDEPENDENT_GENERATOR_VERSION = 1
PLANS = 5
"""Goal plans tried per task before giving up (a plan few people of both snapshots can carry out is replaced)."""
CROSS_LENGTHS = (2, 3, 4, 2, 3)
"""Goals per task, in turn within each ordered pair (alternating domains: 2 goals = 1 crossing shift)."""
IDENTITY_FIELDS: dict[str, tuple[str, ...]] = {
    "date of birth": ("dob", "date_of_birth"), "email": ("email",), "phone": ("phone_number", "phone"),
    "zip code": ("zip", "postal_code"),
}
"""Identity facts by the subject columns that hold them: the user must never state two values of one."""


def generate_cross_tasks(domains: list[str], *, per_pair: int, seed: int, independent: bool = False) -> TaskFile:
    """`per_pair` tasks for every ordered pair of `domains` (at least two, each with missions), on each
    domain's default snapshot, reproducible from `seed`; each with a cross-domain dependency unless
    `independent`. Runs its own event loop: call it from sync code."""
    if len(domains) < 2 or len(set(domains)) < len(domains):
        raise ValueError(f"cross-domain tasks need two different domains or more, got {domains}")
    pairs = len(domains) * (len(domains) - 1)
    if per_pair < 1 or per_pair * pairs > MAX_TASKS:
        raise ValueError(f"per_pair must be at least 1, and at most {MAX_TASKS:,} tasks in all ({pairs} ordered pairs "
                         f"of domains), got {per_pair}")
    parts = [get_domain(d) for d in domains]
    for d in parts:
        if not d.missions:
            raise ValueError(f"domain {d.name!r} has no task missions (Domain(missions=...))")
    servers = {d.name: DomainServer(d, Snapshot.load(d.default_snapshot_dir()), max_episodes=4) for d in parts}
    with unwrapped_errors():
        return anyio.run(_generate, servers, per_pair, seed, independent)


def plan_cross_goals(order: tuple[str, str], labels: dict[str, list[str]], openers: dict[str, str | None],
                     length: int, rng: random.Random, fixed: dict[int, str] | None = None) -> list[tuple[str, str]]:
    """(domain, goal) pairs alternating between the two domains of `order`, the first one first; each domain's
    goals distinct, its first one its opener (if any) in OPENER_SHARE of the tasks; `fixed` sets goal k."""
    fixed = fixed or {}
    plan: list[tuple[str, str]] = []
    for k in range(length):
        domain = order[k % 2]
        if k in fixed:
            plan.append((domain, fixed[k]))
            continue
        used = {g for d, g in plan if d == domain}
        options = [g for g in labels[domain] if g not in used and g not in fixed.values()]
        if not used and openers[domain] is not None and rng.random() < OPENER_SHARE:
            plan.append((domain, openers[domain]))
        else:
            plan.append((domain, rng.choice(options)))
    return plan


Link = tuple[int, str]
"""A cross-domain dependency in a plan: goal k uses a fact of this kind from the other domain."""


def plan_link(order: tuple[str, str], servers: dict[str, DomainServer], length: int,
              rng: random.Random) -> tuple[int, Link]:
    """The task's length (the cycle's, or more when only a later goal can use a fact: 3 when the second
    domain uses none of the first's) and its link: a goal k >= 1 whose domain uses a fact kind the other offers."""
    for n in range(length, 5):
        links = [(k, kind) for k in range(1, n) for kind in sorted(servers[order[k % 2]].domain.missions.uses)
                 if kind in servers[order[(k + 1) % 2]].domain.missions.facts]
        if links:
            return n, rng.choice(links)
    raise GenerationError(f"neither {order[0]} nor {order[1]} uses a fact the other offers, so no {order[0]} -> "
                          f"{order[1]} task can have a cross-domain dependency; fix: give one domain's MissionSet a "
                          "`uses` entry of a kind the other's `facts` offers, or generate with --independent")


def full_name(subject: dict[str, Any]) -> str:
    return subject.get("full_name") or f"{subject['first_name']} {subject['last_name']}"


def _people(server: DomainServer) -> dict[str, dict[str, Any]]:
    """Full name -> the first subject of that name in the domain's snapshot."""
    db = server.snapshot.open_copy()
    try:
        subjects = server.domain.missions.subjects(db)
    finally:
        db.close()
    people: dict[str, dict[str, Any]] = {}
    for subject in subjects:
        people.setdefault(full_name(subject), subject)
    return people


async def _generate(servers: dict[str, DomainServer], per_pair: int, seed: int, independent: bool) -> TaskFile:
    rng = random.Random(seed)
    personas = catalog_personas()
    people = {name: _people(server) for name, server in servers.items()}
    labels = {name: sorted(server.domain.missions) for name, server in servers.items()}
    openers = {name: server.domain.missions.opener for name, server in servers.items()}
    tasks: list[Task] = []
    async with contextlib.AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(DirectSession(s)) for name, s in servers.items()}
        for order in itertools.permutations(servers, 2):
            shared = sorted(people[order[0]].keys() & people[order[1]].keys())
            if not shared:
                raise GenerationError(f"no person is in both the {order[0]} and the {order[1]} snapshot (same full "
                                      "name); cross-domain tasks need one")
            for k in range(per_pair):
                task_id = f"cross_{order[0]}_{order[1]}_{k + 1:03d}"
                for _plan in range(PLANS):  # a plan no shared person can carry out is replaced
                    length, link = CROSS_LENGTHS[k % len(CROSS_LENGTHS)], None
                    if not independent:
                        length, link = plan_link(order, servers, length, rng)
                    fixed = {} if link is None else {
                        link[0]: servers[order[link[0] % 2]].domain.missions.uses[link[1]].goal}
                    plan = plan_cross_goals(order, labels, openers, length, rng, fixed)
                    for attempt in range(MAX_ATTEMPTS):
                        name = rng.choice(shared)
                        subjects = {d: people[d][name] for d in order}
                        task = await _build(clients, servers, task_id, f"{task_id}.{_plan}.{attempt}",
                                            persona_for(len(tasks), personas), plan, name, subjects, rng,
                                            _label(independent, seed), link)
                        if task is not None:
                            break
                    if task is not None:
                        tasks.append(task)
                        break
                else:
                    raise GenerationError(f"{task_id}: no person makes the goals {plan} feasible after "
                                          f"{MAX_ATTEMPTS} attempts (and {PLANS - 1} other plans)")
    source = _label(independent, seed) + (f" ({INDEPENDENT_GOALS})" if independent else "")
    return TaskFile(domain=",".join(servers), snapshot=",".join(s.snapshot.manifest.snapshot_id for s in servers.values()),
                    source=source, tasks=tasks)


def _label(independent: bool, seed: int) -> str:
    return f"cross-domain generator v{INDEPENDENT_GENERATOR_VERSION if independent else CROSS_GENERATOR_VERSION} seed={seed}"


def _scoped(domain: str, action: ActionSet) -> ActionSet:
    """An action set of one domain as the cross-domain task holds it: ids, goal and tool names namespaced (a
    dependency on another domain's action is namespaced already)."""

    def scoped_id(action_id: str) -> str:
        return action_id if NAMESPACE_SEPARATOR in action_id else f"{domain}{NAMESPACE_SEPARATOR}{action_id}"

    return ActionSet(
        action_id=scoped_id(action.action_id), goal=namespaced(domain, action.goal or ""),
        allowed_tools=[ToolCallSpec(function_name=namespaced(domain, t.function_name), params=t.params,
                                    expected_error=t.expected_error) for t in action.allowed_tools],
        depends_on=[scoped_id(d) for d in action.depends_on], required_parameters=action.required_parameters)


async def _build(clients: dict[str, DirectSession], servers: dict[str, DomainServer], task_id: str, episode: str,
                 persona: str, plan: list[tuple[str, str]], name: str, subjects: dict[str, dict[str, Any]],
                 rng: random.Random, label: str, link: Link | None) -> Task | None:
    """One attempt on a fresh episode of each domain; None if a mission doesn't fit or the identity conflicts."""
    missions: list[Mission] = []
    action_sets: list[ActionSet] = []
    outputs: dict[str, dict[str, Any]] = {}
    opened: dict[str, list[str]] = {d: [] for d in subjects}
    hidden: dict[str, list[str]] = {}  # action id -> params the other domain's fact fills (never stated)
    results: dict[str, Any] = {}  # action id -> its gold call's output
    note, read_call = "", None
    for k, (domain, goal) in enumerate(plan):
        server = servers[domain]
        given, given_by, known = None, "", ()
        if link is not None and link[0] == k:
            source = next(d for d in subjects if d != domain)
            read = await _read_fact(clients[source], servers[source], episode, link[1], subjects[source], rng)
            if read is None:
                return _discard(servers, episode)
            fact, given = read
            known = fact.known
            spec = ToolCallSpec(function_name=namespaced(source, fact.call.tool), params=fact.call.params)
            earlier = next((a.action_id for a in action_sets if a.allowed_tools[0] == spec), None)
            if earlier is not None:  # an earlier goal made this very call: the using call depends on it
                if _fact_values(fact, results[earlier]) != given.values:
                    return _discard(servers, episode)  # the value changed since: re-reading would repeat the call
                given_by = earlier
            else:
                given_by = f"{source}{NAMESPACE_SEPARATOR}{goal}.{fact.call.key}"
                action_sets.append(ActionSet(action_id=given_by, goal=namespaced(domain, goal), allowed_tools=[spec],
                                             depends_on=[f"{source}{NAMESPACE_SEPARATOR}{a}" for a in opened[source]]))
            read_call = spec
            note = f"; cross-domain dependency: {namespaced(domain, goal)} needs the {link[1]} from {source}"
        played = await play_mission(clients[domain], server, episode, goal, subjects[domain], rng, opened[domain],
                                    given, given_by)
        if played is None:
            return _discard(servers, episode)
        mission, sets, mine = played
        if given is not None:
            mission = replace(mission, known=(*known, *mission.known))
            hidden = {f"{goal}.{c.key}": given_params(c.params) for c in mission.calls}
            hidden = {f"{domain}{NAMESPACE_SEPARATOR}{a}": p for a, p in hidden.items() if p}
        goal_name = namespaced(domain, goal)
        missions.append(replace(mission, goal=goal_name))
        outputs[goal_name] = mine
        results.update({f"{domain}{NAMESPACE_SEPARATOR}{goal}.{key}": out for key, out in mine.items()})
        action_sets.extend(_scoped(domain, a) for a in sets)
        if goal == server.domain.missions.opener:
            opened[domain] = [a.action_id for a in sets]
    if read_call is not None and [a.allowed_tools[0] for a in action_sets].count(read_call) > 1:
        return _discard(servers, episode)  # a later goal repeats the cross-domain read
    accounts = [servers[d].domain.missions.account for d in subjects]
    intro = [f"You are {name}.", *(account(subjects[d]) for d, account in zip(subjects, accounts, strict=True)
                                    if account is not None)]
    params = json.dumps([{p: v for p, v in t.params.items() if p not in hidden.get(a.action_id, ())}
                         for a in action_sets for t in a.allowed_tools], sort_keys=True)
    known = " ".join(dict.fromkeys(intro + [s for m in missions for s in m.known]))
    known = " ".join([known, *identity_used(subjects, params, known)])
    if identity_conflict(subjects, known + " " + params):
        return _discard(servers, episode)
    digests = {}
    for domain in subjects:
        res = await clients[domain].read_resource(STATE_DIGEST_URI,
                                                  meta={EPISODE_META_KEY: episode, CLOSE_META_KEY: True})
        digests[domain] = json.loads(res.contents[0].text)["digest"]
    communicate, by_goal = communicated(missions, outputs, known)
    who = ", ".join(f"{d}:{s.get('customer_id', '?')}" for d, s in subjects.items())
    return _task(task_id, ",".join(subjects), persona, [m.goal for m in missions], missions, known,
                 EvaluationCriteria(action_sets=action_sets, communicate_info=communicate,
                                    communicate_info_by_goal=by_goal,
                                    nl_assertions=[a for m in missions for a in m.nl_assertions],
                                    expected_state_digest=combined_state_digest(digests, list(digests))),
                 f"{label}; subjects {who}{note}")


async def _read_fact(client: DirectSession, server: DomainServer, episode: str, kind: str, subject: dict[str, Any],
                     rng: random.Random) -> tuple[Fact, Given] | None:
    """The domain's fact of `kind` about the subject, read on the task's episode: the fact and its values."""
    fact = server.domain.missions.facts[kind](server.episodes.get(episode).db, rng, subject)
    if fact is None:
        return None
    result = await client.call_tool(fact.call.tool, fact.call.params, meta={EPISODE_META_KEY: episode})
    if result.is_error:
        return None
    return fact, Given(_fact_values(fact, result.structured_content), fact.phrase)


def _fact_values(fact: Fact, output: Any) -> dict[str, Any]:
    """The fact's fields as the read's output holds them."""
    return {f: _lookup(output, path.split(".")) for f, path in fact.fields.items()}


def identity_used(subjects: dict[str, dict[str, Any]], params: str, known: str) -> list[str]:
    """Sentences for the identity facts a gold call's arguments use and known_info does not state yet
    ("Your date of birth is …"), so the user can give them."""
    said = []
    for fact, columns in IDENTITY_FIELDS.items():
        for value in dict.fromkeys(str(s[c]) for s in subjects.values() for c in columns if s.get(c)):
            if _in_text(value, params) and not _in_text(value, known):
                said.append(f"Your {fact} is {value}.")
    return said


def identity_conflict(subjects: dict[str, dict[str, Any]], stated: str) -> str | None:
    """The identity fact the user would state with two different values (each domain's record of it appears in
    `stated`), or None."""
    for fact, columns in IDENTITY_FIELDS.items():
        values = {str(s[c]) for s in subjects.values() for c in columns if s.get(c)}
        if len([v for v in values if _in_text(v, stated)]) > 1:
            return fact
    return None


def _discard(servers: dict[str, DomainServer], episode: str) -> None:
    for server in servers.values():
        server.episodes.drop(episode)
    return None
