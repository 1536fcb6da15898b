"""Replaying a fixture (see `shiftbox.runs` for how one is recorded): its transcripts checked against its
trajectories, LLM answers from cassettes, tool results re-executed (drift-checked) or from transcripts."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

from shiftbox_servers.kit import Snapshot, get_domain, loads_json, snapshots_root, text_lines

from .._cassette_file import cassette_text, check_json_lines_depth
from .._jsonl import dump_json, load_json
from ..agents import Agent
from ..errors import CassetteMiss, ShiftboxError
from ..llm import Cassette, HttpCassette, LLMRequest, first_difference, http_cassette_file
from ..llm._cassette import Interaction, read_interactions, without_credentials
from ..runs import (
    CASSETTES,
    TRANSCRIPTS,
    RunConfig,
    RunHooks,
    fixture_file_name,
    read_fixture_info,
    recorded_snapshot_dirs,
    transcript_calls,
)
from ..tasks import Task
from ..trajectory import ServerInfo, Trajectory, read_trajectories
from ..world import ToolSession, World
from ._episodes import DriftCheckingEpisode, RecordedAgent, ReplayMismatch, TranscriptEpisode

ToolsMode = Literal["reexecute", "transcript"]


class TranscriptError(ShiftboxError, ValueError):
    """A transcript that is not JSON lines of the transcript format."""


def read_transcript(path: Path, known: dict[str, Any] | None = None) -> tuple[list[dict], list[dict]]:
    """(tools list, tools/call lines) of one transcript file. `known` keeps first lines already parsed, by their
    text: the tools/list line is the same in every transcript of a fixture, so it is parsed once."""
    rel = f"{TRANSCRIPTS}/{path.name}"
    lines = []
    for number, text in enumerate(text_lines(path.read_text()), 1):
        if not text.strip():
            continue
        line = known.get(text) if known is not None and not lines else None
        if line is None:
            try:
                line = loads_json(text, f"{rel} line {number}", finite=False)
            except ValueError as exc:
                raise TranscriptError(str(exc)) from None
            if known is not None and not lines:
                known[text] = line
        if not isinstance(line, dict) or line.get("method") not in ("tools/list", "tools/call"):
            raise TranscriptError(f"{rel} line {number}: not a tools/list or tools/call line")
        lines.append(line)
    if not lines or lines[0]["method"] != "tools/list" or any(x["method"] != "tools/call" for x in lines[1:]):
        raise TranscriptError(f"{rel}: expected a tools/list line, then tools/call lines")
    return lines[0].get("tools") or [], lines[1:]


def check_transcripts(fixture_dir: Path, recorded: dict[str, Trajectory]) -> tuple[list[str], list[dict]]:
    """Every way the fixture's transcripts differ from its recorded trajectories, named by simulation, call
    (numbered like tool drift: setup calls first) and field; latencies are not compared. The tools list
    must be the same in every transcript (one that differs from the others is named). Also the tools list the
    fixture was recorded with, as parsed from the first transcript read (the first simulation's; []: none): with
    no problems, every transcript's list is the same."""
    problems: list[str] = []
    folder = fixture_dir / TRANSCRIPTS
    expected_files = {fixture_file_name(sim) for sim in recorded}
    for name in sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []:
        if name not in expected_files:
            problems.append(f"{TRANSCRIPTS}/{name} belongs to no recorded simulation")
    tools_of: dict[str, list[dict]] = {}
    known: dict[str, Any] = {}
    for sim in sorted(recorded):
        path = folder / fixture_file_name(sim)
        rel = f"{TRANSCRIPTS}/{path.name}"
        if not path.is_file():
            problems.append(f"transcript missing for {sim}: {rel} does not exist")
            continue
        try:
            tools_of[sim], calls = read_transcript(path, known)
        except TranscriptError as exc:
            problems.append(f"{sim}: {exc}")
            continue
        expected = transcript_calls(recorded[sim])
        for n in range(max(len(expected), len(calls))):
            if n >= len(calls):
                problems.append(f"{sim}/call {n} ({expected[n]['name']}): in the recorded trajectory but missing "
                                f"from {rel}")
            elif n >= len(expected):
                problems.append(f"{sim}/call {n} ({calls[n].get('name')}): {rel} line {n + 2} has a call the "
                                "recorded trajectory does not")
            else:
                got = {k: v for k, v in calls[n].items() if k != "latency_ms"}
                want = {k: v for k, v in expected[n].items() if k != "latency_ms"}
                diff = first_difference(want, got)
                if diff is not None:
                    problems.append(f"{sim}/call {n} ({expected[n]['name']}): {rel} line {n + 2} differs from the "
                                    f"recorded trajectory in {diff}")
    if tools_of:
        parsed = {id(tools): tools for tools in tools_of.values()}  # a tools list parsed once is dumped once
        dumped = {key: json.dumps(tools, sort_keys=True) for key, tools in parsed.items()}
        dumps = {sim: dumped[id(tools)] for sim, tools in tools_of.items()}
        common = max(set(dumps.values()), key=list(dumps.values()).count)
        reference = json.loads(common)
        for sim, tools in tools_of.items():
            if dumps[sim] != common:
                problems.append(f"{sim}: the tools/list of {TRANSCRIPTS}/{fixture_file_name(sim)} differs from the other "
                                f"transcripts' in {first_difference(reference, tools)}")
    return problems, next(iter(tools_of.values()), [])  # filled in sorted order: the first simulation's


def _text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


_RESPONSE = ',"response":'
_DECODER = json.JSONDecoder()


def _request_span(line: str, index: int) -> tuple[int, int] | None:
    """Where the request's text is in a cassette line that parsed as the interaction `index`, written as a cassette
    writes it (`{"index":N,"request":...,"response":{...}}`); None for a line written otherwise. The response is
    the last `,"response":` whose value ends where the line does: one found inside the response or the request
    ends before an enclosing bracket closes, so it cannot end there."""
    head = f'{{"index":{index},"request":'
    if not line.startswith(head) or not line.endswith("}"):
        return None
    at = len(line)
    while (at := line.rfind(_RESPONSE, len(head), at)) >= 0:
        with contextlib.suppress(ValueError):
            if _DECODER.raw_decode(line, at + len(_RESPONSE))[1] == len(line) - 1:
                return len(head), at
    return None


class SharedTools:
    """The tools list a fixture's agent requests carry, as its cassette lines hold it (`,"tools":[...],"params":`).
    Every agent request of a run carries the same list (13 KB of each of the bench's 14 KB agent lines), so it is
    checked, parsed and hashed once a fixture: learnt from the first cassette read whole, then cut out of the other
    lines before their depth scan and parse, and left out of the digest of every request that carries it, recorded
    or replayed (`digest`)."""

    FIELD = ',"tools":'
    PLACEHOLDER = FIELD + 'null,"params":'
    CUT, WHOLE = "cut\n", "whole\n"
    """Digested before a request's text: with the list left out (`tools` null in its place), or written whole. A
    request without tools and one carrying the list are written alike once the list is left out: the mark tells
    them apart."""

    def __init__(self) -> None:
        self.marker: str | None = None  # ',"tools":' + the list's text + ',"params":'
        self.value: list[dict[str, Any]] | None = None

    def learn(self, interactions: list[Interaction]) -> None:
        """Take the first tools list the interactions' requests carry, written as their lines write it."""
        if self.marker is not None:
            return
        for interaction in interactions:
            if interaction.request.tools:  # written alone in a request: its first ',"tools":' is the field
                written = dump_json(interaction.request.model_copy(update={"messages": [], "params": {}}))
                start, tail = written.find(self.FIELD), ',"params":{}}'
                if start >= 0 and written.endswith(tail):
                    self.marker = written[start:-len(tail)] + ',"params":'
                    self.value = interaction.request.tools
                return

    def digest(self, request: LLMRequest) -> bytes:
        """sha256 of the request written as a cassette writes it, the list left out when its tools equal it (as
        values: a transcript's list has its keys sorted): equal digests, equal requests."""
        if self.value is not None and request.tools is not None and request.tools == self.value:
            return _text_digest(self.CUT + dump_json(request.model_copy(update={"tools": None})))
        return _text_digest(self.WHOLE + dump_json(request))

    def read(self, path: Path) -> list[tuple[bytes, dict[str, Any]]] | None:
        """Each line's (request digest, response), the tools list cut out of the lines that carry it (its first
        occurrence) before they are scanned and parsed, the digest taken over the line's own text (as `digest`
        takes it); None when a line is not written as a cassette writes it, or the list was cut from anywhere but
        the top of its request (the caller then reads the file whole)."""
        if self.marker is None:
            return None
        lines = text_lines(cassette_text(path))
        cuts = [self._find(line) for line in lines]
        reduced = [line if at < 0 else line[:at] + self.PLACEHOLDER + line[at + len(self.marker):]
                   for line, at in zip(lines, cuts, strict=True)]
        check_json_lines_depth(path, reduced)  # the list put back is as deep as where it sat in a checked line
        answers = []
        for short, at in zip(reduced, cuts, strict=True):
            if not short.strip():
                continue
            try:
                interaction = load_json(Interaction, short)
            except ValueError:  # not an interaction: read whole, to name the line
                return None
            span = _request_span(short, interaction.index)
            if span is None:
                return None
            start, end = span
            if at >= 0 and not self._cut_at_top(short, at, start, end):
                return None  # the list sat elsewhere first (in a message): the line does not read back as cut
            answers.append((_text_digest((self.WHOLE if at < 0 else self.CUT) + short[start:end]), interaction.response))
        return answers

    def _find(self, line: str) -> int:
        """`line.find(self.marker)`, the first place the marker starts (-1: none). The marker starts with its field's
        name: each place that name starts is tried in order, the marker compared there. `str.find` given the whole
        marker (12 KB in the bench) prepared its search over all of it again at every line: 22 ms of CPU for the
        bench's 1,700 lines (this way, 5 ms)."""
        at = line.find(self.FIELD)
        while at >= 0 and not line.startswith(self.marker, at):
            at = line.find(self.FIELD, at + 1)
        return at

    def _cut_at_top(self, line: str, at: int, start: int, end: int) -> bool:
        """Whether the placeholder at `at` is the request's own `tools` field (the request spans `start:end`): the
        value after it (`params`) ends where the request does, which one nested deeper cannot (its own brackets
        close first)."""
        if at < start:
            return False
        with contextlib.suppress(ValueError):
            return _DECODER.raw_decode(line, at + len(self.PLACEHOLDER))[1] == end - 1 and line[end - 1] == "}"
        return False


class CheckedCassette(Cassette):
    """A boundary cassette read and checked when the replay starts. It keeps each recorded request's digest and
    response, not the request (every conversation of a fixture would stay in memory): a request that matches its
    digest is answered with no second reading of the file; one that does not reads it again, to name the field
    that differs (or to find it equal, written differently) exactly as `Cassette.replay` does. The fixture's
    shared tools list is parsed once (`SharedTools`)."""

    def __init__(self, simulation_id: str, path: Path, tools: SharedTools):
        if not path.exists():
            super().__init__(simulation_id, path, "replay")  # the cassette miss that names the file
        self.simulation_id, self.path, self.mode, self.position = simulation_id, path, "replay", 0
        self.interactions: list[Interaction] = []
        answers = tools.read(path)
        if answers is None:
            interactions = read_interactions(path)
            tools.learn(interactions)
            answers = [(tools.digest(i.request), i.response) for i in interactions]
        self._answers: list[tuple[bytes, dict[str, Any]]] = answers
        self._tools = tools

    def replay(self, request: LLMRequest) -> dict[str, Any]:
        n = self.position
        if not self.interactions:
            if n < len(self._answers) and self._tools.digest(without_credentials(request)) == self._answers[n][0]:
                self.position += 1
                return self._answers[n][1]
            self.interactions = read_interactions(self.path)
        return super().replay(request)


class ReplayHooks(RunHooks):
    """Replays a fixture: LLM answers from cassettes, tools re-executed (drift-checked) or from transcripts."""

    sync_each_trajectory = False  # a replay is never resumed: its trajectories are synced once, at the end

    def __init__(self, fixture_dir: Path, tools: ToolsMode):
        """Raises CassetteFileError for a cassette over a limit or that does not parse. Problems are where the
        transcripts differ from the recorded trajectories (each difference named): tool results are then served
        from, or compared with, a recording checked whole."""
        self.dir, self.tools = fixture_dir, tools
        self.trajectories = read_trajectories(fixture_dir)  # the recording, read once: also what the replay is
        self.recorded = {t.simulation_id: t for t in self.trajectories}  # compared with when it has run
        self.problems, self._recorded_tools = check_transcripts(fixture_dir, self.recorded)  # each transcript read once
        self._tools = SharedTools()
        self._checked: dict[str, CheckedCassette] = {}  # read before any simulation, kept for its first attempt
        for simulation_id in sorted(self.recorded):  # a tampered cassette is refused by name before any simulation
            with contextlib.suppress(CassetteMiss):  # a missing one is a miss when its simulation asks for it
                cassette = self._read_cassette(simulation_id)
                if isinstance(cassette, CheckedCassette):  # an HTTP cassette holds its requests: read it again
                    self._checked[simulation_id] = cassette

    def cassette(self, simulation_id: str) -> Cassette:
        """The simulation's cassette, as read when the replay started; read again for a retried simulation (which
        starts over from its first call)."""
        checked = self._checked.pop(simulation_id, None)
        return checked if checked is not None else self._read_cassette(simulation_id)

    def _read_cassette(self, simulation_id: str) -> Cassette:
        """The simulation's boundary cassette, or its HTTP cassette when it was recorded so (`--llm-cassettes http`)."""
        path = self.dir / CASSETTES / fixture_file_name(simulation_id)
        if not path.exists() and http_cassette_file(path).exists():
            return HttpCassette(simulation_id, http_cassette_file(path), "replay")
        return CheckedCassette(simulation_id, path, self._tools)

    def _recorded(self, task: Task, trial: int) -> Trajectory:
        from ..orchestrator import simulation_id

        sim = simulation_id(task.id, trial)
        if sim not in self.recorded:
            raise ReplayMismatch(f"the fixture has no recording of {sim}")
        return self.recorded[sim]

    def agent(self, task: Task, trial: int, make_agent: Callable[[], Agent]) -> Agent:
        """An external agent program is not re-run: its recorded messages are played back."""
        agent = make_agent()
        if agent.uses_gateway:
            return RecordedAgent(self._recorded(task, trial))
        return agent

    def episode(self, world: World, task: Task, trial: int, episode_id: str) -> ToolSession:
        recorded = self._recorded(task, trial)
        if self.tools == "transcript":
            return TranscriptEpisode(recorded, episode_id)
        return DriftCheckingEpisode(world.episode(episode_id), recorded)

    def world(self, config: RunConfig):
        return self._transcript_world(config) if self.tools == "transcript" else self._server_world(config)

    @contextlib.asynccontextmanager
    async def _server_world(self, config: RunConfig) -> AsyncIterator[World]:
        from ..world import open_world

        snapshot_dir = resolve_recorded_snapshot(self.dir, config)
        async with open_world(config.domain, servers="inproc", snapshot_dir=snapshot_dir,
                              toolset=config.toolset, dependency_graph=config.dependency_graph,
                              graph_refusal=config.graph_refusal) as world:
            diff = first_difference(self._recorded_tools, world.tools) if self.recorded else None
            if diff is not None:
                raise ReplayMismatch(f"tool drift in tools/list: the server's tools differ from the recording in {diff}")
            yield world

    @contextlib.asynccontextmanager
    async def _transcript_world(self, config: RunConfig) -> AsyncIterator[World]:
        any_recorded = next(iter(self.recorded.values()), None)
        info = any_recorded.servers[config.domain] if any_recorded else ServerInfo(
            name="transcript", version="", snapshot="", snapshot_sha256="")
        yield World(get_domain(config.domain), None, info, self._recorded_tools)  # type: ignore[arg-type]


def resolve_recorded_snapshot(fixture_dir: Path, config: RunConfig) -> Path:
    """The snapshot the fixture was recorded on, checked by sha256 (a different one is drift)."""
    info = read_fixture_info(fixture_dir)
    server = info.servers.get(config.domain)
    candidates = recorded_snapshot_dirs(config.snapshot)
    if server is not None:
        candidates.append(snapshots_root() / server.snapshot)
    for path in candidates:
        if (path / "manifest.json").exists():
            snapshot = Snapshot.load(path)
            if server is not None and snapshot.manifest.sha256 != server.snapshot_sha256:
                raise ReplayMismatch(
                    f"snapshot drift: {path} has sha256 {snapshot.manifest.sha256[:12]}… but the fixture was recorded "
                    f"on {server.snapshot_sha256[:12]}…; rebuild the snapshot or replay with --tools transcript")
            return path
    looked = ", ".join(str(p) for p in candidates)
    raise ReplayMismatch(f"the snapshot the fixture was recorded on ({server.snapshot if server else '?'}) is not "
                         f"here (looked in {looked}); build it with `shiftbox snapshots build "
                         f"{config.domain}` (or set SHIFTBOX_SNAPSHOTS to where it is), or replay with --tools "
                         "transcript")
