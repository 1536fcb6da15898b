"""Dependency-graph mode through the harness: the tool descriptions carry the graph (VitaBench) and the contract
is checked against the kit's rendering; with graph refusal (a shiftbox option) an out-of-order call is refused
and the right order accepted over the in-process and a subprocess transport; the modes are in the server's
identity and in run.json; the scripted oracle still solves every committed generated task with refusal on;
`--policy none` sends the LLM no policy text."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import plan_run, run_evaluation, score_run
from shiftbox.tasks import load_task_file
from shiftbox.testing import fake_openai
from shiftbox.trajectory import read_trajectories
from shiftbox.world import open_world
from shiftbox_servers.kit import get_domain, is_graph_refusal, task_domains
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
DOMAINS = task_domains()


def retail_login_and_order() -> tuple[dict, dict]:
    """The arguments of a generated retail task's email lookup and of its order lookup (real snapshot ids)."""
    for t in load_task_file(get_domain("retail").default_snapshot_dir() / "tasks.json").tasks:
        calls = {a.allowed_tools[0].function_name: a.allowed_tools[0].params for a in t.evaluation_criteria.action_sets}
        if "find_user_id_by_email" in calls and "get_order_details" in calls:
            return calls["find_user_id_by_email"], calls["get_order_details"]
    raise AssertionError("no generated retail task looks a customer up by email and then an order")


