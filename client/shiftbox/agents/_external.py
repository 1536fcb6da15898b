"""External agents: any program, talking JSON lines on stdin/stdout and calling tools itself over MCP.

The harness starts the program once per simulation with `SHIFTBOX_MCP_URL` pointing at the run's
recording gateway (see `shiftbox.world.RunGateway`), in its own PID namespace where the platform allows
(`_sandbox`): the URL's token is then readable by that program and its children only. User messages go to its stdin as
`{"role": "user", "content": ...}` lines; it answers with `{"role": "assistant", "content": ...}`
lines on stdout. A line with `"final": false` is narration for the tool calls it is about to make.
Its tool calls reach the gateway and are turned into agent turns by `GatewayAgent`. A program that
cannot start, exits, crashes, writes a line outside the protocol or hangs past the timeout raises
`ExternalAgentError`: the program did not run, so the simulation ends as `agent_program_error` (not
scored, with the tail of its stderr), never the run.
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
import warnings
from typing import Any

import anyio

from shiftbox_servers.kit import die_with_parent, loads_json

from ..redact import redact_text
from ._gateway_agent import DEFAULT_TURN_TIMEOUT_S, ExternalAgentError, GatewayAgent, _Event
from ._protocol import AgentContext
from ._sandbox import sandbox_prefix, sandbox_status

__all__ = ["DEFAULT_TURN_TIMEOUT_S", "ExternalAgent", "ExternalAgentError"]

MAX_LINE_BYTES = 1 << 20
ENV_MCP_URL, ENV_DOMAIN, ENV_SEED = "SHIFTBOX_MCP_URL", "SHIFTBOX_DOMAIN", "SHIFTBOX_SEED"

_EOF = object()
"""Queued when the program closes its stdout."""

STDERR_TAIL_BYTES = 800
"""How much of an agent program's stderr a failure's detail keeps (its end)."""


class ExternalAgent(GatewayAgent):
    """`cmd:"<command>"`: one process per simulation (see the module docstring for the protocol)."""

    def __init__(self, command: str, *, turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S):
        super().__init__(turn_timeout_s=turn_timeout_s)
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError('cmd: needs a command, e.g. cmd:"python my_agent.py"')
        self.name = f"cmd:{redact_text(command)}"  # recorded in every trajectory: no `--api-key sk-…`
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._buffer = b""
        self._eof = False

    # -- lifecycle ----------------------------------------------------------------------------

    def preflight(self) -> None:
        """Before a live run: the program must exist (a missing one would fail every simulation). Not
        called in replay, where the program is not run."""
        program = self.argv[0]
        if shutil.which(program) is None:
            where = "is not an executable file" if os.sep in program else "is not on PATH"
            raise ValueError(f"cmd: program {program!r} {where}; check the command of --agent cmd:\"…\"")
        if sandbox_prefix() is None:
            warnings.warn(sandbox_status(), stacklevel=2)

    async def _open(self, context: AgentContext) -> None:
        env = dict(os.environ, **{ENV_MCP_URL: context.gateway.url, ENV_DOMAIN: context.domain,
                                  ENV_SEED: str(context.seed)})
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in _shut()
        try:
            self._proc = subprocess.Popen([*(sandbox_prefix() or ()), *self.argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env, start_new_session=True,
                                          preexec_fn=die_with_parent())  # dies with the run, even on kill -9
        except OSError as exc:
            raise ExternalAgentError(f"cannot start {self.argv[0]!r}: {exc}") from exc
        assert self._proc.stdout is not None
        os.set_blocking(self._proc.stdout.fileno(), False)

    async def _shut(self) -> None:
        """End the program: EOF on stdin, a moment to exit, then SIGKILL to its whole process group."""
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

    # -- stdin / stdout -----------------------------------------------------------------------

    async def _deliver(self, texts: list[str]) -> None:
        data = "".join(json.dumps({"role": "user", "content": text}) + "\n" for text in texts).encode()
        proc = self._proc
        assert proc is not None and proc.stdin is not None

        def write() -> None:
            proc.stdin.write(data)
            proc.stdin.flush()

        try:
            await anyio.to_thread.run_sync(write)
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ExternalAgentError(f"the agent process no longer reads its input ({type(exc).__name__}); "
                                     f"{self._exit_status()}" + self._diagnostics()) from exc

    async def _next_event(self) -> _Event:
        """The next line or tool call, whichever comes first; the program closing its stdout is an error."""
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
        event = self._events.pop(0)
        return await self._ended_error() if event is _EOF else event

    def _before_call(self) -> None:
        self._drain_stdout()  # the program flushed its narration before calling: keep that order

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
            event = loads_json(line, "an agent line", finite=False)
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
                                  + self._diagnostics())

    def _exit_status(self) -> str:
        code = self._proc.poll() if self._proc else None
        return "still running" if code is None else f"exit code {code}"

    def _diagnostics(self) -> str:
        """The program's last stderr line with words (a traceback's is the error itself), then its stderr's tail from a line
        start on: the detail's first line says what went wrong, the lines after it show where."""
        if not self._stderr:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL_BYTES))
        text = self._stderr.read().decode(errors="replace")
        if size > STDERR_TAIL_BYTES and "\n" in text:  # started mid-line: keep whole lines only
            text = text.split("\n", 1)[1]
        lines = [line for line in text.strip().splitlines() if line.strip()]
        if not lines:
            return ""
        said = [line.strip(" |+-") for line in lines if any(c.isalpha() for c in line)]  # not a box's border
        last = said[-1] if said else lines[-1].strip()
        return f"; stderr's last line: {last}\nstderr ends:\n" + "\n".join(lines)
