"""Checking and resolving a run before anything is written: `plan_run` gives the `RunPlan` that
`run_evaluation` executes. Every bad input is a `RunPlanError` whose message names the problem and the fix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from shiftbox_servers.kit import (
    SnapshotError,
    SnapshotManifest,
    domain_list,
    get_domain,
    is_cross_domain,
    snapshots_root,
)

from .._registry import (
    AGENT_GROUP,
    USER_GROUP,
    SpecError,
    agent_from_spec,
    check_spec,
    user_from_spec,
)
from ..agents import Agent
from ..errors import RunPlanError
from ..tasks import Task, TaskFile, load_task_file, repeated_task_ids
from ..users import UserSimulator
from ..vcr import INSTALL_VCR, vcr_installed
from ..world import SERVER_MODES, DockerError, find_image
from ._config import (
    AGENT_POLICIES,
    MAX_SIMULATIONS,
    ExecutionOptions,
    ExternalAgent,
    RunConfig,
    RunMetadata,
    check_option_values,
    is_external_agent,
    selected_tasks,
    task_file_digest,
)
from ._per_mission import RUN_PROTOCOLS
from ._record import LLM_CASSETTES, LlmCassettes


@dataclass(frozen=True)
class RunPlan:
    """A checked run: its configuration (what decides the results), the tasks to run and how to run them."""

    config: RunConfig
    task_file: TaskFile
    tasks: list[Task]
    out: Path
    options: ExecutionOptions = field(default_factory=ExecutionOptions)
    resume: bool = False
    record: Path | None = None
    llm_cassettes: LlmCassettes = "boundary"
    # the specs and options as given; `config` holds them redacted (no credentials in run.json)
    agent_options: dict[str, str] = field(default_factory=dict)
    user_options: dict[str, str] = field(default_factory=dict)
    agent_spec: str | None = None
    user_spec: str | None = None

    @property
    def metadata(self) -> RunMetadata:
        return RunMetadata(config=self.config, shiftbox_version=version("shiftbox"),
                           simulations=len(self.tasks) * self.config.trials)

    @property
    def external_agent(self) -> bool:
        """Whether the plan's caller brings the agent (`ExternalAgent`: Inspect, an RL environment)."""
        return is_external_agent(self.config.agent)

    def make_agent(self) -> Agent:
        if self.external_agent:
            raise RunPlanError(f"agent {self.config.agent} is brought by the plan's caller, which makes it; "
                               "`run_evaluation` runs plans whose agent is a spec (plan_run(agent=SPEC))")
        return agent_from_spec(self.agent_spec or self.config.agent, self.agent_options)

    def make_user(self) -> UserSimulator:
        return user_from_spec(self.user_spec or self.config.user, self.user_options)