@pytest.mark.anyio
@pytest.mark.parametrize("servers", ["inproc", "stdio"])
async def test_an_out_of_order_call_is_refused_and_the_right_order_accepted(servers):
    login, order = retail_login_and_order()
    async with open_world("retail", servers=servers, dependency_graph=True, graph_refusal=True) as world:
        assert world.info.dependency_graph is True and world.info.graph_refusal is True
        episode = world.episode(f"graph-{servers}")
        refused = await episode.call("get_order_details", order, call_id="c0", message_index=1, agent_turn=0)
        assert refused.is_error and refused.error_kind == "precondition_failed" and is_graph_refusal(refused.result)
        assert "Call one of find_user_id_by_email or find_user_id_by_name_zip first" in refused.result["error"]["message"]
        found = await episode.call("find_user_id_by_email", login, call_id="c1", message_index=3, agent_turn=1)
        assert not found.is_error, found.result
        accepted = await episode.call("get_order_details", order, call_id="c2", message_index=5, agent_turn=2)
        assert not accepted.is_error and accepted.result["order_id"] == order["order_id"]
        await episode.close()
    async with open_world("retail", servers=servers) as world:  # off by default
        assert world.info.dependency_graph is False
        record = await world.episode(f"plain-{servers}").call("get_order_details", order, call_id="c0",
                                                              message_index=1, agent_turn=0)
        assert not record.is_error
        assert "dependency_graph" not in world.info.model_dump(mode="json")
    async with open_world("retail", servers=servers, dependency_graph=True) as world:  # VitaBench: described only
        assert world.info.dependency_graph is True and world.info.graph_refusal is False
        assert "Preconditions:" in next(t["description"] for t in world.tools if t["name"] == "get_order_details")
        record = await world.episode(f"described-{servers}").call("get_order_details", order, call_id="c0",
                                                                  message_index=1, agent_turn=0)
        assert not record.is_error
        assert "graph_refusal" not in world.info.model_dump(mode="json")


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_oracle_solves_every_generated_task_in_graph_mode(domain, tmp_path):
    path = get_domain(domain).default_snapshot_dir() / "tasks.json"
    res = runner.invoke(app, ["run", "--domain", domain, "--tasks", str(path), "--concurrency", "8",
                              "--dependency-graph", "--graph-refusal", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output[-2000:]
    run, sims = score_run(tmp_path / "run")
    unsolved = [s.simulation_id for s in sims if s.tsr.score != 1.0 or s.tsr.state_match is not True]
    assert not unsolved, unsolved[:5]
    assert run.scored_simulations == len(load_task_file(path).tasks)
    assert (run.graph_refusals.refused, run.graph_refusals.share) == (0, 0.0)
    assert run.graph_refusals.calls == run.tool_calls > 0
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert recorded["config"]["dependency_graph"] is True and recorded["server"][domain]["dependency_graph"] is True
    assert recorded["config"]["graph_refusal"] is True and recorded["server"][domain]["graph_refusal"] is True
    assert all(t.servers[domain].graph_refusal for t in read_trajectories(tmp_path / "run"))
    shown = runner.invoke(app, ["metrics", str(tmp_path / "run")])
    assert shown.exit_code == 0 and "graph refusals" in shown.output, shown.output[-2000:]


def test_the_modes_are_off_by_default_and_absent_from_run_json(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "hw_banking_001",
                              "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output[-2000:]
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "dependency_graph" not in recorded["config"] and "policy" not in recorded["config"]
    assert "graph_refusal" not in recorded["config"]
    assert "dependency_graph" not in recorded["server"]["banking"]
    run, _ = score_run(tmp_path / "run")
    assert run.graph_refusals is None
    shown = runner.invoke(app, ["metrics", str(tmp_path / "run")])
    assert "graph refusals" not in shown.output


def test_policy_none_sends_the_llm_no_policy_text(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    policy = get_domain("banking").policy.strip()
    sent = {}
    for choice in ("domain", "none"):
        with fake_openai(lambda body: "All done. Is there anything else?") as server:
            plan = plan_run(HANDWRITTEN, tmp_path / choice, agent="litellm:openai/fake-model", max_steps=4,
                            agent_args={"api_base": server.base_url, "retry_backoff": "0"},
                            task_ids=["hw_banking_001"], policy=choice, dependency_graph=choice == "none")
            run_evaluation(plan)
            sent[choice] = server.requests[0]["messages"][0]
        recorded = json.loads((tmp_path / choice / "run.json").read_text())["config"]
        assert recorded.get("policy", "domain") == choice
    assert sent["domain"]["role"] == sent["none"]["role"] == "system"
    assert policy in sent["domain"]["content"] and "<policy>" in sent["domain"]["content"]
    assert policy not in sent["none"]["content"] and "policy" not in sent["none"]["content"].lower()
    assert "customer service agent" in sent["none"]["content"]


def test_graph_refusal_without_the_graph_mode_is_refused_before_anything_runs(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "hw_banking_001",
                              "--graph-refusal", "--out", str(tmp_path / "run")])
    assert res.exit_code != 0 and "add --dependency-graph" in res.output
    assert not (tmp_path / "run").exists()


def test_describe_mode_is_recorded_without_refusals(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "hw_banking_001",
                              "--dependency-graph", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output[-2000:]
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert recorded["config"]["dependency_graph"] is True and "graph_refusal" not in recorded["config"]
    assert recorded["server"]["banking"]["dependency_graph"] is True
    plain = get_domain("banking").default_snapshot_dir()
    assert recorded["server"]["banking"]["tool_contract"] != json.loads(
        (plain / "manifest.json").read_text())["tool_contracts"]["default"]["digest"]
    run, _ = score_run(tmp_path / "run")
    assert run.graph_refusals is None  # nothing can be refused, so there is no share to report


def test_serve_refuses_graph_refusal_without_the_graph_mode(tmp_path):
    from shiftbox.errors import RunPlanError
    from shiftbox.serve import serve_gateway

    with pytest.raises(RunPlanError, match="add --dependency-graph"):
        serve_gateway("banking", tmp_path / "serve", graph_refusal=True)
    assert not (tmp_path / "serve").exists()


@pytest.mark.anyio
async def test_a_graph_mode_server_whose_conditions_drifted_is_refused_naming_the_tool(monkeypatch):
    import dataclasses

    from shiftbox.errors import ToolContractError
    from shiftbox.world import _world
    from shiftbox_servers.kit import DomainServer, conditions

    retail = get_domain("retail")
    graph = retail.dependency_graph
    drifted = dataclasses.replace(graph, conditions={**graph.conditions,
                                                     "list_all_product_types": conditions("a drifted postcondition")})
    served = dataclasses.replace(retail, dependency_graph=drifted)  # what an out-of-date server image would publish
    monkeypatch.setattr(_world, "_inproc_server", lambda domain, snapshot, options: DomainServer(
        served, snapshot, toolset=options.toolset, dependency_graph=options.dependency_graph))
    with pytest.raises(ToolContractError, match=r"list_all_product_types \(changed\)") as refused:
        async with open_world("retail", dependency_graph=True):
            pass
    assert "get_order_details" not in str(refused.value)  # checked against the graph mode's rendering, tool by tool
    async with open_world("retail"):  # the plain descriptions do not carry the graph: still the stamped contract
        pass
