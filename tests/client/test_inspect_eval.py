"""shiftbox tasks run as Inspect AI tasks (docs/inspect.md), checked through Inspect's own API: its `eval()`, its mock
model, its log reader, and the `inspect` command, against shiftbox's own scoring of the same trajectories."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model  # noqa: E402
from inspect_ai.tool import ToolCall as InspectToolCall  # noqa: E402

import shiftbox  # noqa: E402
from shiftbox.inspect_eval import (  # noqa: E402
    METRICS_KEY,
    SCORES,
    SHIFT_EVENT_SOURCE,
    TRAJECTORY_KEY,
    inline_refs,
    tool_info,
)
from shiftbox.metrics import aggregate_gsrt  # noqa: E402
from shiftbox.runs import score_trajectories  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HANDWRITTEN = REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json"
SCORER = "shiftbox_scores"


def trajectories_of(log) -> list[shiftbox.Trajectory]:
    return [shiftbox.Trajectory.model_validate(s.store[TRAJECTORY_KEY]) for s in log.samples]


def shiftbox_view(metrics) -> dict[str, float | None]:
    """What shiftbox's own scoring says of one simulation, in the score value's keys."""
    return {"tsr": metrics.tsr.score, "tue": metrics.tue.tue, "tcrr": metrics.tcrr.ratio,
            "gsrt": aggregate_gsrt(metrics.gsrt).recovery_rate,
            "success": None if metrics.success is None else float(metrics.success)}


def same(a: float | None, b: float | None) -> bool:
    return (a is None and math.isnan(b)) or (a is not None and math.isclose(a, b))


def result(log, name: str, reducer: str = "mean") -> float:
    return next(s.metrics["mean"].value for s in log.results.scores if s.name == name and s.reducer == reducer)


@pytest.fixture(scope="module")
def mock_log(tmp_path_factory):
    """Two handwritten banking tasks, two epochs each, answered by Inspect's default mock model."""
    out = tmp_path_factory.mktemp("inspect")
    ids = [t.id for t in shiftbox.load_task_file(HANDWRITTEN).tasks[:2]]
    [log] = inspect_eval("shiftbox/banking", model="mockllm/model", epochs=2, display="none", log_dir=str(out),
                         task_args={"tasks": str(HANDWRITTEN), "task_ids": ids})
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def test_every_sample_is_one_simulation_scored_as_shiftbox_scores_its_trajectory(mock_log):
    tasks = {t.id: t for t in shiftbox.load_task_file(HANDWRITTEN).tasks}
    assert sorted((s.id, s.epoch) for s in mock_log.samples) == sorted(
        (i, e) for i in {s.id for s in mock_log.samples} for e in (1, 2))
    trajectories = trajectories_of(mock_log)
    assert all(t.agent == "inspect:mockllm/model" for t in trajectories)
    assert {(t.task_id, t.trial) for t in trajectories} == {(s.id, s.epoch - 1) for s in mock_log.samples}
    _, per_simulation = score_trajectories(trajectories, tasks)
    by_id = {m.simulation_id: m for m in per_simulation}
    for sample, trajectory in zip(mock_log.samples, trajectories, strict=True):
        score = sample.scores[SCORER]
        assert set(score.value) == set(SCORES)
        expected = shiftbox_view(by_id[trajectory.simulation_id])
        assert all(same(expected[k], score.value[k]) for k in SCORES), (expected, score.value)
        assert score.metadata[METRICS_KEY] == by_id[trajectory.simulation_id].model_dump(mode="json")


def test_the_log_results_are_shiftbox_run_metrics(mock_log):
    trajectories = trajectories_of(mock_log)
    tasks = {t.id: t for t in shiftbox.load_task_file(HANDWRITTEN).tasks}
    run, _ = score_trajectories(trajectories, tasks)
    assert math.isclose(result(mock_log, "tsr"), run.tsr.mean)
    assert math.isclose(result(mock_log, "success", "shiftbox/pass_hat"), run.pass_hat_k[2])  # --epochs 2: pass^2


def test_the_transcript_shows_the_conversation_and_each_goal_shift(mock_log):
    for sample, trajectory in zip(mock_log.samples, trajectories_of(mock_log), strict=True):
        conversation = [m for m in sample.messages if m.role != "system"]
        assert [(m.role, m.text) for m in conversation] == [(m.role, m.content or "") for m in trajectory.messages]
        shifts = [e.data for e in sample.events if e.event == "info" and e.source == SHIFT_EVENT_SOURCE]
        assert [(s["from_goal"], s["to_goal"], s["message_index"]) for s in shifts] == [
            (s.from_goal, s.to_goal, s.message_index) for s in trajectory.shifts]
    assert any(trajectory.shifts for trajectory in trajectories_of(mock_log))


