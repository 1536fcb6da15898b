"""Dependency-graph mode (VitaBench): a tool refuses to run until the tools it depends on have succeeded earlier
in the episode; off by default. Over a real MCP client on the hand-written snapshots."""

from __future__ import annotations

import pytest
from mcp import Client

from shiftbox_servers.kit import (
    DEPENDENCY_GRAPH_MARK,
    DomainServer,
    dependency_graph,
    get_domain,
    is_graph_refusal,
    registered_domains,
)
from shiftbox_servers.kit._graph import MISSING_STEPS_KEY
from tests.servers.helpers import digest, fails, ok

pytestmark = pytest.mark.anyio

EMAIL = {"email": "ana@example.com"}
ORDER = {"order_id": "#W1000001"}
REQUEST = {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1", "amount": 65.5}


@pytest.fixture
async def graph_shop(snapshot_of):
    async with Client(DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True).mcp) as client:
        yield client


@pytest.fixture
async def graph_bank(snapshot_of):
    async with Client(DomainServer(get_domain("banking"), snapshot_of("banking"), dependency_graph=True).mcp) as client:
        yield client


async def test_an_out_of_order_call_is_refused_naming_the_missing_step_and_what_to_call_first(graph_shop):
    before = await digest(graph_shop, "e1")
    error = await fails(graph_shop, "get_order_details", ORDER, "precondition_failed", episode="e1")
    assert error["message"] == (
        "get_order_details cannot run yet (dependency-graph mode): one of find_user_id_by_email or "
        "find_user_id_by_name_zip must have succeeded earlier in this episode. Call one of find_user_id_by_email "
        "or find_user_id_by_name_zip first, then get_order_details")
    assert error[MISSING_STEPS_KEY] == [["find_user_id_by_email", "find_user_id_by_name_zip"]]
    assert is_graph_refusal({"error": error})
    assert await digest(graph_shop, "e1") == before


async def test_the_right_order_is_accepted(graph_shop):
    await ok(graph_shop, "find_user_id_by_email", EMAIL, episode="e2")
    order = await ok(graph_shop, "get_order_details", ORDER, episode="e2")
    assert order["order_id"] == "#W1000001"


async def test_a_failed_prerequisite_satisfies_nothing_and_episodes_do_not_share_what_succeeded(graph_shop):
    await fails(graph_shop, "find_user_id_by_email", {"email": "nobody@example.com"}, "not_found", episode="e3")
    await fails(graph_shop, "get_order_details", ORDER, "precondition_failed", episode="e3")
    await ok(graph_shop, "find_user_id_by_email", EMAIL, episode="e4")
    await fails(graph_shop, "get_order_details", ORDER, "precondition_failed", episode="e5")


async def test_the_mode_is_off_by_default(snapshot_of):
    retail_server = DomainServer(get_domain("retail"), snapshot_of("retail"))
    assert retail_server.graph is None
    async with Client(retail_server.mcp) as shop:
        await ok(shop, "get_order_details", ORDER, episode="e6")
    assert DEPENDENCY_GRAPH_MARK not in (retail_server.mcp.description or "")


async def test_banking_refuses_an_authorization_before_a_request_was_created_or_checked(graph_bank):
    error = await fails(graph_bank, "authorize_payment_request", {"request_id": "req_b1"}, "precondition_failed",
                        episode="b1")
    assert "one of create_payment_request or check_payment_request must have succeeded" in error["message"]
    created = await ok(graph_bank, "create_payment_request", REQUEST, episode="b1")
    authorized = await ok(graph_bank, "authorize_payment_request", {"request_id": created["request_id"]},
                          episode="b1")
    assert authorized["status"] == "Authorized"


async def test_a_domain_refusal_is_not_a_graph_refusal(graph_bank):
    await ok(graph_bank, "check_payment_request", {"request_id": "req_a0"}, episode="b2")
    error = await fails(graph_bank, "authorize_payment_request", {"request_id": "req_a0"}, "precondition_failed",
                        episode="b2")  # settled: the domain's own rule
    assert MISSING_STEPS_KEY not in error and not is_graph_refusal({"error": error})


def test_the_server_says_it_enforces_the_graph(snapshot_of):
    server = DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True)
    plain = DomainServer(get_domain("retail"), snapshot_of("retail"))
    assert server.mcp.description == f"{plain.mcp.description} {DEPENDENCY_GRAPH_MARK}"
    assert "Dependency-graph mode" in (server.mcp.instructions or "")
    assert "Dependency-graph mode" not in (plain.mcp.instructions or "")


def test_every_domain_declares_a_graph_of_its_own_tools_for_every_tool_set():
    for domain in registered_domains().values():
        for name in domain.toolset_names():
            domain.dependency_graph.check_tools([s.name for s in domain.toolset(name)])


def test_a_graph_naming_a_tool_that_does_not_exist_or_itself_is_refused():
    with pytest.raises(ValueError, match="does not have: make_paymnet"):
        dependency_graph({"authorize_payment_request": ["make_paymnet"]}).check_tools(["authorize_payment_request"])
    with pytest.raises(ValueError, match="require themselves"):
        dependency_graph({"a": [("a", "b")]}).check_tools(["a", "b"])


def test_steps_are_alternatives_within_and_all_required_across():
    graph = dependency_graph({"pay": [("create", "check"), "authorize"]})
    assert graph.missing("pay", set()) == [("create", "check"), ("authorize",)]
    assert graph.missing("pay", {"check"}) == [("authorize",)]
    assert graph.missing("pay", {"create", "authorize"}) == []
    assert graph.missing("other", set()) == []
