"""Cross-domain views: namespaced tool and goal names that cannot collide, and the checked domain list."""

from __future__ import annotations

import itertools
import re

import pytest

from shiftbox_servers.kit import (
    combined_state_digest,
    domain_list,
    domain_of,
    get_domain,
    namespaced,
    split_namespaced,
    task_domains,
)
from shiftbox_servers.kit._cross import MAX_TOOL_NAME

DOMAINS = task_domains()
LLM_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def every_tool(domain: str) -> set[str]:
    d = get_domain(domain)
    return {s.name for toolset in (d.tools, *d.toolsets.values()) for s in toolset}


def test_namespaced_names_of_every_domain_are_distinct_valid_and_read_back():
    names = {}
    for domain in DOMAINS:
        for tool in every_tool(domain) | set(get_domain(domain).goal_tools):
            full = namespaced(domain, tool)
            assert LLM_TOOL_NAME.fullmatch(full), full
            assert split_namespaced(full) == (domain, tool)
            assert names.setdefault(full, (domain, tool)) == (domain, tool), f"{full} names two things"
    # the same tool name in two domains (get_user_details: retail and airline) stays two names
    shared = every_tool("retail") & every_tool("airline")
    assert "get_user_details" in shared
    assert namespaced("retail", "get_user_details") != namespaced("airline", "get_user_details")


@pytest.mark.parametrize(("domain", "tool"), [("a", "_b"), ("a", "b__c"), ("a_b", "c"), ("a1", "-x"), ("x", "y_")])
def test_reading_back_is_exact_for_awkward_tool_names(domain, tool):
    assert split_namespaced(namespaced(domain, tool)) == (domain, tool)


def test_no_two_pairs_give_one_name_over_a_small_alphabet():
    """Exhaustively over short domain and tool names: (domain, tool) -> name is one-to-one."""
    domains = ["a", "b", "ab", "a_b", "a1"]
    tools = ["x", "_x", "x_", "__x", "x__y", "-", "a_b"]
    seen = {}
    for domain, tool in itertools.product(domains, tools):
        full = namespaced(domain, tool)
        assert seen.setdefault(full, (domain, tool)) == (domain, tool)


@pytest.mark.parametrize("domain", ["a_", "_a", "a__b", "Banking", "bank-ing", ""])
def test_a_domain_name_that_could_make_names_ambiguous_is_refused(domain):
    with pytest.raises(ValueError, match="cannot be namespaced"):
        namespaced(domain, "tool")


def test_a_name_too_long_or_with_other_characters_is_refused():
    with pytest.raises(ValueError, match="not a valid tool name"):
        namespaced("banking", "x" * (MAX_TOOL_NAME - len("banking__") + 1))
    assert len(namespaced("banking", "x" * (MAX_TOOL_NAME - len("banking__")))) == MAX_TOOL_NAME
    with pytest.raises(ValueError, match="not a valid tool name"):
        namespaced("banking", "get account")


def test_plain_names_have_no_domain():
    assert split_namespaced("get_account") is None
    assert domain_of("account_info") is None
    assert domain_of("airline__booking") == "airline"


def test_domain_list_is_checked():
    assert domain_list("banking, airline") == ["banking", "airline"]
    assert domain_list("banking") == ["banking"]
    with pytest.raises(ValueError, match="empty entry"):
        domain_list("banking,,airline")
    with pytest.raises(ValueError, match="banking more than once"):
        domain_list("banking,airline,banking")


def test_the_cross_domain_view_namespaces_tools_goals_and_transfers():
    view = get_domain("banking,airline")
    assert view.name == "banking,airline" and view.parts == ("banking", "airline")
    tools = {s.name for s in view.tools}
    assert tools == {namespaced("banking", t) for t in (s.name for s in get_domain("banking").tools)} | {
        namespaced("airline", t) for t in (s.name for s in get_domain("airline").tools)}
    assert view.goal_tools["banking__authentication"] == tuple(
        f"banking__{t}" for t in get_domain("banking").goal_tools["authentication"])
    assert set(view.goal_requests) >= {"banking__payments", "airline__booking"}
    assert view.transfer_tools == ("banking__transfer_to_human_agents", "airline__transfer_to_human_agents")
    assert get_domain("banking").transfer_tools == ("transfer_to_human_agents",)
    assert "banking policy" in view.policy and "airline policy" in view.policy


def test_an_unknown_domain_in_the_list_is_named():
    with pytest.raises(KeyError, match="unknown domain 'nowhere'"):
        get_domain("banking,nowhere")


def test_the_combined_digest_does_not_depend_on_the_order():
    digests = {"banking": "b" * 64, "airline": "a" * 64}
    assert combined_state_digest(digests, ["banking", "airline"]) == combined_state_digest(digests, ["airline", "banking"])
    assert combined_state_digest(digests, ["banking"]) != combined_state_digest(digests, ["banking", "airline"])
