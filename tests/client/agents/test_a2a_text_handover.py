"""`--agent-arg handover=text`: the tools' URL and the policy written into the message text, so an A2A agent that
reads nothing else (tests/client/agents/text_only_agent.py) is scored like one that reads the metadata."""

from __future__ import annotations

import pytest

import shiftbox
from shiftbox.agents.a2a_agent import MCP_URL_KEY, A2AAgent
from shiftbox.trajectory import read_trajectories
from tests.client.agents import text_only_agent
from tests.client.agents.test_a2a_agent import run_a2a, serving

pytest.importorskip("a2a.server")


@pytest.fixture(scope="module")
def text_only_url():
    with serving(text_only_agent.build_app) as url:
        yield url


def test_an_agent_that_reads_only_text_scores_with_the_text_handover_and_not_without(tmp_path, text_only_url):
    res = run_a2a(tmp_path / "text", text_only_url, "--agent-arg", "handover=text")
    assert res.exit_code == 0, res.output
    [t] = read_trajectories(tmp_path / "text")
    assert [(c.name, c.arguments) for c in t.tool_calls] == [
        ("get_customer_by_phone", {"phone_number": "+15558562432"}), ("get_accounts", {"customer_id": "cust_0004"})]
    replies = [m.content for m in t.messages if m.role == "assistant" and m.content]
    assert replies[0] == "Please tell me your full name and phone number first."
    assert any(r.startswith("Your accounts: acc_00004 ") for r in replies)
    metrics, _ = shiftbox.score_run(tmp_path / "text")
    # both gold actions done, no other call: TSR 1 and TUE 1, computed by hand from the two calls above
    assert metrics.tsr.mean == 1.0 and metrics.tue.tue == 1.0
    # the default handover (metadata and a data part) leaves this agent without tools: no call, TSR 0
    res = run_a2a(tmp_path / "meta", text_only_url)
    assert res.exit_code == 0, res.output
    [t] = read_trajectories(tmp_path / "meta")
    assert t.tool_calls == [] and text_only_agent.NO_TOOLS in [m.content for m in t.messages]
    assert shiftbox.score_run(tmp_path / "meta")[0].tsr.mean == 0.0


def test_the_text_handover_writes_the_url_in_every_message_and_the_policy_in_the_first():
    from a2a.helpers import get_data_parts, get_message_text

    from shiftbox.agents.a2a_agent._handover import handover, user_message

    first = user_message(["Hi, I need help."], handover("http://h/mcp", "banking", 7, "POLICY TEXT"),
                         context_id="c", task_id=None, first=True, how="text")
    later = user_message(["My phone is +15550000000."], handover("http://h/mcp", "banking", 7, None),
                         context_id="c", task_id="t", first=False, how="text")
    text = get_message_text(first)
    assert len(first.parts) == 1 and get_data_parts(first.parts) == []  # one text part, nothing else to read
    assert "MCP tools: http://h/mcp\n" in text and "<policy>\nPOLICY TEXT\n</policy>" in text
    assert text.endswith("\n\nCustomer: Hi, I need help.") and "Domain: banking" in text
    assert get_message_text(later) == "MCP tools: http://h/mcp\n\nCustomer: My phone is +15550000000."
    assert first.metadata[MCP_URL_KEY] == "http://h/mcp"  # the metadata is handed over as well
    empty = get_message_text(user_message(["Hi"], handover("http://h/mcp", "banking", 7, ""), context_id="c",
                                          task_id=None, first=True, how="text"))
    assert "<policy>" not in empty  # --policy none: no policy block


def test_an_unknown_handover_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="handover='xml' is not known; choose one of: metadata, text"):
        A2AAgent("http://127.0.0.1:1", handover="xml")
    with pytest.raises(ValueError, match="a2a agents take only the options timeout=SECONDS and handover="):
        shiftbox.agent_from_spec("a2a:http://127.0.0.1:1", {"colour": "red"})
