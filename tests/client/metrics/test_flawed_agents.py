"""Each flawed scripted agent moves exactly the metric it is built to move (against the oracle).

The user follows the `completion` protocol here (it moves on only once a goal is done), so that no
persona cuts a flawed agent short and each flaw shows in its own metric alone; how the reference
protocol's personas react to the same flaws is tested in tests/client/users/test_shift_protocol.py."""

from __future__ import annotations

import anyio
import pytest

from shiftbox.agents import scripted_agent
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.users import ScriptedUser
from shiftbox.world import open_world
from tests.client.harness import handwritten

TASKS = {t.id: t for t in handwritten().tasks}


@pytest.fixture(scope="module")
def metrics_by_agent():
    async def run_all():
        out = {}
        async with open_world("banking") as world:
            for variant in ("oracle", "late_ack", "redundant", "wrong_params", "transfer_on_shift"):
                trajectories = [await run_simulation(t, 0, 0, scripted_agent(variant),
                                                     ScriptedUser(protocol="completion"), world)
                                for t in TASKS.values()]
                out[variant] = compute_run_metrics(trajectories, TASKS)[0]
        return out

    return anyio.run(run_all)


def headline(m):
    return {"tsr": m.tsr.mean, "tue": m.tue.tue, "tcrr": m.tcrr.pooled, "ack": m.gsrt.median_ack,
            "recovery": m.gsrt.recovery_rate, "transfer": m.gsrt.transfer_rate}


def test_oracle_is_perfect(metrics_by_agent):
    assert headline(metrics_by_agent["oracle"]) == {"tsr": 1.0, "tue": 1.0, "tcrr": 0.0, "ack": 1, "recovery": 1.0,
                                                   "transfer": 0.0}


def test_late_ack_moves_only_gsrt(metrics_by_agent):
    oracle, late = metrics_by_agent["oracle"], metrics_by_agent["late_ack"]
    assert (late.gsrt.median_ack, late.gsrt.median_tool) == (oracle.gsrt.median_ack + 1, oracle.gsrt.median_tool + 1)
    assert late.gsrt.recovery_rate == 1.0
    assert (late.tsr.mean, late.tue.tue, late.tcrr.pooled) == (oracle.tsr.mean, oracle.tue.tue, oracle.tcrr.pooled)


def test_redundant_moves_only_tcrr(metrics_by_agent):
    oracle, red = metrics_by_agent["oracle"], metrics_by_agent["redundant"]
    # every read-only gold call is made twice: redundant = read-only gold calls
    read_only = {"get_customer_by_phone", "get_customer_by_id", "get_customer_by_name", "get_transactions",
                 "get_statements", "get_accounts", "get_account"}
    gold_reads = sum(a.allowed_tools[0].function_name in read_only
                     for t in TASKS.values() for a in t.evaluation_criteria.action_sets)
    assert red.tcrr.redundant == gold_reads and red.tcrr.calls == oracle.tcrr.calls + gold_reads
    assert (red.tsr.mean, red.tue.tue, red.gsrt.median_ack) == (oracle.tsr.mean, oracle.tue.tue, oracle.gsrt.median_ack)


def test_wrong_params_moves_only_tue(metrics_by_agent):
    oracle, wrong = metrics_by_agent["oracle"], metrics_by_agent["wrong_params"]
    goals = sum(len(t.goals) for t in TASKS.values())
    calls = oracle.tue.calls + goals          # one bad call per goal
    assert wrong.tue.t == pytest.approx((calls - goals) / calls)
    assert wrong.tue.p == pytest.approx((calls - goals) / calls)
    assert (wrong.tsr.mean, wrong.tcrr.pooled, wrong.gsrt.median_ack) == (oracle.tsr.mean, 0.0, oracle.gsrt.median_ack)


def test_transfer_on_shift_moves_transfer_recovery_and_tsr(metrics_by_agent):
    t = metrics_by_agent["transfer_on_shift"]
    assert t.gsrt.shifts == len(TASKS)        # every task ends at its first shift
    assert t.gsrt.transfer_rate == 1.0 and t.gsrt.recovery_rate == 0.0
    assert t.tsr.mean < 1.0 and t.tcrr.pooled == 0.0