def plan_run(
    tasks: Path | str | TaskFile,
    out: Path | str,
    *,
    domain: str | None = None,
    agent: str | ExternalAgent = "scripted:oracle",
    user: str = "scripted",
    agent_args: Mapping[str, str] | None = None,
    user_args: Mapping[str, str] | None = None,
    trials: int = 1,
    options: ExecutionOptions | None = None,
    seed: int = 0,
    servers: str = "inproc",
    snapshot: Path | str | None = None,
    task_ids: list[str] | None = None,
    limit: int | None = None,
    max_steps: int = 100,
    max_tool_errors: int = 5,
    one_tool_per_turn: bool = False,
    resume: bool = False,
    max_retries: int | None = None,
    record: Path | str | None = None,
    llm_cassettes: str = "boundary",
    toolset: str | None = None,
    dependency_graph: bool = False,
    policy: str = "domain",
    protocol: str = "live",
    graph_refusal: bool = False,
) -> RunPlan:
    """Check a run (domain, agent and user specs and options, task file, task ids, snapshot, Docker image)
    and resolve what it will use; writes nothing. The arguments are `shiftbox run`'s options.

    `task_ids` and `limit` select the tasks: the named ones (all without), then the first `limit` of them in file
    order (`selected_tasks`); both are recorded in the config, so `--resume` and replay take the same ones.

    `options` says how the simulations are executed (`ExecutionOptions`: concurrency, executor, workers,
    infrastructure retries, the LLM cap; the defaults without). `agent` is a SPEC, or an `ExternalAgent` when the
    caller makes the agent itself (Inspect's model, an RL policy): no agent spec is then checked, and the config
    records `external:<name>`.

    `dependency_graph`: the servers write each tool's preconditions and postconditions into its description
    (VitaBench's tool dependency graphs); `graph_refusal`: they also refuse a call whose required tools have not
    succeeded in the episode (a shiftbox option; needs `dependency_graph`); `toolset` (default: the task file's,
    `TaskFile.toolset_for`: a reference import's is the reference's tool contract) is the servers' tool profile;
    `policy` "none": the agent is given no domain policy. `protocol` "per-mission": each goal is a simulation of
    its own, played after the gold conversation of the earlier goals (`mission_tasks`, MMTB's teacher forcing);
    "live" (the default): one conversation through every goal. `llm_cassettes`
    "http" records the fixture's LLM cassettes at the HTTP level (vcrpy) instead of at the boundary (docs/replay.md).

    With the processes executor it also starts the fork server the worker processes come from
    (`start_fork_server`), so the seconds of its imports pass while the caller goes on preparing the run."""
    check_option_values(
        {"trials": trials, "seed": seed, "limit": limit, "max_steps": max_steps, "max_tool_errors": max_tool_errors,
         "max_retries": max_retries, "one_tool_per_turn": one_tool_per_turn, "resume": resume,
         "dependency_graph": dependency_graph, "graph_refusal": graph_refusal, "agent_args": agent_args, "user_args": user_args,
         "task_ids": task_ids})
    task_file, source = _task_file(tasks)
    domain = _domain_spec(domain or task_file.domain)
    toolset = task_file.toolset_for(toolset)
    check_server_mode(servers)
    if graph_refusal and not dependency_graph:
        raise RunPlanError("--graph-refusal enforces the dependency graph's steps, so it needs dependency-graph mode: "
                           "add --dependency-graph")
    if policy not in AGENT_POLICIES:
        raise RunPlanError(f"--policy {policy!r} is not one of {', '.join(AGENT_POLICIES)}")
    if protocol not in RUN_PROTOCOLS:
        raise RunPlanError(f"--protocol {protocol!r} is not one of {', '.join(RUN_PROTOCOLS)}")
    agent_options, user_options = dict(agent_args or {}), dict(user_args or {})
    external = isinstance(agent, ExternalAgent)
    agent = agent.spec if isinstance(agent, ExternalAgent) else agent
    _check_roles(domain, toolset, None if external else agent, user, agent_options, user_options, max_retries)
    check_graph_mode(domain, dependency_graph)
    if is_cross_domain(domain) or is_cross_domain(task_file.domain):
        check_cross_domain_run(domain, task_file, source, record,
                               None if external else agent_from_spec(agent, agent_options))
    elif task_file.domain != domain:
        raise RunPlanError(f"{source} holds {task_file.domain} tasks, not {domain}")
    _check_recording(record, resume, llm_cassettes)
    snapshot_dir = (resolve_cross_snapshots(domain, task_file, snapshot) if is_cross_domain(domain)
                    else resolve_snapshot(domain, task_file, Path(snapshot) if snapshot is not None else None))
    options = options or ExecutionOptions()
    check_snapshots(domain, snapshot_dir, given=snapshot is not None, on_nodes=options.executor == "ray")
    if servers == "docker":  # engine and image, before anything is written to --out
        try:
            for name in domain_list(domain):
                find_image(name)
        except DockerError as exc:
            raise RunPlanError(str(exc)) from None
    config = RunConfig(
        domain=domain, tasks_sha256=task_file_digest(task_file), task_ids=task_ids, limit=limit, agent=agent,
        agent_args=agent_options, user=user, user_args=user_options, trials=trials, seed=seed,
        servers=servers, snapshot=str(snapshot_dir), max_steps=max_steps, max_tool_errors=max_tool_errors,
        one_tool_per_turn=one_tool_per_turn, toolset=toolset, dependency_graph=dependency_graph, policy=policy,
        protocol=protocol,  # type: ignore[arg-type]  # checked above
        graph_refusal=graph_refusal,
    )
    chosen = _select(task_file, config, source)
    if len(chosen) * trials > MAX_SIMULATIONS:
        raise RunPlanError(f"--trials {trials} × {len(chosen)} tasks is {len(chosen) * trials:,} simulations, more than "
                           f"one run holds ({MAX_SIMULATIONS:,}); lower --trials, or take fewer tasks (--limit)")
    plan = RunPlan(config=config, task_file=task_file, tasks=chosen,
                   out=Path(out), options=options, resume=resume,
                   record=Path(record) if record is not None else None,
                   llm_cassettes=llm_cassettes,  # type: ignore[arg-type]  # checked by _check_recording
                   agent_options=agent_options, user_options=user_options,
                   agent_spec=None if external else agent, user_spec=user)
    if plan.options.executor == "processes":
        from ._workers import start_fork_server  # the process machinery only when asked for

        start_fork_server(plan)  # its imports go on while the caller prepares the run
    return plan


