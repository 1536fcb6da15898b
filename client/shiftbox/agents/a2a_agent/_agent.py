"""`A2AAgent`: the harness as an A2A client; the user's messages go out as A2A messages, the replies come back.

One A2A conversation (`contextId`) per simulation. Each user message is one `send_message` call, run in
the background while the agent works: its tool calls reach the run's recording gateway meanwhile and
become agent turns (`GatewayAgent`), and the call's end gives the turn's reply (`Exchange`). A task left
input-required is continued by the next message (same `taskId`). Nothing listens at the URL, or its card asks
for credentials: the run's preflight refuses the run (`endpoints()`: the card fetched, within
`CARD_TIMEOUT_S`). Mid-run, the agent cannot be reached, asks for credentials, answers outside the protocol or
fails its task: its simulation ends as `agent_program_error` (the agent did not run, not scored); an agent that
rejects its task ends it as `agent_error` (its answer, scored).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from ...errors import InfrastructureError
from ...llm import Endpoint
from ...redact import redact_text
from .._gateway_agent import DEFAULT_TURN_TIMEOUT_S, ExternalAgentError, GatewayAgent
from .._protocol import AgentContext
from ._exchange import Exchange
from ._handover import HANDOVERS, handover, user_message
from ._install import require_a2a
from ._limits import CARD_PATH, capped_client

CONNECT_TIMEOUT_S = 10.0
"""Longest wait to connect, send a request or get a connection from the pool, for every request to the agent."""
CARD_TIMEOUT_S = 10.0
"""Longest wait for the agent card (its reading too: a message's answer may take long, the card must not)."""


class A2AAgent(GatewayAgent):
    """`a2a:URL`: the A2A agent whose card is at `URL/.well-known/agent-card.json`."""

    kind = "A2A agents"

    def __init__(self, url: str, *, turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S, handover: str = "metadata"):
        super().__init__(turn_timeout_s=turn_timeout_s)
        if handover not in HANDOVERS:
            raise ValueError(f"a2a: handover={handover!r} is not known; choose one of: {', '.join(HANDOVERS)} "
                             "(text: the tools' URL and the policy also written in the message text, docs/a2a.md)")
        self.handover = handover
        url = url.strip()
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"a2a: needs the agent's http(s) base URL, e.g. a2a:http://127.0.0.1:9999 (got {url!r})")
        self.url = url.removesuffix(CARD_PATH).rstrip("/")
        self.shown = redact_text(self.url)  # what is recorded and said of it: no user:password or ?token=
        self.name = f"a2a:{self.shown}"
        self._context: AgentContext | None = None
        self._context_id = str(uuid.uuid4())
        self._task_id: str | None = None
        self._seen_artifacts: set[str] = set()
        self._client: Any = None
        self._http: Any = None
        self._exchange: asyncio.Task[None] | None = None

    def preflight(self) -> None:
        """Before a live run: the a2a-sdk is installed (the card is the run preflight's, `endpoints()`)."""
        require_a2a()

    def endpoints(self) -> list[Endpoint]:
        return [AgentCard(self.url, self.shown)]

    # -- transport ------------------------------------------------------------------------------

    async def _open(self, context: AgentContext) -> None:
        self._context = context  # the connection is made with the first message: a failure then is classified

    async def _connect(self) -> None:
        import httpx
        from a2a.client import ClientConfig, ClientFactory
        from a2a.client.errors import AgentCardResolutionError
        from a2a.utils.constants import TransportProtocol

        # every request is bounded: an answer may take as long as a turn, and no silence between its events longer
        # and no answer is read past the limits of `capped_client` (its size, a JSON body's nesting)
        self._http = capped_client(self.shown, timeout=httpx.Timeout(CONNECT_TIMEOUT_S, read=self.turn_timeout_s))
        config = ClientConfig(httpx_client=self._http, supported_protocol_bindings=[
            TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON])
        try:
            self._client = await asyncio.wait_for(ClientFactory(config).create_from_url(self.url), CARD_TIMEOUT_S)
        except TimeoutError:
            await self._disconnect()
            raise ExternalAgentError(f"the A2A agent at {self.shown} did not serve its agent card within "
                                      f"{CARD_TIMEOUT_S:g} s: start it there, or give --agent a2a: the URL it "
                                      "serves") from None
        except ExternalAgentError:  # the card over a limit (`capped_client`)
            await self._disconnect()
            raise
        except AgentCardResolutionError as exc:
            await self._disconnect()
            if exc.status_code in (401, 403):
                raise ExternalAgentError(
                    f"authentication failed for the A2A agent at {self.shown}: its agent card answered HTTP "
                    f"{exc.status_code} ({redact_text(exc.message)}); fix: let shiftbox read the card and send "
                    "messages, or give the credentials it accepts in the URL (a2a:https://USER:PASSWORD@HOST)") from None
            if isinstance(exc.__cause__, httpx.TransportError):
                raise ExternalAgentError(f"no A2A agent answers at {self.shown} ({redact_text(repr(exc.__cause__))}): start the agent "
                                          "there, or give --agent a2a: the URL it serves") from None
            raise ExternalAgentError(f"{self.shown} does not serve an A2A agent card at {CARD_PATH} ({redact_text(exc.message)}); "
                                     "--agent a2a:URL takes the agent's base URL") from None
        except ValueError as exc:  # the card offers no transport this client speaks
            await self._disconnect()
            raise ExternalAgentError(f"the A2A agent at {self.shown} offers no transport shiftbox speaks ({exc}); "
                                     "serve it over JSON-RPC or HTTP+JSON") from None

    async def _disconnect(self) -> None:
        client, http, self._client, self._http = self._client, self._http, None, None
        with contextlib.suppress(Exception):
            if client is not None:
                await client.close()
        if http is not None:
            await http.aclose()

    async def _deliver(self, texts: list[str]) -> None:
        from a2a.types import SendMessageRequest

        context = self._context
        assert context is not None and context.gateway is not None
        first = self._client is None
        if first:
            await self._connect()
        if self._exchange is not None and not self._exchange.done():
            raise ExternalAgentError("a user message came while the A2A agent's previous answer was still under way")
        meta = handover(context.gateway.url, context.domain, context.seed, context.policy if first else None)
        message = user_message(texts, meta, context_id=self._context_id, task_id=self._task_id, first=first,
                               how=self.handover)
        self._exchange = asyncio.get_running_loop().create_task(self._run_exchange(SendMessageRequest(message=message)))

    async def _run_exchange(self, request: Any) -> None:
        """One `send_message` call to its end; what it said and how it ended are pushed as events."""
        exchange = Exchange(self._seen_artifacts)
        try:
            async for response in self._client.send_message(request):
                for said in exchange.absorb(response):
                    self._push(said)
            outcome: Any = exchange.outcome(self.shown)
        except Exception as exc:  # noqa: BLE001 - every failure of the call is reported to the turn waiting for it
            outcome = self._failure(exc)
        self._task_id = exchange.task_id if exchange.waits_for_input else None
        self._push(outcome)

    def _failure(self, exc: Exception) -> Exception:
        import httpx

        if isinstance(exc, ExternalAgentError):  # an answer over a limit (`capped_client`)
            return exc
        if isinstance(exc.__cause__, httpx.ConnectError):
            return ExternalAgentError(f"the A2A agent at {self.shown} cannot be reached ({redact_text(repr(exc.__cause__))})")
        if isinstance(exc.__cause__, httpx.TimeoutException):
            return ExternalAgentError(f"the A2A agent at {self.shown} did not answer within {self.turn_timeout_s:g} s "
                                      f"({type(exc.__cause__).__name__}; set the limit with --agent-arg timeout=SECONDS)")
        return ExternalAgentError(f"the A2A agent at {self.shown} answered outside the protocol: "
                                  f"{type(exc).__name__}: {redact_text(str(exc))}")

    def _from(self) -> str:
        return f" from the A2A agent at {self.shown}"

    async def _shut(self) -> None:
        exchange, self._exchange = self._exchange, None
        if exchange is not None and not exchange.done():
            exchange.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await exchange
        await self._disconnect()


class AgentCard(Endpoint):
    """An A2A agent as the run's preflight checks it: its card fetched (and closed again), within the timeout."""

    def __init__(self, url: str, shown: str):
        self.url, self.shown = url, f"the A2A agent at {shown}"

    @property
    def key(self) -> tuple[str, str]:
        return ("a2a", self.url)

    async def check(self, timeout_s: float) -> None:
        agent = A2AAgent(self.url)
        try:
            await asyncio.wait_for(agent._connect(), timeout_s)
        except TimeoutError:
            raise InfrastructureError(f"{self.shown} did not serve its agent card within {timeout_s:g} s: start it "
                                      "there, or give --agent a2a: the URL it serves") from None
        except ExternalAgentError as exc:
            raise InfrastructureError(str(exc)) from None
        finally:
            await agent._disconnect()
