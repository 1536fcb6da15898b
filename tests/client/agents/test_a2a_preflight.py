"""An A2A agent's card is the run's preflight (issue 29 item 2): a card refused (401/403) is named as an
authentication failure, a card that never comes is bounded, both before any simulation starts (exit 2)."""

from __future__ import annotations

import asyncio
import time

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from shiftbox.agents.a2a_agent import A2AAgent
from shiftbox.llm import check_endpoints
from shiftbox.trajectory import read_trajectories
from tests.client.agents.test_a2a_agent import run_a2a, serving

CARD = "/.well-known/agent-card.json"


def refusing_app(status: int):
    def make(url: str) -> Starlette:
        async def card(request):
            return JSONResponse({"error": "missing bearer token"}, status_code=status)
        return Starlette(routes=[Route(CARD, card)])
    return make


def slow_app(url: str) -> Starlette:
    async def card(request):
        await asyncio.sleep(5)
        return JSONResponse({})
    return Starlette(routes=[Route(CARD, card)])


def test_a_refused_card_refuses_the_run_as_an_authentication_failure(tmp_path):
    for status in (401, 403):
        with serving(refusing_app(status)) as url:
            res = run_a2a(tmp_path / str(status), url)
        said = " ".join(res.output.split())
        assert res.exit_code == 2, res.output
        assert f"authentication failed for the A2A agent at {url}: its agent card answered HTTP {status}" in said
        assert "fix: " in said and "--no-preflight skips it" in said
        assert not (tmp_path / str(status)).exists()


def test_a_card_that_never_comes_is_bounded():
    with serving(slow_app) as url:
        start = time.monotonic()
        problems = check_endpoints(A2AAgent(url).endpoints(), timeout_s=0.5)
        took = time.monotonic() - start
    assert problems == [f"the A2A agent at {url} did not serve its agent card within 0.5 s: start it there, or give "
                        "--agent a2a: the URL it serves"]
    assert took < 2.0


def test_no_preflight_skips_the_card(tmp_path):
    with serving(refusing_app(401)) as url:
        res = run_a2a(tmp_path / "r", url, "--no-preflight", "--task-id", "a2a_banking_001")
    assert "--no-preflight skips it" not in res.output
    (t,) = read_trajectories(tmp_path / "r")                   # the run started; its simulation failed, named
    assert f"authentication failed for the A2A agent at {url}: its agent card answered HTTP 401" in t.termination.detail