def _check_recording(record: Path | str | None, resume: bool, llm_cassettes: str) -> None:
    if record is not None and resume:
        raise RunPlanError("--record cannot be combined with --resume: a fixture must hold one uninterrupted recording")
    if llm_cassettes not in LLM_CASSETTES:
        raise RunPlanError(f"--llm-cassettes {llm_cassettes!r} is not one of {', '.join(LLM_CASSETTES)}")
    if llm_cassettes == "http":
        if record is None:
            raise RunPlanError("--llm-cassettes http needs --record: it says how a fixture's LLM calls are recorded")
        if not vcr_installed():
            raise RunPlanError(f"--llm-cassettes http records with vcrpy: {INSTALL_VCR}")


def check_server_mode(servers: str) -> None:
    """How the servers run must be one of `SERVER_MODES` (checked before anything is written)."""
    if servers not in SERVER_MODES:
        raise RunPlanError(f"--servers {servers!r} is not one of {', '.join(SERVER_MODES)}")


def _task_file(tasks: Path | str | TaskFile) -> tuple[TaskFile, str]:
    """The task file, and how to name it in messages."""
    if isinstance(tasks, TaskFile):
        return tasks, f"the task file ({tasks.source or tasks.domain})"
    path = Path(tasks)
    if path.is_dir():
        raise RunPlanError(f"task file {path} is a directory; give a task file (e.g. {path / 'tasks.json'})")
    if not path.is_file():
        raise RunPlanError(f"task file {path} does not exist")
    try:
        return load_task_file(path), str(path)
    except ValueError as exc:
        raise RunPlanError(str(exc)) from None


def _check_roles(domain: str, toolset: str, agent: str | None, user: str, agent_options: dict[str, str],
                 user_options: dict[str, str], max_retries: int | None) -> None:
    """Domain and toolset installed, agent (None: the caller brings its own) and user specs installed and their
    options accepted (each made once now and preflighted, so bad options fail here, not in every simulation)."""
    roles = [(USER_GROUP, user, user_options, user_from_spec)]
    if agent is not None:
        roles.insert(0, (AGENT_GROUP, agent, agent_options, agent_from_spec))
    try:
        get_domain(domain).toolset(toolset)
        for group, spec, _, _ in roles:
            check_spec(group, spec)
        if max_retries is not None:  # for the roles an LLM plays; scripted roles have nothing to retry
            for _, spec, options, _ in roles:
                if spec.startswith("litellm:"):
                    options.setdefault("max_retries", str(max_retries))
        for _, spec, options, make in roles:
            make(spec, options).preflight()
    except (KeyError, SpecError, ValueError) as exc:
        raise RunPlanError(str(exc.args[0])) from None


def _select(task_file: TaskFile, config: RunConfig, source: str) -> list[Task]:
    """The tasks to run (`selected_tasks`), after checking the file holds tasks, each id once (it names the task's
    simulations), every named id is in it and, in a cross-domain run, that some task uses only the run's domains (a
    task set spans several pairs of domains)."""
    known = [t.id for t in task_file.tasks]
    if not known:
        raise RunPlanError(f"{source} holds no tasks; give a task file with tasks (`shiftbox tasks generate` writes one)")
    repeated = sorted(repeated_task_ids(task_file))
    if repeated:
        raise RunPlanError(f"{source} uses these task ids more than once: {', '.join(repeated[:5])}; give each task "
                           "its own id (`shiftbox tasks validate` lists them)")
    missing = [i for i in config.task_ids or () if i not in set(known)]
    if missing:
        some = ", ".join(known[:5]) + (f", … ({len(known)} tasks)" if len(known) > 5 else "")
        raise RunPlanError(f"task ids not in {source}: {', '.join(missing)}; its known ids include {some}")
    chosen = selected_tasks(config, task_file.tasks)
    if not chosen and is_cross_domain(config.domain):
        named = len(set(config.task_ids)) if config.task_ids else len(known)
        raise RunPlanError(f"none of the {named} tasks chosen from {source} uses only the domains {config.domain}; "
                           "each task needs every domain it spans in --domain")
    return chosen


def _domain_spec(domain: str) -> str:
    """`--domain` as recorded: one name, or several separated by commas (checked: no blank, no repeat)."""
    try:
        return ",".join(domain_list(domain))
    except ValueError as exc:
        raise RunPlanError(str(exc)) from None


