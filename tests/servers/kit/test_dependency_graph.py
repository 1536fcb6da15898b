"""Dependency-graph mode (VitaBench): each tool's description carries its preconditions and postconditions;
with graph refusal (a shiftbox option) a tool also refuses to run until the tools it requires have succeeded
earlier in the episode; both off by default. Over a real MCP client on the hand-written snapshots."""

from __future__ import annotations

import pytest
from mcp import Client

from shiftbox_servers.kit import (
    DEPENDENCY_GRAPH_MARK,
    GRAPH_REFUSAL_MARK,
    DomainServer,
    Snapshot,
    conditions,
    dependency_graph,
    get_domain,
    is_graph_refusal,
    published_contract,
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
    async with Client(DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True,
                                   graph_refusal=True).mcp) as client:
        yield client


@pytest.fixture
async def graph_bank(snapshot_of):
    async with Client(DomainServer(get_domain("banking"), snapshot_of("banking"), dependency_graph=True,
                                   graph_refusal=True).mcp) as client:
        yield client


async def test_an_out_of_order_call_is_refused_naming_the_missing_step_and_what_to_call_first(graph_shop):
    before = await digest(graph_shop, "e1")
    error = await fails(graph_shop, "get_order_details", ORDER, "precondition_failed", episode="e1")
    assert error["message"] == (
        "get_order_details cannot run yet (graph refusal): one of find_user_id_by_email or "
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


def test_the_server_says_which_graph_mode_it_runs(snapshot_of):
    server = DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True)
    refusing = DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True, graph_refusal=True)
    plain = DomainServer(get_domain("retail"), snapshot_of("retail"))
    assert server.mcp.description == f"{plain.mcp.description} {DEPENDENCY_GRAPH_MARK}"
    assert refusing.mcp.description == f"{plain.mcp.description} {DEPENDENCY_GRAPH_MARK} {GRAPH_REFUSAL_MARK}"
    assert "Dependency-graph mode" in (server.mcp.instructions or "")
    assert "refuses" not in (server.mcp.instructions or "") and "refuses" in (refusing.mcp.instructions or "")
    assert "Dependency-graph mode" not in (plain.mcp.instructions or "")


async def test_describe_mode_refuses_nothing_for_order(snapshot_of):
    """VitaBench's mode: the out-of-order call the refusal option refuses runs."""
    async with Client(DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True).mcp) as shop:
        order = await ok(shop, "get_order_details", ORDER, episode="d1")
    assert order["order_id"] == "#W1000001"


def test_graph_refusal_needs_the_graph_mode(snapshot_of):
    with pytest.raises(ValueError, match="--dependency-graph --graph-refusal"):
        DomainServer(get_domain("retail"), snapshot_of("retail"), graph_refusal=True)


async def test_descriptions_carry_pre_and_postconditions_and_the_contract_changes(snapshot_of):
    plain = DomainServer(get_domain("retail"), snapshot_of("retail"))
    graph = DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True)
    before = {t.name: t.description for t in await plain.mcp.list_tools()}
    after = {t.name: t.description for t in await graph.mcp.list_tools()}
    assert after["get_order_details"] == before["get_order_details"] + (
        "\n\nPreconditions:\n"
        "- one of find_user_id_by_email or find_user_id_by_name_zip has succeeded earlier in this conversation\n"
        "- what get_user_details returns is known (call it first unless the user already gave it)\n"
        "Postconditions:\n"
        "- the order's status, items, address, payments and fulfilments are known")
    assert after["list_all_product_types"].endswith("Preconditions:\n- none\nPostconditions:\n"
                                                    "- every product type's name and id is known")
    assert all(after[n].startswith(before[n]) and "Postconditions:" in after[n] for n in before)
    plain_contract, graph_contract = await published_contract(plain), await published_contract(graph)
    assert graph_contract.digest != plain_contract.digest
    assert set(graph_contract.tools) == set(plain_contract.tools)
    assert all(graph_contract.tools[n] != plain_contract.tools[n] for n in plain_contract.tools)
    refusing = DomainServer(get_domain("retail"), snapshot_of("retail"), dependency_graph=True, graph_refusal=True)
    assert (await published_contract(refusing)).digest == graph_contract.digest  # refusal changes no description


def test_the_described_edges_and_the_enforced_steps_make_one_graph():
    graph = dependency_graph({"pay": ["authorize"]}, {
        "create": conditions("created"), "authorize": conditions("authorized", after=["create"]),
        "pay": conditions("paid", after=["authorize", ("create", "check")]), "check": conditions("checked"),
    })
    assert graph.steps("pay") == (("authorize",), ("create", "check"))  # enforced first, no repeat
    assert graph.edges() == [("authorize", "pay"), ("check", "pay"), ("create", "authorize"), ("create", "pay")]
    assert graph.describe("pay", "Pay it.") == (
        "Pay it.\n\nPreconditions:\n- authorize has succeeded earlier in this conversation\n"
        "- what one of create or check returns is known (call it first unless the user already gave it)\n"
        "Postconditions:\n- paid")
    with pytest.raises(ValueError, match="no conditions for extra"):
        graph.check_tools(["create", "authorize", "pay", "check", "extra"])


def test_every_domain_declares_a_graph_covering_every_tool_of_every_tool_set():
    for domain in registered_domains().values():
        for name in domain.toolset_names():
            tools = [s.name for s in domain.toolset(name)]
            domain.dependency_graph.check_tools(tools)  # every served tool has conditions
            assert set(tools) <= set(domain.dependency_graph.conditions), (domain.name, name)


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


def test_the_server_command_refuses_graph_refusal_without_the_graph_mode(capsys):
    from shiftbox_servers.kit.cli import main

    assert main(["retail", "--graph-refusal"]) == 2
    assert "--dependency-graph --graph-refusal" in capsys.readouterr().err


@pytest.mark.parametrize("refusal", [False, True], ids=["dependency-graph", "graph-refusal"])
def test_a_domain_that_declares_no_graph_refuses_the_graph_modes_saying_why(refusal, capsys):
    """A domain whose tools come with its snapshot (mmtb) declares no graph, so the graph modes do not apply to
    it: the server refuses them naming the domain and why, not asking for conditions it cannot declare."""
    from shiftbox_servers.kit.cli import main

    bare = [d for d in registered_domains().values() if not d.dependency_graph.conditions]
    assert "mmtb" in [d.name for d in bare]
    for domain in bare:
        assert domain.snapshot_tools is not None, f"{domain.name} serves declared tools but declares no graph"
        why = (f"the {domain.name} domain declares no dependency graph (its tools come with its snapshot), so "
               "dependency-graph mode does not apply to it")
        with pytest.raises(ValueError) as refused:
            DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()), dependency_graph=True,
                         graph_refusal=refusal)
        assert str(refused.value).startswith(why)
        assert main([domain.name, "--dependency-graph", *(["--graph-refusal"] if refusal else [])]) == 2
        assert why in capsys.readouterr().err
