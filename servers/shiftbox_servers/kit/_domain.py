"""What a domain package declares; the kit turns it into a server, the harness reads the rest."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoints, entry_points
from pathlib import Path
from typing import Any

from .._lazy import lazy_exports
from ._cross import cross_policy, domain_list, is_cross_domain, namespaced, namespaced_tools
from ._graph import DependencyGraph
from ._missions import ImportedTask, MissionSet
from ._snapshot import Snapshot, SnapshotError, SnapshotManifest
from ._tools import ToolSet
from ._transfer import TRANSFER_TOOL

DOMAIN_ENTRY_POINT_GROUP = "shiftbox.domains"
SNAPSHOTS_ENV = "SHIFTBOX_SNAPSHOTS"
DEFAULT_TOOLSET = "default"
POLICY_PROMPT = "policy"
"""The name of the prompt that serves a domain's agent policy (`prompts/get`), on its server and its gateway."""


@dataclass(frozen=True)
class Domain:
    """A domain: its tools, agent policy, goal -> relevant-tools table and snapshot builder."""

    name: str
    tools: ToolSet
    policy: str
    goal_tools: dict[str, tuple[str, ...]]
    snapshot_version: str
    build_snapshot: Callable[[Path], SnapshotManifest]
    goal_lexicon: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Goal label -> words an agent uses when it takes the goal up (GSRT's deterministic ack detector).
    Only goal-specific terms: a word that several goals share is no evidence for one of them."""
    generic_terms: tuple[str, ...] = ()
    """Everyday nouns of the domain ('account', 'order', 'flight'): never evidence that a goal was taken up."""
    importers: Mapping[str, Callable[[Path, Path], SnapshotManifest]] = field(default_factory=dict)
    """Source format (e.g. 'agentchangebench') -> function(source file, out dir) writing a snapshot."""
    goal_requests: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """User phrasings per goal label, for scripted users ({card_id}-style fact placeholders allowed)."""
    missions: MissionSet = field(default_factory=MissionSet)
    """Goal label -> mission builder, and who tasks are about, for the seeded task generator (`shiftbox tasks generate`)."""
    extra_instructions: str = ""
    transfer_tool: str = TRANSFER_TOOL
    toolsets: Mapping[str, ToolSet] = field(default_factory=dict)
    """Tool profiles beside the default one (`tools`), e.g. 'agentchangebench': the reference's exact tool set."""
    parts: tuple[str, ...] = ()
    """A cross-domain view (`get_domain("banking,airline")`): the domains it joins, its tools and goals namespaced
    (`banking__get_account`); empty for a domain of its own."""
    dependency_graph: DependencyGraph = field(default_factory=DependencyGraph)
    """Every tool's preconditions and postconditions, written into its description in dependency-graph mode
    (`DomainServer(dependency_graph=True)`, VitaBench's tool dependency graphs); and the steps the refusal option
    enforces (`graph_refusal=True`)."""
    snapshot_tools: Callable[[Snapshot], ToolSet] | None = None
    """For a domain whose tools come with its data (each imported MMTB file brings its own): snapshot -> the tools
    its server serves, in place of `tools`; None: the tools are the declared ones."""
    task_importers: Mapping[str, Callable[[Path, Path], tuple[SnapshotManifest, list[ImportedTask]]]] = field(
        default_factory=dict)
    """Source format (e.g. 'mmtb') -> function(source file, out dir) writing the snapshot the source's tasks run
    on and returning those tasks (`shiftbox tasks import-<format>`)."""

    @property
    def policy_description(self) -> str:
        """How the policy prompt (`POLICY_PROMPT`) is listed."""
        return f"The {self.name} agent policy"

    @property
    def transfer_tools(self) -> tuple[str, ...]:
        """The tools that hand the customer to a human: one per joined domain in a cross-domain view."""
        if not self.parts:
            return (self.transfer_tool,)
        return tuple(namespaced(p, get_domain(p).transfer_tool) for p in self.parts)

    def default_snapshot_dir(self) -> Path:
        return snapshots_root() / self.name / self.snapshot_version

    def check_graph_mode(self) -> None:
        """Dependency-graph mode needs a declared graph (`DependencyGraph.declared`): ValueError saying why not. The
        one rule the server applies and a run's planning applies before anything is written."""
        if not self.dependency_graph.declared:
            why = " (its tools come with its snapshot)" if self.snapshot_tools is not None else ""
            raise ValueError(f"the {self.name} domain declares no dependency graph{why}, so dependency-graph mode "
                             "does not apply to it: leave out --dependency-graph (docs/servers.md)")

    def check_snapshot(self, manifest: SnapshotManifest, directory: Path | str) -> None:
        """The snapshot in `directory` (its manifest) is one of this domain: SnapshotError naming the fix if not. The
        one rule a server's opening and a run's planning apply."""
        if manifest.domain != self.name:
            raise SnapshotError(f"{directory} is a snapshot of {manifest.domain}, not {self.name}; give a "
                                f"{self.name} snapshot (e.g. {self.default_snapshot_dir()})")

    def toolset_names(self) -> list[str]:
        return [DEFAULT_TOOLSET, *sorted(set(self.toolsets) - {DEFAULT_TOOLSET})]

    def tools_for(self, snapshot: Snapshot, name: str = "default") -> ToolSet:
        """The tools a server of tool set `name` serves over `snapshot`: the snapshot's own for a domain with
        `snapshot_tools`, else `toolset(name)`."""
        if self.snapshot_tools is not None:
            self.toolset(name)  # KeyError naming the tool sets there are
            return self.snapshot_tools(snapshot)
        return self.toolset(name)

    def toolset(self, name: str = "default") -> ToolSet:
        """The tools of profile `name` ('default': `tools`); KeyError naming the profiles there are."""
        if name == DEFAULT_TOOLSET:
            return self.tools
        if name not in self.toolsets:
            raise KeyError(f"domain {self.name!r} has no tool set {name!r}; tool sets: "
                           f"{', '.join(self.toolset_names())}")
        return self.toolsets[name]


class DeferredToolSets(Mapping[str, ToolSet]):
    """A domain's tool sets beside the default, each named now and imported (`module.attribute`) when first asked
    for: a run of the default tools never loads the reference's (tens of ms of start-up)."""

    def __init__(self, where: Mapping[str, tuple[str, str]]):
        self._where = dict(where)
        self._loaded: dict[str, ToolSet] = {}

    def __getitem__(self, name: str) -> ToolSet:
        if name not in self._loaded:
            module, attribute = self._where[name]
            self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __reduce__(self) -> tuple[Any, ...]:
        return DeferredToolSets, (self._where,)

    def exports(self, package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
        """The domain package's module `__getattr__` and `__dir__` (`lazy_exports`): the names its modules give these
        tool sets (`reference_tools`) are imported on first use, the same objects asking the domain loads."""
        return lazy_exports(package, {attribute: module for module, attribute in self._where.values()})


def deferred(module: str, function: str) -> Callable[..., Any]:
    """`module.function`, imported at its first call: a domain names its snapshot builder and importers
    without loading them (and what they import) each time the domain is loaded."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), function)(*args, **kwargs)

    call.__name__ = call.__qualname__ = function
    call.__doc__ = f"{module}.{function}, imported when called."
    return call


def snapshots_root() -> Path:
    """Where snapshots live (as <root>/<domain>/<version>): $SHIFTBOX_SNAPSHOTS; else, in a checkout, its
    `snapshots/` folder; else (installed from a wheel) the user's data folder, ~/.local/share/shiftbox/snapshots."""
    env = os.environ.get(SNAPSHOTS_ENV)
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "servers" / "shiftbox_servers").is_dir():
        return checkout / "snapshots"
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "shiftbox" / "snapshots"


@functools.lru_cache(maxsize=8)
def _scanned(path: tuple[str, ...]) -> Any:
    """Every installed entry point, as one `sys.path` finds them."""
    return entry_points()


def installed_entry_points(group: str, name: str | None = None) -> EntryPoints:
    """The installed entry points of `group` (only those named `name`, when given), from one scan of the installed
    distributions a process, made again when `sys.path` changes: a scan reads every distribution's metadata (about
    6 ms), and a run looks up its domain, its agent's kind and its user's kind."""
    found = _scanned(tuple(sys.path))
    return found.select(group=group) if name is None else found.select(group=group, name=name)


def domain_names() -> list[str]:
    """Names of the installed domains, without importing them."""
    return sorted({ep.name for ep in installed_entry_points(DOMAIN_ENTRY_POINT_GROUP)})


def registered_domains() -> dict[str, Domain]:
    """Every domain installed (entry point group `shiftbox.domains`), by name."""
    found: dict[str, Domain] = {}
    for ep in sorted(installed_entry_points(DOMAIN_ENTRY_POINT_GROUP), key=lambda e: e.name):
        domain = ep.load()
        found[domain.name] = domain
    return found


def task_domains() -> list[str]:
    """Names of the installed domains that have task missions (the customer-service domains: tasks, runs, the
    demo, images); leaves out fixtures such as the kit's `echo`. Every domain-wide list asks this."""
    return sorted(name for name, domain in registered_domains().items() if domain.missions)


@functools.cache
def get_domain(name: str) -> Domain:
    """Load one installed domain by name (only its own package is imported); several names separated by
    commas ("banking,airline") give their cross-domain view (`cross_domain`)."""
    if is_cross_domain(name):
        return cross_domain(domain_list(name))
    for ep in installed_entry_points(DOMAIN_ENTRY_POINT_GROUP, name):
        return ep.load()
    known = ", ".join(domain_names())
    raise KeyError(f"unknown domain {name!r}; installed domains: {known or 'none'}")


def _no_cross_snapshot(out: Path) -> SnapshotManifest:
    raise ValueError("a cross-domain view has no snapshot of its own: build each domain's snapshot")


def cross_domain(names: list[str]) -> Domain:
    """Several installed domains as one (KeyError for one not installed): tools, goals, goal requests and
    lexicon namespaced (`namespaced`), the policies joined; tool profiles are those every domain has."""
    parts = [get_domain(n) for n in names]

    def keyed(tables: list[Mapping[str, Any]]) -> dict[str, Any]:
        return {namespaced(d.name, key): value for d, table in zip(parts, tables, strict=True)
                for key, value in table.items()}

    profiles = set.intersection(*(set(d.toolsets) for d in parts))
    tools = [namespaced_tools(d.name, d.tools) for d in parts]
    return Domain(
        name=",".join(names), tools=functools.reduce(lambda a, b: a + b, tools),
        policy=cross_policy({d.name: d.policy for d in parts}),
        goal_tools={namespaced(d.name, g): tuple(namespaced(d.name, t) for t in ts)
                    for d in parts for g, ts in d.goal_tools.items()},
        snapshot_version=",".join(d.snapshot_version for d in parts), build_snapshot=_no_cross_snapshot,
        goal_lexicon=keyed([d.goal_lexicon for d in parts]),
        generic_terms=tuple(dict.fromkeys(t for d in parts for t in d.generic_terms)),
        goal_requests=keyed([d.goal_requests for d in parts]),
        transfer_tool=namespaced(parts[0].name, parts[0].transfer_tool),
        toolsets={p: functools.reduce(lambda a, b: a + b, [namespaced_tools(d.name, d.toolsets[p]) for d in parts])
                  for p in sorted(profiles)},
        parts=tuple(names),
    )
