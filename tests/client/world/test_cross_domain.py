"""Cross-domain conversations: one simulation on several domain servers, tools namespaced, calls routed.

The committed cross-domain set (tasks/cross-domain.json) is run with `shiftbox run --domain banking,airline`: the
scripted oracle reaches TSR 1.0, an agent that serves only the first goal's domain scores less. The hand-computed
scores of one task are on the independent variant (tasks/cross-domain-independent.json, generator v1's tasks).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from shiftbox import RunPlanError, plan_run, run_evaluation
from shiftbox.cli import app
from shiftbox.metrics import compute_run_metrics
from shiftbox.tasks import load_task_file
from shiftbox.trajectory import read_trajectories
from shiftbox.world import CrossWorld, open_world
from shiftbox_servers.kit import domain_list, get_domain, split_namespaced
from tests.client.harness import HANDWRITTEN, REPO

CROSS = REPO / "tasks" / "cross-domain.json"
INDEPENDENT = REPO / "tasks" / "cross-domain-independent.json"
runner = CliRunner()


def banking_airline_ids() -> list[str]:
    return [t.id for t in load_task_file(CROSS).tasks if set(domain_list(t.domain)) == {"banking", "airline"}]


def test_the_world_offers_namespaced_tools_and_routes_each_call_to_its_domain():
    async def scenario():
        async with open_world("banking,airline") as world:
            assert isinstance(world, CrossWorld)
            names = [t["name"] for t in world.tools]
            assert len(names) == len(set(names)) == len(get_domain("banking").tools) + len(get_domain("airline").tools)
            assert {split_namespaced(n)[0] for n in names} == {"banking", "airline"}
            assert set(world.servers) == {"banking", "airline"}
            episode = world.episode("cross-test")
            bank = await episode.call("banking__get_customer_by_id", {"customer_id": "cust_0001"}, call_id="c1",
                                      message_index=1, agent_turn=0)
            air = await episode.call("airline__list_all_airports", {}, call_id="c2", message_index=1, agent_turn=0)
            elsewhere = await episode.call("retail__get_user_details", {"user_id": "x"}, call_id="c3",
                                           message_index=1, agent_turn=0)
            plain = await episode.call("get_accounts", {"customer_id": "cust_0001"}, call_id="c4",
                                       message_index=1, agent_turn=0)
            finals = await world.close_episode(episode)
            return bank, air, elsewhere, plain, finals

    bank, air, elsewhere, plain, finals = anyio.run(scenario)
    assert (bank.name, bank.domain, bank.is_error) == ("banking__get_customer_by_id", "banking", False)
    assert bank.result["customer_id"] == "cust_0001"
    assert (air.name, air.domain, air.is_error) == ("airline__list_all_airports", "airline", False)
    for record in (elsewhere, plain):  # never sent: no joined domain serves it
        assert (record.is_error, record.error_kind, record.domain) == (True, "unknown_tool", "")
        assert "<domain>__<tool>" in record.result["error"]["message"]
    assert set(finals) == {"banking", "airline"} and all(len(d) == 64 for d in finals.values())


def run_cli(tmp_path: Path, agent: str, name: str) -> tuple[Path, dict]:
    out = tmp_path / name
    ids = [arg for i in banking_airline_ids() for arg in ("--task-id", i)]
    res = runner.invoke(app, ["run", "--domain", "banking,airline", "--tasks", str(CROSS), "--agent", agent,
                              "--out", str(out), *ids])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["metrics", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.output)


def test_the_oracle_solves_the_banking_airline_tasks(tmp_path):
    out, metrics = run_cli(tmp_path, "scripted:oracle", "oracle")
    tasks = {t.id: t for t in load_task_file(CROSS).tasks}
    trajectories = read_trajectories(out)
    assert len(trajectories) == len(banking_airline_ids()) == 22  # 11 per ordered pair
    assert metrics["tsr"]["mean"] == 1.0 and metrics["tsr"]["state_match"] == 1.0
    shifts = sum(len(tasks[t.task_id].goals) - 1 for t in trajectories)
    assert metrics["by_domain_crossing"]["crossed"]["gsrt"]["shifts"] == shifts  # goals alternate: all cross
    assert "same_domain" not in metrics["by_domain_crossing"]
    assert metrics["gsrt"]["recovery_rate"] == 1.0
    for t in trajectories:
        assert set(t.servers) == set(t.final_state) == {"banking", "airline"}
        assert all(c.domain == split_namespaced(c.name)[0] for c in t.tool_calls)
        assert t.termination.reason == "user_stop"
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["domain"] == "banking,airline" and set(run["server"]) == {"banking", "airline"}


def test_an_agent_serving_only_the_first_domain_scores_less(tmp_path):
    _, metrics = run_cli(tmp_path, "scripted:first_domain_only", "flawed")
    assert metrics["tsr"]["mean"] < 1.0
    crossed = metrics["by_domain_crossing"]["crossed"]["gsrt"]
    assert crossed["recovery_rate"] < 1.0


def test_skipping_the_other_domains_goal_costs_what_the_task_says(tmp_path):
    """cross_banking_airline_001: banking__transactions (1 action set, communicate "Interest Payment" and
    "tx_002391", both in the get_transactions output), then airline__reservation_lookup (2 action sets:
    get_user_details, get_reservation_details; communicate "HAT056", "2024-05-25"). The agent serving only the
    first domain does the banking set and says the two banking facts, then apologises for the airline goal."""
    task_id = "cross_banking_airline_001"
    plan = plan_run(INDEPENDENT, tmp_path / "run", domain="banking,airline", agent="scripted:first_domain_only",
                    task_ids=[task_id])
    trajectory = run_evaluation(plan).trajectories[0]
    _, (sim,) = compute_run_metrics([trajectory], {task_id: plan.tasks[0]})
    assert sim.tsr.action == pytest.approx(1 / 3)            # 1 of 3 action sets
    assert sim.tsr.communicate_info == pytest.approx(2 / 4)  # 2 of 4 facts
    # NL assertions not judged: TSR renormalized over communicate_info (0.25) and action (0.45)
    assert sim.tsr.score == pytest.approx((0.25 * 0.5 + 0.45 / 3) / 0.70)  # 0.392857…
    assert sim.tsr.state_match is True  # both goals only read: nothing to change, nothing changed
    (shift,) = sim.gsrt
    assert (shift.from_goal, shift.to_goal, shift.crossed_domains) == (
        "banking__transactions", "airline__reservation_lookup", True)
    # its one turn after the shift names nothing of the lookup and calls nothing
    assert (shift.ack, shift.tool, shift.outcome, shift.recovered) == (None, None, None, False)
    assert {c.domain for c in trajectory.tool_calls} == {"banking"}


def test_a_transfer_at_the_shift_uses_the_new_goals_domain_transfer_tool(tmp_path):
    """scripted:transfer_on_shift hands the customer over at the first shift, to banking__transactions ->
    airline__reservation_lookup: through airline__transfer_to_human_agents, which ends the conversation."""
    task_id = "cross_banking_airline_001"
    plan = plan_run(INDEPENDENT, tmp_path / "run", domain="banking,airline", agent="scripted:transfer_on_shift",
                    task_ids=[task_id])
    trajectory = run_evaluation(plan).trajectories[0]
    last = trajectory.tool_calls[-1]
    assert (last.name, last.domain, last.is_error) == ("airline__transfer_to_human_agents", "airline", False)
    assert trajectory.termination.reason == "agent_transfer"
    _, (sim,) = compute_run_metrics([trajectory], {task_id: plan.tasks[0]})
    assert (sim.gsrt[0].transferred, sim.gsrt[0].recovered) == (True, False)


def test_an_unknown_domain_in_the_list_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RunPlanError, match="unknown domain 'nowhere'"):
        plan_run(CROSS, out, domain="banking,nowhere")
    res = runner.invoke(app, ["run", "--domain", "banking,nowhere", "--tasks", str(CROSS), "--out", str(out)])
    assert res.exit_code == 2 and "unknown domain 'nowhere'" in res.output
    with pytest.raises(RunPlanError, match="more than once"):
        plan_run(CROSS, out, domain="banking,airline,banking")
    assert not out.exists()


def test_task_sets_and_domains_must_fit(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RunPlanError, match="needs a cross-domain task set"):
        plan_run(HANDWRITTEN, out, domain="banking,airline")
    with pytest.raises(RunPlanError, match="name every domain they need"):
        plan_run(CROSS, out, domain="banking")
    with pytest.raises(RunPlanError, match="--record is not available"):
        plan_run(CROSS, out, domain="banking,airline", record=tmp_path / "fixture")
    with pytest.raises(RunPlanError, match="one per domain"):
        plan_run(CROSS, out, domain="banking,airline", snapshot=REPO / "snapshots" / "banking" / "v1")
    plan = plan_run(CROSS, out, domain="airline,banking")
    assert {t.domain for t in plan.tasks} == {"banking,airline", "airline,banking"}
    assert plan.config.snapshot == ",".join(str(REPO / "snapshots" / d / "v1") for d in ("airline", "banking"))
    assert not out.exists()
