"""Sessions of a standalone gateway (`shiftbox serve`): any MCP client, each episode a scored trajectory.

Every episode a client opens on the gateway gets a fresh database (the task's initial state applied
first, when a task is given) and a session number unique in the run directory: one more than any
session already there, whichever process made it, so any number of `shiftbox serve` processes (one
per desktop-client launch) share one directory. `calls.jsonl` gets a line when a session opens and one
per call as it happens, each fsynced; when the session ends (MCP session close, `DELETE
/episodes/<id>`, end of stdio, a signal, shutdown) its trajectory is appended to `trajectories.jsonl`,
which `shiftbox metrics` scores like any run. A session cut short by a crash (kill -9) is rebuilt from
`calls.jsonl` by the next `shiftbox serve` on the directory.

A line that cannot be written (a full disk) leaves nothing behind (`append_line`), and nothing happens that is not
recorded: a call whose line could not be written is undone (its episode is replaced by a fresh one into which the
recorded calls are made again: the same calls in the same order give the same state) and refused with the JSON-RPC
error `NOT_RECORDED`; a trajectory that could not be written is kept and written at the next chance (the next
session end, shutdown), else rebuilt from `calls.jsonl` by the next launch.

Processes coordinate through `.serve/` in the run directory: `lock` (flock, held while numbering a
session or appending) and `owners/<token>` (flock held for the life of each process, so a session whose
owner holds no lock any more was cut short).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from shiftbox_servers.kit import ErrorKind, error_result, loads_json

from .._jsonl import append_line
from ..errors import InfrastructureError, RecordWriteError
from ..tasks import Task
from ..trajectory import (
    TRAJECTORIES_FILE,
    Message,
    RunFileError,
    Termination,
    ToolCall,
    ToolCallRecord,
    Trajectory,
    read_trajectories,
)
from ..world import (
    CallRoute,
    EpisodeClient,
    McpClientInfo,
    World,
    apply_initial_state,
    client_result,
    episode_id_for,
    tool_message_content,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: one serve process per directory
    fcntl = None  # type: ignore[assignment]

CALLS_FILE = "calls.jsonl"
SERVE_DIR = ".serve"
ENDED_NAMES_KEPT = 10_000
"""Names of ended sessions remembered, so a call under one is refused instead of opening a new session."""
GATEWAY_AGENT, GATEWAY_USER = "mcp-client", "none"
NOT_RECORDED = -32050
"""JSON-RPC error code (implementation-defined server error) of a tool call the gateway could not record and so
did not make (a full disk): the message names the file and the cause; calling again once there is room is safe."""
CUT_SHORT = ("cut short: the gateway stopped before the session ended (crash or kill -9); rebuilt from "
             f"{CALLS_FILE}, final state unknown")
_TOKEN = re.compile(r"^[0-9]+-[0-9a-f]{8}$")


def _flock(f: IO[bytes], flags: int) -> None:
    if fcntl is not None:
        fcntl.flock(f.fileno(), flags)


@contextlib.contextmanager
def run_dir_lock(out: Path) -> Iterator[None]:
    """Hold the run directory's serve lock (other `shiftbox serve` processes wait)."""
    (out / SERVE_DIR).mkdir(parents=True, exist_ok=True)
    with (out / SERVE_DIR / "lock").open("a+b") as f:
        _flock(f, fcntl.LOCK_EX if fcntl else 0)
        yield


def _repair_tail(f: IO[bytes]) -> None:
    """Cut a torn last line (a writer killed mid-line) so the next line starts on its own."""
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return
    f.seek(size - 1)
    if f.read(1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - 65536)
        f.seek(start)
        cut = f.read(end - start).rfind(b"\n")
        if cut >= 0:
            f.truncate(start + cut + 1)
            return
        end = start
    f.truncate(0)


