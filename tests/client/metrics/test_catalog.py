"""The metric catalog: a headline metric declared once shows in every output — the terminal summary and run-end
table, `shiftbox compare`, the HTML report, metrics.json, the Inspect scorer, the RL rewards and the pytest
thresholds. The toy metric is docs/adding-a-metric.md's own code block; its values are computed by hand below."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from shiftbox.metrics import (
    HeadlineMetric,
    compare,
    headline_metrics,
    register_metric,
    score_by_agent,
    simulation_metrics,
    unregister_metric,
)
from shiftbox.pytest import ReplayFailed, check_thresholds
from shiftbox.report import (
    agents_summary,
    comparison_table,
    render_html,
    run_headline_table,
    summary,
)
from shiftbox.rl import REWARDS, reward_function
from tests.client.metrics.build import Builder, task

DOC = Path(__file__).parents[3] / "docs" / "adding-a-metric.md"


@pytest.fixture
def toy():
    """Registers the metric of docs/adding-a-metric.md by running its code block, and removes it after."""
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(block, namespace)
    yield namespace["FAILED_CALLS"]
    unregister_metric("failed_calls")


def _calls(n: int, failed: int, agent: str, task_id: str):
    """A simulation of `task_id` whose agent makes n calls, the first `failed` of them failing."""
    t = Builder().user().agent(calls=[("get_account", {"account_id": f"acc_{i}"}) for i in range(n)],
                               errors=range(failed)).build(task_id=task_id)
    return t.model_copy(update={"agent": agent})


def _run(agent: str, failures: tuple[tuple[int, int], tuple[int, int]]):
    trajectories = [_calls(n, f, agent, f"t{i}") for i, (n, f) in enumerate(failures)]
    tasks = {f"t{i}": task(task_id=f"t{i}") for i in range(len(failures))}
    return trajectories, tasks


def _text(renderable) -> str:
    console = Console(width=250, record=True)
    console.print(renderable)
    return console.export_text()


def test_built_in_catalog_order_and_labels():
    assert [(m.key, m.label) for m in headline_metrics()] == [
        ("tsr", "TSR"), ("tue", "TUE"), ("tcrr", "TCRR"), ("recovery", "recovery")]


def test_a_registered_metric_shows_in_every_output(toy):
    # agent a: 1 of 4 calls failed on t0, 0 of 2 on t1 -> pooled 1/6 (a per-simulation mean would be 1/8)
    # agent b: 3 of 4 on t0, 1 of 2 on t1 -> pooled 4/6
    traj_a, tasks = _run("a", ((4, 1), (2, 0)))
    traj_b, _ = _run("b", ((4, 3), (2, 1)))
    scores = score_by_agent(traj_a + traj_b, tasks)
    a, b = scores["a"].metrics, scores["b"].metrics
    assert [m.key for m in headline_metrics()][-1] == "failed_calls"

    # metrics.json: the pooled value, and its bootstrap interval over the two tasks
    dumped = a.model_dump(mode="json")
    assert dumped["other_headlines"] == {"failed_calls": pytest.approx(1 / 6)}
    assert "failed_calls" in dumped["intervals"]
    assert b.other_headlines["failed_calls"] == pytest.approx(4 / 6)
    assert toy.run_value(a) == pytest.approx(1 / 6)

    # terminal: the one-agent summary, the run-end table, agents side by side
    text = _text(summary(a))
    assert re.search(r"│ failed +│ 0\.167 \[0\.000, 0\.250\] +│ " + re.escape(toy.description), text), text
    assert re.search(r"│ failed \(pooled\) +│ 0\.167 \[", _text(run_headline_table({"a": a, "b": b})))
    assert re.search(r"│ failed \(pooled\) +│ 0\.167 \[[^│]*│ 0\.667 \[", _text(agents_summary(scores)))

    # compare: B - A over the paired simulations, right after the built-in metrics
    comparison = compare(scores["a"].simulations, scores["b"].simulations, "a", "b")
    keys = [d.metric for d in comparison.differences]
    assert keys.index("failed_calls") == keys.index("recovery") + 1
    diff = comparison.differences[keys.index("failed_calls")]
    assert (diff.a, diff.b, diff.difference) == pytest.approx((1 / 6, 4 / 6, 3 / 6))
    assert re.search(r"│ failed +│ 0\.167 │ 0\.667 │ \+0\.500 │", _text(comparison_table(comparison)))

    # the HTML report: its headline card (one agent) and the agents table (two)
    html = render_html({"a": scores["a"]}, traj_a, None)
    assert re.search(r"<h3>failed \u00b7 tool calls that failed</h3><div class=\"big\">0\.167<", html)
    assert "<th>failed</th>" in render_html(scores, traj_a + traj_b, None)

    # the RL rewards: its per-simulation value (agent a's first simulation: 1 of 4)
    first = scores["a"].simulations[0]
    assert first.task_id == "t0"
    assert "failed_calls" in REWARDS and reward_function("failed_calls")(first) == pytest.approx(0.25)

    # the pytest plugin's thresholds: max_failed_calls, as it is lower-better
    check_thresholds(a, max_failed_calls=0.2)
    with pytest.raises(ReplayFailed, match="failed = 0.6666"):
        check_thresholds(b, max_failed_calls=0.2)


def test_the_inspect_scorer_scores_a_registered_metric(toy):
    pytest.importorskip("inspect_ai")
    from shiftbox.inspect_eval import SCORES, score_values

    traj, tasks = _run("a", ((4, 1), (2, 0)))
    values = score_values(simulation_metrics(traj[0], tasks["t0"]))
    assert list(SCORES) == ["tsr", "tue", "tcrr", "gsrt", "failed_calls", "success"]
    assert values["failed_calls"] == pytest.approx(0.25)


def test_built_in_scores_and_rewards_keep_their_names():
    assert list(REWARDS) == ["tsr", "success", "tue", "action", "communicate_info"]


def test_a_metric_cannot_shadow_another_or_count_a_shared_name_differently(toy):
    with pytest.raises(ValueError, match="already named 'failed_calls'"):
        register_metric(toy)
    with pytest.raises(ValueError, match="built-in"):
        unregister_metric("tsr")
    clash = HeadlineMetric(key="clash", label="C", description="x", counts=lambda s: {"calls": s.tue.calls + 1},
                           pooled=lambda c: None)
    register_metric(clash)
    try:
        traj, tasks = _run("a", ((2, 0), (1, 0)))
        with pytest.raises(ValueError, match="'clash' counts 'calls'"):
            score_by_agent(traj, tasks)
    finally:
        unregister_metric("clash")
