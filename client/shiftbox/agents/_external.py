"""External agents: any program, talking JSON lines on stdin/stdout and calling tools itself over MCP.

The harness starts the program once per simulation with `SHIFTBOX_MCP_URL` pointing at the run's
recording gateway (see `shiftbox.world.RunGateway`). User messages go to its stdin as
`{"role": "user", "content": ...}` lines; it answers with `{"role": "assistant", "content": ...}`
lines on stdout. A line with `"final": false` is narration for the tool calls it is about to make.
Its tool calls reach the gateway, which hands each one to this agent; `respond` returns it to the
orchestrator like any other agent's tool call, so the harness's one recorder executes it, and the
result goes back to the program through `tool_result`. A crash, garbage output or a hang past the
timeout raises `ExternalAgentError`, which ends the simulation (blamed on the agent) and never the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

import anyio
from mcp_types import CallToolResult

from shiftbox_servers.kit import die_with_parent

from ..errors import ShiftboxError
from ..trajectory import Message, ToolCall, ToolCallRecord
from ._protocol import Agent, AgentContext, AgentReply

DEFAULT_TURN_TIMEOUT_S = 120.0
MAX_LINE_BYTES = 1 << 20
ENV_MCP_URL, ENV_DOMAIN, ENV_SEED = "SHIFTBOX_MCP_URL", "SHIFTBOX_DOMAIN", "SHIFTBOX_SEED"


class ExternalAgentError(ShiftboxError):
    """The agent program broke the protocol: it exited, wrote garbage or did not answer in time."""


@dataclass
class _Call:
    """A tool call the program sent to the gateway, waiting for its result."""

    name: str
    arguments: dict[str, Any]
    answered: anyio.Event
    result: CallToolResult | None = None


_EOF = object()
"""Queued when the program closes its stdout."""
_Event = dict[str, Any] | _Call | ExternalAgentError | object


class ExternalAgent(Agent):
    """`cmd:"<command>"`: one process per simulation (see the module docstring for the protocol)."""

    uses_gateway = True

    def __init__(self, command: str, *, turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S):
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError('cmd: needs a command, e.g. cmd:"python my_agent.py"')
        self.name = f"cmd:{command}"
        self.turn_timeout_s = turn_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._buffer = b""
        self._events: list[_Event] = []
        self._eof = False
        self._wakeup = anyio.Event()
        self._pending: dict[str, _Call] = {}
        self._sent = 0
        self._calls = 0
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------------

    def preflight(self) -> None:
        """Before a live run: the program must exist (a missing one would fail every simulation). Not
        called in replay, where the program is not run."""
        program = self.argv[0]
        if shutil.which(program) is None:
            where = "is not an executable file" if os.sep in program else "is not on PATH"
            raise ValueError(f"cmd: program {program!r} {where}; check the command of --agent cmd:\"…\"")

    async def start(self, context: AgentContext) -> None:
        if context.gateway is None:
            raise ExternalAgentError("external agents need the run's recording gateway (none was started)")
        context.gateway.attach(self._tool_call)
        env = dict(os.environ, **{ENV_MCP_URL: context.gateway.url, ENV_DOMAIN: context.domain,
                                  ENV_SEED: str(context.seed)})
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in close()
        try:
            self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env, start_new_session=True,
                                          preexec_fn=die_with_parent())  # dies with the run, even on kill -9
        except OSError as exc:
            raise ExternalAgentError(f"cannot start {self.argv[0]!r}: {exc}") from exc
        assert self._proc.stdout is not None
        os.set_blocking(self._proc.stdout.fileno(), False)

    async def close(self) -> None:
        """End the program: EOF on stdin, a moment to exit, then SIGKILL to its whole process group."""
        self._closed = True
        queued = [e for e in self._events if isinstance(e, _Call)]  # sent but never handed to the harness
        for call in [*self._pending.values(), *queued]:
            call.answered.set()
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin:
                proc.stdin.close()
        with anyio.move_on_after(2):
            while proc.poll() is None:
                await anyio.sleep(0.02)
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            await anyio.to_thread.run_sync(proc.wait)
        if proc.stdout:
            proc.stdout.close()
        if self._stderr:
            self._stderr.close()

    # -- the turn -----------------------------------------------------------------------------

    async def respond(self, messages: list[Message]) -> AgentReply:
        await self._send_new_user_messages(messages)
        narration: list[str] = []
        with anyio.move_on_after(self.turn_timeout_s) as scope:
            while True:
                event = await self._next_event()
                if event is _EOF:
                    raise await self._ended_error()
                if isinstance(event, ExternalAgentError):
                    raise event
                if isinstance(event, _Call):
                    call_id = f"ext_{self._calls}"
                    self._calls += 1
                    self._pending[call_id] = event
                    content = "\n".join(narration) or None
                    return AgentReply(content=content, tool_calls=[ToolCall(id=call_id, name=event.name,
                                                                            arguments=event.arguments)])
                if event.get("final", True) is False:
                    narration.append(event["content"])
                    continue
                return AgentReply(content="\n".join([*narration, event["content"]]))
        assert scope.cancelled_caught
        raise ExternalAgentError(f"no reply within {self.turn_timeout_s:g} s (agent timeout; set it with "
                                 "--agent-arg timeout=SECONDS)" + self._stderr_tail())

    async def tool_result(self, call: ToolCall, record: ToolCallRecord) -> None:
        """The harness executed `call`: hand the server's result back to the waiting MCP request."""
        from ..world import client_result

        pending = self._pending.pop(call.id, None)
        if pending is not None:
            pending.result = client_result(record)
            pending.answered.set()

    async def _tool_call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Gateway route: queue the call behind any output the program wrote before sending it."""
        if self._closed:
            return _ended_result()
        self._drain_stdout()  # the program flushed its narration before calling: keep that order
        call = _Call(name, arguments, anyio.Event())
        self._push(call)
        await call.answered.wait()
        return call.result or _ended_result()

    # -- stdin / stdout -----------------------------------------------------------------------

    async def _send_new_user_messages(self, messages: list[Message]) -> None:
        lines = [json.dumps({"role": "user", "content": m.content or ""}) + "\n"
                 for m in messages[self._sent:] if m.role == "user"]
        self._sent = len(messages)
        if not lines:
            return
        data = "".join(lines).encode()
        proc = self._proc
        assert proc is not None and proc.stdin is not None

        def write() -> None:
            proc.stdin.write(data)
            proc.stdin.flush()

        try:
            await anyio.to_thread.run_sync(write)
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ExternalAgentError(f"the agent process no longer reads its input ({type(exc).__name__}); "
                                     f"{self._exit_status()}" + self._stderr_tail()) from exc

    async def _next_event(self) -> _Event:
        while not self._events:
            self._wakeup = anyio.Event()
            async with anyio.create_task_group() as tg:
                async def wait_stdout() -> None:
                    if self._eof:
                        return
                    await anyio.wait_readable(self._proc.stdout.fileno())
                    self._drain_stdout()
                    tg.cancel_scope.cancel()

                async def wait_gateway() -> None:
                    await self._wakeup.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(wait_stdout)
                tg.start_soon(wait_gateway)
        return self._events.pop(0)

    def _push(self, event: _Event) -> None:
        self._events.append(event)
        self._wakeup.set()

    def _drain_stdout(self) -> None:
        """Queue every complete line the program has written so far (never blocks); errors are queued too."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        while not self._eof:
            try:
                chunk = os.read(proc.stdout.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                self._eof = True
            self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._push(self._parse(line))
        if len(self._buffer) > MAX_LINE_BYTES:
            self._buffer = b""
            self._push(ExternalAgentError(f"the agent wrote over {MAX_LINE_BYTES} bytes without a newline"))
        if self._eof and not self._closed:
            self._closed = True
            self._push(_EOF)

    @staticmethod
    def _parse(line: bytes) -> dict[str, Any] | ExternalAgentError:
        shown = line[:200].decode(errors="replace")
        try:
            event = json.loads(line)
        except ValueError:
            return ExternalAgentError(f"the agent wrote a line that is not JSON: {shown!r} (stdout is for "
                                      "protocol lines only; log to stderr)")
        if not (isinstance(event, dict) and event.get("role") == "assistant"
                and isinstance(event.get("content"), str) and event.get("final", True) in (True, False)):
            return ExternalAgentError('the agent wrote a line that is not {"role": "assistant", "content": '
                                      f'"<text>"[, "final": false]}}: {shown!r}')
        return event

    async def _ended_error(self) -> ExternalAgentError:
        """The program closed its stdout: give it a moment to exit so its exit code can be reported."""
        with anyio.move_on_after(2):
            while self._proc is not None and self._proc.poll() is None:
                await anyio.sleep(0.01)
        return ExternalAgentError(f"the agent process ended mid-conversation ({self._exit_status()})"
                                  + self._stderr_tail())

    def _exit_status(self) -> str:
        code = self._proc.poll() if self._proc else None
        return "still running" if code is None else f"exit code {code}"

    def _stderr_tail(self) -> str:
        if not self._stderr:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - 800))
        tail = self._stderr.read().decode(errors="replace").strip()
        return f"; stderr ends: {tail}" if tail else ""


def _ended_result() -> CallToolResult:
    from shiftbox_servers.kit import ErrorKind, error_result

    return error_result(ErrorKind.PRECONDITION_FAILED, "the simulation has ended; no tool call was made")