def check_cross_domain_run(domain: str, task_file: TaskFile, source: str, record: Path | str | None,
                           agent: Agent | None) -> None:
    """A cross-domain run needs a cross-domain task set (namespaced tools and goals), and the other way round;
    recording a fixture and agents that call tools through the gateway are single-domain only."""
    if not is_cross_domain(task_file.domain):
        raise RunPlanError(f"{source} holds {task_file.domain} tasks, whose tools are not namespaced; --domain "
                           f"{domain} needs a cross-domain task set (docs/tasks.md, cross-domain tasks)")
    if not is_cross_domain(domain):
        raise RunPlanError(f"{source} holds cross-domain tasks ({task_file.domain}); name every domain they need, "
                           f"e.g. --domain {task_file.domain}")
    if record is not None:
        raise RunPlanError("--record is not available for cross-domain runs yet (a fixture replays one domain)")
    if agent is not None and agent.uses_gateway:
        raise RunPlanError(f"agent {agent.name} calls its tools through the gateway, which serves one domain; "
                           "cross-domain runs need an agent whose tool calls the harness makes")


def resolve_cross_snapshots(domain: str, task_file: TaskFile, snapshot: Path | str | None) -> Path:
    """The snapshot directories of a cross-domain run, one per domain of `domain`, separated by commas: `snapshot`
    as given (one per domain), else the ones the task file names (`banking/v1,airline/v1`), else the defaults."""
    names = domain_list(domain)
    if snapshot is not None:
        dirs = [p.strip() for p in str(snapshot).split(",")]
        if len(dirs) != len(names):
            raise RunPlanError(f"--snapshot names {len(dirs)} directories for {len(names)} domains ({domain}); "
                               "give one per domain, in --domain's order, separated by commas")
        return Path(",".join(dirs))
    named = {s.split("/", 1)[0]: s for s in (task_file.snapshot or "").split(",") if "/" in s}
    dirs = []
    for name in names:
        path = snapshots_root() / named[name] if name in named else get_domain(name).default_snapshot_dir()
        if not path.exists():
            raise RunPlanError(f"the tasks are written for snapshot {named.get(name, name)}, which is not at {path}. "
                               "Or pass --snapshot DIR,DIR (one per domain).")
        dirs.append(str(path))
    return Path(",".join(dirs))


def check_snapshots(domain: str, snapshot_dir: Path, *, given: bool, on_nodes: bool = False) -> None:
    """Each domain's snapshot directory (comma-separated, in `domain`'s order) holds a snapshot of that domain
    (`Domain.check_snapshot`): checked from its manifest before anything is written, so a run directory never records
    a snapshot it cannot serve (the corrected command would find it in the way). `given`: named by `--snapshot`;
    `on_nodes`: the Ray nodes serve the snapshots, and a driver off the cluster may have none (docs/cluster.md), so
    one this machine cannot read is left to the Ray preflight."""
    said = "--snapshot" if given else "snapshot"
    dirs = str(snapshot_dir).split(",") if is_cross_domain(domain) else [str(snapshot_dir)]
    for name, directory in zip(domain_list(domain), dirs, strict=True):
        try:
            manifest = SnapshotManifest.read(Path(directory))
        except SnapshotError as exc:
            if on_nodes:
                continue
            raise RunPlanError(f"{said}: {exc}") from None
        try:
            get_domain(name).check_snapshot(manifest, directory)
        except SnapshotError as exc:
            raise RunPlanError(f"{said} {exc}") from None


def check_graph_mode(domain: str, dependency_graph: bool) -> None:
    """Dependency-graph mode needs every domain of the run to declare its graph (`Domain.check_graph_mode`, the
    server's rule): checked before anything is written, so the servers never refuse it once the run has started."""
    if dependency_graph:
        for name in domain_list(domain):
            try:
                get_domain(name).check_graph_mode()
            except ValueError as exc:
                raise RunPlanError(str(exc)) from None


def resolve_snapshot(domain: str, task_file: TaskFile, snapshot: Path | None) -> Path:
    """`snapshot`, else the snapshot the task file names (snapshots/<id>), else the domain's default."""
    if snapshot is not None:
        return snapshot
    if task_file.snapshot:
        path = snapshots_root() / task_file.snapshot
        if not path.exists():
            hint = ""
            if "acb" in task_file.snapshot:
                hint = (f" Import it with `shiftbox snapshots import agentchangebench {domain} "
                        f"<db file> --out {path}`.")
            raise RunPlanError(f"the tasks are written for snapshot {task_file.snapshot}, which is not at {path}."
                               f"{hint} Or pass --snapshot DIR.")
        return path
    return get_domain(domain).default_snapshot_dir()
