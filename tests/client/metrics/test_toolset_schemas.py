"""P (arguments that fit the tool's schema) is judged against the tool set the trajectory was served, not the
union of every tool set of the domain: a call to a tool the agent was never offered has no valid arguments."""

from __future__ import annotations

from pathlib import Path

from shiftbox.agentchangebench import load_agentchangebench_results
from shiftbox.metrics import simulation_metrics
from shiftbox.trajectory import ServerInfo
from tests.client.metrics.build import Builder, task
from tests.conftest import require_acb

SHIFT_EVENT = ("log_shift_event", {"turn_no": 3, "from_class": "a", "to_class": "b", "trigger_terms": ["x"],
                                   "requires_reauth": False})
LOOKUP = ("get_customer_by_id", {"customer_id": "cust_001"})


def _p(toolset: str) -> float | None:
    trajectory = Builder().user("hi", goal="authentication").agent(calls=[LOOKUP, SHIFT_EVENT]).build()
    served = ServerInfo(name="banking", version="1", snapshot="s", snapshot_sha256="0", toolset=toolset)
    trajectory = trajectory.model_copy(update={"servers": {"banking": served}})
    return simulation_metrics(trajectory, task()).tue.p


def test_a_tool_only_the_reference_set_has_is_valid_there_and_unknown_on_the_default_set():
    # 2 calls: the lookup fits both sets; log_shift_event exists only in banking's agentchangebench set.
    assert _p("agentchangebench") == 2 / 2
    assert _p("default") == 1 / 2


def test_reference_results_are_read_as_served_by_the_reference_tool_set():
    trajectories = load_agentchangebench_results(
        Path(require_acb("simulations", "banking_gpt-4.1_2025-08-23.json"))).trajectories
    assert {info.toolset for t in trajectories for info in t.servers.values()} == {"agentchangebench"}