def session_messages(calls: list[ToolCallRecord]) -> list[Message]:
    """The messages of a gateway session: each call an agent turn (assistant message, then its result)."""
    messages: list[Message] = []
    for turn, record in enumerate(calls):
        call = ToolCall(id=record.call_id, name=record.name, arguments=record.arguments)
        messages.append(Message(index=len(messages), role="assistant", tool_calls=[call], agent_turn=turn))
        messages.append(Message(index=len(messages), role="tool", content=tool_message_content(record),
                                tool_call_id=call.id, is_error=record.is_error))
    return messages


class SessionLog:
    """One process's view of a gateway run directory: session numbers, calls.jsonl, trajectories.jsonl."""

    def __init__(self, out: Path):
        self.out = out
        owners = out / SERVE_DIR / "owners"
        owners.mkdir(parents=True, exist_ok=True)
        self.token = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._owner_path = owners / self.token
        self._owner = self._owner_path.open("wb")
        _flock(self._owner, fcntl.LOCK_EX if fcntl else 0)  # held until close(): this process is alive
        self._lock = (out / SERVE_DIR / "lock").open("a+b")
        self._calls = (out / CALLS_FILE).open("a+b")
        self._trajectories_path = out / TRAJECTORIES_FILE
        self._trajectories = self._trajectories_path.open("a+b")
        self._offset, self._lines, self._highest = 0, 0, -1

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        _flock(self._lock, fcntl.LOCK_EX if fcntl else 0)
        try:
            yield
        finally:
            _flock(self._lock, fcntl.LOCK_UN if fcntl else 0)

    def _append(self, f: IO[bytes], line: dict[str, Any] | str) -> None:
        """Append one line and fsync it, or raise RecordWriteError leaving none of it (caller holds the lock)."""
        _repair_tail(f)
        f.flush()
        text = line if isinstance(line, str) else json.dumps(line, sort_keys=True)
        append_line(f.fileno(), text.encode() + b"\n", Path(f.name))

    def _scan(self) -> list[tuple[int, dict[str, Any]]]:
        """calls.jsonl lines written since the last scan (by any process), with their line numbers."""
        self._calls.seek(self._offset)
        data = self._calls.read()
        data = data[: data.rfind(b"\n") + 1]
        self._offset += len(data)
        entries = []
        for text in data.splitlines():
            self._lines += 1
            if not text.strip():
                continue
            try:
                entry = loads_json(text, self.out / CALLS_FILE, finite=False)
                number = int(entry["session"])
            except (ValueError, KeyError, TypeError):
                raise RunFileError(f"{self.out / CALLS_FILE} line {self._lines}: not a session log line "
                                   "(JSON with \"session\"); remove or restore that line") from None
            self._highest = max(self._highest, number)
            entries.append((self._lines, entry))
        return entries

    def recover(self, rebuild: Any) -> int:
        """Rebuild (with `rebuild(number, episode_id, setup_records, records, client)`) the trajectory of
        every session cut short: opened in calls.jsonl, no trajectory, its process gone. Returns how many."""
        with self._locked():
            _repair_tail(self._calls)
            entries = self._scan()
            written = read_trajectories(self.out)
            self._highest = max([self._highest, *(t.trial for t in written)])
            done = {t.simulation_id for t in written}
            opened: dict[int, dict[str, Any]] = {}
            calls: dict[int, list[dict[str, Any]]] = {}
            for _, entry in entries:
                number = int(entry["session"])
                if "opened" in entry:
                    opened[number] = entry
                    calls[number] = []
                elif "record" in entry and number in calls:
                    calls[number].append(entry)
            alive = {token: self._alive(token) for token in {e.get("owner", "") for e in opened.values()}}
            rebuilt = 0
            for number, entry in sorted(opened.items()):
                if f"{entry.get('task')}#{number}" in done or alive.get(entry.get("owner", "")):
                    continue
                setup = [ToolCallRecord.model_validate(c["record"]) for c in calls[number] if c.get("setup")]
                made = [ToolCallRecord.model_validate(c["record"]) for c in calls[number] if not c.get("setup")]
                client = entry.get("client")
                trajectory = rebuild(number, str(entry["opened"]), setup, made,
                                     McpClientInfo(**client) if isinstance(client, dict) else None)
                if trajectory is not None:
                    self._append(self._trajectories, trajectory.model_dump_json())
                    rebuilt += 1
            for token, is_alive in alive.items():
                if not is_alive and _TOKEN.match(token):
                    with contextlib.suppress(OSError):
                        (self.out / SERVE_DIR / "owners" / token).unlink()
        return rebuilt

    def _alive(self, token: str) -> bool:
        if token == self.token:
            return True
        if fcntl is None or not _TOKEN.match(token):
            return False
        try:
            with (self.out / SERVE_DIR / "owners" / token).open("rb") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True  # its process holds the lock: alive
        except OSError:
            return False
        return False

    def open_session(self, episode_id: str, task_id: str, client: McpClientInfo | None = None) -> int:
        """A new session number, one more than any session in the directory (every process's)."""
        with self._locked():
            self._scan()
            number = self._highest + 1
            opened = {"session": number, "opened": episode_id, "task": task_id, "owner": self.token}
            if client is not None:
                opened["client"] = {"name": client.name, "version": client.version}
            self._append(self._calls, opened)
            self._scan()  # past our own line
        return number

    def record(self, number: int, episode_id: str, record: ToolCallRecord, *, setup: bool) -> None:
        with self._locked():
            self._append(self._calls, {"session": number, "episode": episode_id, "setup": setup,
                                       "record": record.model_dump(mode="json")})

    def append_trajectory(self, trajectory: Trajectory) -> None:
        with self._locked():
            self._append(self._trajectories, trajectory.model_dump_json())

    def close(self) -> None:
        for f in (self._calls, self._trajectories, self._lock):
            f.close()
        with contextlib.suppress(OSError):
            self._owner_path.unlink()
        self._owner.close()