def oracle_outputs(trajectory: shiftbox.Trajectory) -> list[ModelOutput]:
    """The oracle's replies as Inspect model outputs: a mock model that answers with them plays the oracle."""
    return [ModelOutput.from_message(ChatMessageAssistant(
        content=m.content or "", tool_calls=[InspectToolCall(id=f"mock{i}", function=c.name, arguments=c.arguments)
                                             for i, c in enumerate(m.tool_calls)] or None))
        for m in trajectory.messages if m.role == "assistant"]


def test_a_mock_model_answering_as_the_oracle_gets_the_oracles_trajectory_and_scores(mock_log, tmp_path):
    task = shiftbox.load_task_file(HANDWRITTEN).tasks[0]
    plan = shiftbox.plan_run(HANDWRITTEN, tmp_path / "oracle", agent="scripted:oracle", task_ids=[task.id])
    [oracle] = shiftbox.run_evaluation(plan).trajectories
    model = get_model("mockllm/model", custom_outputs=oracle_outputs(oracle))
    [log] = inspect_eval("shiftbox/banking", model=model, display="none", log_dir=str(tmp_path / "logs"),
                         task_args={"tasks": str(HANDWRITTEN), "task_ids": [task.id]})
    [sample] = read_eval_log(log.location).samples
    [trajectory] = trajectories_of(read_eval_log(log.location))
    assert [m.model_dump(exclude={"timing"}) for m in trajectory.messages] == \
        [m.model_dump(exclude={"timing"}) for m in oracle.messages]
    assert trajectory.final_state == oracle.final_state
    _, [expected] = score_trajectories([oracle], {task.id: task})
    assert all(same(shiftbox_view(expected)[k], sample.scores[SCORER].value[k]) for k in SCORES)
    default = next(s for s in mock_log.samples if s.id == task.id and s.epoch == 1).scores[SCORER].value
    assert sample.scores[SCORER].value["tsr"] > default["tsr"]


def test_airline_tools_reach_the_model_with_their_references_resolved():
    schema = {"type": "object", "$defs": {"Pax": {"type": "object", "properties": {"name": {"type": "string"}}}},
              "properties": {"passengers": {"type": "array", "items": {"$ref": "#/$defs/Pax"}}}}
    assert inline_refs(schema) == {"type": "object", "properties": {"passengers": {
        "type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}
    info = tool_info({"name": "book", "description": "Book.", "inputSchema": schema})
    assert info.parameters.properties["passengers"].items.properties["name"].type == "string"


def test_without_the_extra_the_integration_names_the_install_command_and_shiftbox_never_loads_it():
    code = ("import sys; sys.modules['inspect_ai'] = None\n"
            "import shiftbox, shiftbox.cli\n"
            "try:\n    import shiftbox.inspect_eval\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert "pip install 'shiftbox[inspect]'" in out.stdout
    loaded = subprocess.run([sys.executable, "-c", "import sys, shiftbox.cli; print('inspect_ai' in sys.modules)"],
                            capture_output=True, text=True, check=True, timeout=120)
    assert loaded.stdout.strip() == "False"


def test_the_inspect_page_example_runs_as_written(tmp_path):
    """docs/inspect.md's example as written: the `inspect` command (which finds the tasks by their entry point) in a
    scratch folder, then its Python block reading the log."""
    page = (REPO / "docs" / "inspect.md").read_text()
    command = re.search(r"```shell\n(.*?)```", page, re.S).group(1)
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SHIFTBOX_SNAPSHOTS": str(REPO / "snapshots")}
    ran = subprocess.run(["bash", "-ec", command], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    printed = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env=env)
    assert printed.returncode == 0, printed.stderr
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == 4  # --limit 2, --epochs 2
    tasks = {t.id: t for t in shiftbox.load_task_file(REPO / "snapshots/banking/v1/tasks.json").tasks}
    run, _ = score_trajectories(trajectories_of(log), tasks)
    assert f"tsr mean {run.tsr.mean:.3f}" in printed.stdout
    assert f"success shiftbox/pass_hat {run.pass_hat_k[2]:.3f}" in printed.stdout
