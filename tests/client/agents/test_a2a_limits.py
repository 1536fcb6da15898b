"""What an A2A agent sends is bounded (issue 30, Low): an answer over the `cmd:` agent line limit (1 MiB) ends its
simulation as `agent_program_error` naming the limit, read no further than the limit; an agent card nested too deep
refuses the run (exit 2) naming the agent, where it was a raw RecursionError."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from shiftbox.agents import MAX_LINE_BYTES
from shiftbox.agents.a2a_agent import A2AReplyRefused, capped_client
from shiftbox.trajectory import read_trajectories
from tests.client.agents.test_a2a_agent import desk, run_a2a, serving

CARD = "/.well-known/agent-card.json"


class Flood(AgentExecutor):
    """Answers every message with a Message of `size` characters."""

    def __init__(self, size: int):
        self.size = size

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_text_message("x" * self.size, context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def flood_app(size: int, streaming: bool):
    def make(url: str) -> Starlette:
        card = desk.agent_card(url, streaming)
        handler = DefaultRequestHandler(agent_executor=Flood(size), task_store=InMemoryTaskStore(), agent_card=card)
        return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])
    return make


@pytest.mark.parametrize("streaming", [True, False])
def test_an_answer_over_the_line_limit_ends_the_simulation_naming_the_limit(tmp_path, streaming):
    with serving(flood_app(MAX_LINE_BYTES + 1, streaming)) as url:
        res = run_a2a(tmp_path / "r", url, "--task-id", "a2a_banking_001")
    assert res.exit_code == 1, res.output  # the agent did not run as an agent: reported, not scored
    [trajectory] = read_trajectories(tmp_path / "r")
    assert trajectory.termination.reason == "agent_program_error"
    assert f"the A2A agent at {url} sent an answer over {MAX_LINE_BYTES} bytes" in trajectory.termination.detail
    assert not any(len(m.content or "") > MAX_LINE_BYTES for m in trajectory.messages)


def test_an_answer_at_the_limit_is_still_a_reply(tmp_path):
    with serving(flood_app(1000, True)) as url:
        res = run_a2a(tmp_path / "r", url, "--task-id", "a2a_banking_001")
    [trajectory] = read_trajectories(tmp_path / "r")
    assert trajectory.termination.reason != "agent_program_error", trajectory.termination
    assert any(m.role == "assistant" and m.content == "x" * 1000 for m in trajectory.messages), res.output


@pytest.mark.parametrize("length_given", [True, False])
def test_an_endless_answer_is_read_no_further_than_the_limit(length_given):
    """The cap stops the reading: an agent streaming without end is refused after about the limit, whether or not it
    announces the length (`content-length`), never read whole into memory."""
    sent = 0

    async def endless():
        nonlocal sent
        chunk = b"data: " + b"x" * 65530 + b"\n"
        while True:
            sent += len(chunk)
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"} | ({"content-length": str(80 << 20)} if length_given else {})
        return httpx.Response(200, headers=headers, content=endless())

    async def read() -> None:
        async with capped_client("http://agent", transport=httpx.MockTransport(handler)) as http:
            async with http.stream("POST", "http://agent/") as response:
                async for _ in response.aiter_lines():
                    pass

    with pytest.raises(A2AReplyRefused, match=f"the A2A agent at http://agent sent an answer over {MAX_LINE_BYTES} "
                                              "bytes"):
        anyio.run(read)
    assert sent <= MAX_LINE_BYTES + (1 << 17)


def deep_card_app(url: str) -> Starlette:
    """A valid card but for one more field, a list nested 100,000 deep."""
    card = json.dumps(MessageToDict(desk.agent_card(url)))
    body = card[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"

    async def card(request):
        return Response(body, media_type="application/json")
    return Starlette(routes=[Route(CARD, card)])


@pytest.mark.parametrize("preflight", [True, False])
def test_a_deeply_nested_agent_card_is_refused_by_name(tmp_path, preflight):
    with serving(deep_card_app) as url:
        res = run_a2a(tmp_path / "r", url, "--task-id", "a2a_banking_001", *([] if preflight else ["--no-preflight"]))
    said = " ".join(res.output.split())
    assert not isinstance(res.exception, RecursionError), res.exception
    expected = f"the agent card of the A2A agent at {url} nests deeper than"
    if preflight:
        assert res.exit_code == 2, res.output
        assert expected in said and not (tmp_path / "r").exists()
    else:
        [trajectory] = read_trajectories(tmp_path / "r")
        assert trajectory.termination.reason == "agent_program_error" and expected in trajectory.termination.detail
