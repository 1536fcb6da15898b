"""Graph refusals (a shiftbox measure: VitaBench refuses nothing): the share of the agent's calls the graph-refusal
option refused, per simulation and pooled over the run's calls; only for simulations whose server refused
out-of-order calls (describe-only dependency-graph mode refuses nothing, so it is not measured). Expectations by
hand."""

from __future__ import annotations

from shiftbox.metrics import compute_run_metrics
from shiftbox.metrics._graph_refusals import graph_refusal_score
from shiftbox.trajectory import ServerInfo, Trajectory
from tests.client.metrics.build import Builder, task

GRAPH_REFUSAL = {"error": {"kind": "precondition_failed", "message": "authorize_payment_request cannot run yet",
                           "missing_steps": [["create_payment_request", "check_payment_request"]]}}
DOMAIN_REFUSAL = {"error": {"kind": "precondition_failed", "message": "request req_1 is Settled"}}
SERVER = dict(name="shiftbox-banking", version="0", snapshot="s", snapshot_sha256="0" * 64)


def simulation(task_id: str, results: list[dict | None], graph: bool, refusal: bool | None = None) -> Trajectory:
    """One agent turn making len(results) calls; a result None succeeded, else it is the call's error."""
    built = Builder().user("hi", goal="authentication")
    built.agent(calls=[("get_account", {"account_id": f"a{i}"}) for i in range(len(results))])
    for record, result in zip(built.calls, results, strict=True):
        if result is not None:
            record.is_error, record.error_kind, record.result = True, "precondition_failed", result
    trajectory = built.build(task_id=task_id)
    refusal = graph if refusal is None else refusal
    trajectory.servers = {"banking": ServerInfo(**SERVER, dependency_graph=graph, graph_refusal=refusal)}
    return trajectory


def test_the_share_of_calls_refused_by_the_graph_per_simulation_and_pooled():
    a = simulation("a", [GRAPH_REFUSAL, DOMAIN_REFUSAL, None, None], graph=True)  # 1 of 4
    b = simulation("b", [GRAPH_REFUSAL, GRAPH_REFUSAL], graph=True)  # 2 of 2
    c = simulation("c", [GRAPH_REFUSAL, None, None], graph=False)  # not in graph mode: not measured
    tasks = {t: task(task_id=t) for t in "abc"}
    run, sims = compute_run_metrics([a, b, c], tasks)
    by_id = {s.task_id: s.graph_refusals for s in sims}
    assert (by_id["a"].calls, by_id["a"].refused, by_id["a"].share) == (4, 1, 0.25)
    assert (by_id["b"].calls, by_id["b"].refused, by_id["b"].share) == (2, 2, 1.0)
    assert by_id["c"] is None
    r = run.graph_refusals
    assert (r.simulations, r.calls, r.refused, r.share) == (2, 6, 3, 0.5)  # (1 + 2) / (4 + 2)
    assert "graph_refusals" in run.model_dump(mode="json")


def test_without_the_mode_the_figure_is_absent_from_metrics_json():
    run, sims = compute_run_metrics([simulation("c", [None], graph=False)], {"c": task(task_id="c")})
    assert run.graph_refusals is None and graph_refusal_score(simulation("c", [None], graph=False)) is None
    assert "graph_refusals" not in run.model_dump(mode="json")
    assert "graph_refusals" not in sims[0].model_dump(mode="json")


def test_a_simulation_in_graph_mode_without_calls_has_no_share():
    score = graph_refusal_score(simulation("d", [], graph=True))
    assert (score.calls, score.refused, score.share) == (0, 0, None)


def test_describe_only_graph_mode_is_not_measured():
    described = simulation("d", [GRAPH_REFUSAL, None], graph=True, refusal=False)
    assert graph_refusal_score(described) is None
    run, _ = compute_run_metrics([described], {"d": task(task_id="d")})
    assert run.graph_refusals is None