def call_line(client: McpClientInfo | None, session: str, record: ToolCallRecord) -> str:
    """One tool call through `shiftbox serve`, for its terminal: client, session, tool, ok or the error's kind."""
    who = f"{client.name} {client.version}".strip() if client else "unnamed client"
    outcome = f"error {record.error_kind or 'unknown'}" if record.is_error else "ok"
    return f"call {who} · {session} · {record.name} · {outcome}"


@dataclass
class GatewaySession:
    """One client episode: the calls it made."""

    number: int
    episode_id: str
    episode: EpisodeClient
    client: McpClientInfo | None = None
    calls: list[ToolCallRecord] = field(default_factory=list)
    setup_calls: list[ToolCallRecord] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    undone: int = 0
    """Calls undone because they could not be recorded (each gave the session a fresh episode)."""


class GatewaySessions:
    """Routes each gateway episode to its session, recording every call; writes trajectories as sessions end.
    Each call is also told to `log` in one line (`call_line`), for the person running the gateway."""

    def __init__(self, world: World, task: Task, out: Path, log: Callable[[str], None] | None = None):
        self.world, self.task, self.out, self._log = world, task, out, log
        self.log = SessionLog(out)
        self._sessions: dict[str, GatewaySession] = {}
        self._clients: dict[str, set[str]] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._unwritten: list[Trajectory] = []
        """Trajectories of ended sessions that could not be written yet (a full disk), oldest first."""
        self._closed = False

    def recover(self) -> int:
        """Write the trajectories of sessions a crashed gateway left open (from calls.jsonl); how many."""
        def rebuild(number: int, episode_id: str, setup: list[ToolCallRecord], calls: list[ToolCallRecord],
                    client: McpClientInfo | None) -> Trajectory:
            return self._trajectory(number, episode_id, setup, calls,
                                    Termination(reason="session_closed", detail=CUT_SHORT), {}, client,
                                    {"rebuilt_from": CALLS_FILE})

        return self.log.recover(rebuild)

    def route(self, episode_id: str, client: McpClientInfo | None = None) -> CallRoute:
        """The route of the episode's calls; a session opened by them records `client` (the one that opened it)."""
        async def call(name: str, arguments: dict[str, Any]) -> CallToolResult:
            if episode_id in self._ended:  # never reopened empty under the same name
                return error_result(ErrorKind.NOT_FOUND, f"session {episode_id!r} has ended (its trajectory is "
                                    "written); connect under a new name for a new session")
            try:
                session = await self._session(episode_id, client)
                async with session.lock:  # one call at a time per episode: the recorded order is the real one
                    return await self._call(session, name, arguments)
            except RecordWriteError as exc:
                raise MCPError(NOT_RECORDED, f"the call was not recorded, so it was not made: {exc}, then call "
                                             "again", {"kind": "not_recorded"}) from None

        return call

    async def _session(self, episode_id: str, client: McpClientInfo | None) -> GatewaySession:
        session = self._sessions.get(episode_id)
        if session is None:
            if self._closed:
                raise InfrastructureError("the gateway is shutting down")
            number = self.log.open_session(episode_id, self.task.id, client)
            session = GatewaySession(number, episode_id, self.world.episode(f"gw{number}-{episode_id}"), client)
            self._sessions[episode_id] = session
            async with session.lock:
                try:
                    await apply_initial_state(session.episode, self.task.initial_state.tool_calls,
                                              session.setup_calls)
                except InfrastructureError as exc:  # never serve a session from the wrong state; the next call
                    self._sessions.pop(episode_id, None)  # starts anew; this one is written as what it was
                    self._log_setup(session)
                    self.append_trajectory(self._trajectory(
                        number, episode_id, session.setup_calls, [],
                        Termination(reason="infrastructure_error", detail=str(exc), blame="infrastructure"), {},
                        client))
                    raise
                try:
                    self._log_setup(session)
                except RecordWriteError:  # its setup is undone with its episode; the next call starts anew
                    self._sessions.pop(episode_id, None)
                    with contextlib.suppress(InfrastructureError):
                        await session.episode.close()
                    raise
        return session

    def _log_setup(self, session: GatewaySession) -> None:
        for record in session.setup_calls:
            self.log.record(session.number, session.episode_id, record, setup=True)

    async def _call(self, session: GatewaySession, name: str, arguments: dict[str, Any]) -> CallToolResult:
        turn = len(session.calls)
        record = await session.episode.call(name, arguments, call_id=f"call_{turn}", message_index=2 * turn,
                                            agent_turn=turn)
        try:
            self.log.record(session.number, session.episode_id, record, setup=False)
        except RecordWriteError:
            await self._undo_unrecorded(session)
            raise
        session.calls.append(record)
        if self._log is not None:
            self._log(call_line(session.client, f"{self.task.id}#{session.number}", record))
        return client_result(record)

    async def _undo_unrecorded(self, session: GatewaySession) -> None:
        """Undo a call that was made but could not be recorded: the episode is replaced by a fresh one into which
        the recorded calls are made again (episodes are deterministic: the same calls in the same order give the
        same results and state). Results that differ are an InfrastructureError."""
        with contextlib.suppress(InfrastructureError):
            await session.episode.close()
        session.undone += 1
        session.episode = self.world.episode(episode_id_for(f"gw{session.number}-{session.episode_id}",
                                                            f"undo{session.undone}"))
        for record in [*session.setup_calls, *session.calls]:
            again = await session.episode.call(record.name, record.arguments, call_id=record.call_id,
                                               message_index=record.message_index, agent_turn=record.agent_turn)
            if (again.result, again.is_error) != (record.result, record.is_error):
                raise InfrastructureError(
                    f"could not undo a call that was not recorded: remaking {record.call_id} ({record.name}) in a "
                    f"fresh episode gave another result; session {session.episode_id!r} cannot go on")

    def _trajectory(self, number: int, episode_id: str, setup: list[ToolCallRecord], calls: list[ToolCallRecord],
                    termination: Termination, final_state: dict[str, str], client: McpClientInfo | None,
                    source_data: dict[str, Any] | None = None) -> Trajectory:
        source = {"gateway_episode": episode_id, **(source_data or {})}
        if client is not None:
            source["client"] = {"name": client.name, "version": client.version}
        return Trajectory(
            simulation_id=f"{self.task.id}#{number}", task_id=self.task.id, trial=number,
            domain=self.world.domain.name, seed=0, agent=client.agent if client else GATEWAY_AGENT, user=GATEWAY_USER,
            persona=self.task.user_scenario.persona, goals=self.task.goals,
            servers={self.world.domain.name: self.world.info}, messages=session_messages(calls),
            tool_calls=calls, setup_calls=setup, shifts=[], termination=termination, final_state=final_state,
            source_data=source,
        )

    def client_seen(self, episode_id: str, client_session: str) -> None:
        """An MCP session (`Mcp-Session-Id`) sent a request to this episode."""
        self._clients.setdefault(episode_id, set()).add(client_session)

    async def client_left(self, episode_id: str, client_session: str) -> bool:
        """An MCP session closed (HTTP DELETE): the episode's session ends when its last client has left."""
        clients = self._clients.get(episode_id)
        if clients is None or client_session not in clients:
            return False
        clients.discard(client_session)
        if clients:
            return False
        del self._clients[episode_id]
        return await self.end(episode_id)

    async def end(self, episode_id: str, *, dropped: bool = False) -> bool:
        """Close one session: its final state is read, its trajectory appended. False if it was not open.

        `dropped` (DELETE /episodes/<name>): the name is remembered and a later call under it is refused,
        never silently reopened empty. A session its clients closed (MCP session close, end of stdio,
        shutdown) leaves the name free: the next client to connect under it starts a new session."""
        session = self._sessions.pop(episode_id, None)
        self._clients.pop(episode_id, None)
        if session is None:
            return False
        if dropped:
            self._ended[episode_id] = None
            while len(self._ended) > ENDED_NAMES_KEPT:
                self._ended.popitem(last=False)
        async with session.lock:
            termination = Termination(reason="session_closed", detail=f"gateway episode {episode_id}")
            final_state: dict[str, str] = {}
            try:
                final_state[self.world.domain.name] = await session.episode.close()
            except InfrastructureError as exc:
                termination = Termination(reason="infrastructure_error", detail=str(exc), blame="infrastructure")
            try:
                self.append_trajectory(self._trajectory(session.number, episode_id, session.setup_calls,
                                                        session.calls, termination, final_state, session.client))
            except RecordWriteError as exc:
                raise RecordWriteError(f"session {episode_id!r} ended, but its trajectory is not written yet: {exc}; "
                                       "it is written at the next session end or at shutdown once there is room "
                                       f"(its calls are in {CALLS_FILE})") from exc
        return True

    def append_trajectory(self, trajectory: Trajectory) -> None:
        """Append a trajectory, after those that could not be written before (in the order they ended); one that
        cannot be written now is kept for the next chance, and the RecordWriteError raised."""
        self._unwritten.append(trajectory)
        self._write_unwritten()

    def _write_unwritten(self) -> None:
        while self._unwritten:
            self.log.append_trajectory(self._unwritten[0])
            self._unwritten.pop(0)

    async def end_all(self) -> int:
        """End every open session (shutdown); idempotent. Trajectories that still cannot be written (a full disk)
        are a RecordWriteError once every session is ended: the next launch rebuilds them from calls.jsonl."""
        ids = sorted(self._sessions, key=lambda e: self._sessions[e].number)
        for episode_id in ids:
            with contextlib.suppress(RecordWriteError):  # kept in _unwritten
                await self.end(episode_id)
        cause = None
        if not self._closed:
            try:
                self._write_unwritten()
            except RecordWriteError as exc:
                cause = exc
            self._closed = True
            self.log.close()
        if cause is not None:
            raise RecordWriteError(f"{len(self._unwritten)} ended sessions are not written ({cause}); their calls "
                                   f"are in {self.out / CALLS_FILE}: the next `shiftbox serve --out {self.out}` rebuilds "
                                   "them (final state unknown)")
        return len(ids)
