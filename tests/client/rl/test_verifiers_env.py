"""The verifiers environment driven through verifiers' own API (`verifiers.load_environment`, `Environment.evaluate`)
with a scripted model on the local fake OpenAI server: replaying the oracle's replies scores 1.0, the run's
score; a model that never calls a tool scores less, as shiftbox scores its trajectory."""

from __future__ import annotations

import asyncio
import signal

import pytest

import shiftbox
import shiftbox.rl
from shiftbox.runs import score_trajectories
from shiftbox.testing import Reply, ToolCallReply, fake_openai
from tests.client.harness import HANDWRITTEN
from tests.client.rl.conftest import TASK_ID

vf = pytest.importorskip("verifiers", reason="the optional extra shiftbox[verifiers] is not installed")

TASKS = HANDWRITTEN
COLUMNS = ["shiftbox_metrics", "shiftbox_trajectory"]


@pytest.fixture(scope="module")
def environment():
    """`verifiers.load_environment("shiftbox.rl", ...)` on the one task (verifiers installs signal handlers for its
    own teardown: the test session's are put back)."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = vf.load_environment("shiftbox.rl", tasks=str(TASKS), agent_name="scripted:oracle")
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    env.dataset = env.get_dataset().filter(lambda row: row["info"]["task_id"] == TASK_ID)
    return env


def evaluate(environment, script, rollouts: int = 1) -> list[dict]:
    """`rollouts` rollouts (run concurrently) through verifiers' evaluate, the model answering from `script` on
    the fake server."""
    from openai import AsyncOpenAI
    from verifiers.clients import OpenAIChatCompletionsClient

    with fake_openai(script) as server:
        client = OpenAIChatCompletionsClient(AsyncOpenAI(base_url=server.base_url, api_key="sk-test"))
        outputs = asyncio.run(environment.evaluate(client, "fake-model", state_columns=COLUMNS,
                                                   rollouts_per_example=rollouts, on_progress=lambda *_: None))
    assert len(outputs["outputs"]) == rollouts
    return outputs["outputs"]


def test_replaying_the_oracle_scores_one_with_the_runs_trajectory(environment, oracle_run):
    trajectory, metrics = oracle_run
    assistant = [m for m in trajectory.messages if m.role == "assistant"]

    def oracle(request: dict) -> Reply:  # the oracle's n-th reply, its calls under the model's own ids
        message = assistant[sum(m["role"] == "assistant" for m in request["messages"])]
        calls = tuple(ToolCallReply(name=c.name, arguments=c.arguments, id=f"model-{c.id}") for c in message.tool_calls)
        return Reply(content=message.content, tool_calls=calls)

    (output,) = evaluate(environment, oracle)
    assert output["error"] is None and output["stop_condition"] == "has_final_env_response"
    assert output["reward"] == metrics.tsr.score == 1.0
    assert output["metrics"]["tsr"] == 1.0 and output["metrics"]["tue"] == metrics.tue.tue
    played = shiftbox.Trajectory.model_validate(output["shiftbox_trajectory"])
    assert played.canonical() == trajectory.canonical()  # the normal run's trajectory, call for call
    tool_ids = [m["tool_call_id"] for m in output["completion"] if m["role"] == "tool"]
    assert tool_ids and all(i.startswith("model-call_") for i in tool_ids)  # results answer the model's ids
    assert output["completion"][-1]["content"].endswith("###STOP###")


def test_a_model_that_never_calls_tools_scores_less_in_each_concurrent_rollout(environment):
    """Two rollouts of the task at once (a verifiers group): each its own simulation and episode, both scored as
    shiftbox scores their trajectories."""
    first, second = evaluate(environment, lambda request: Reply.text("How can I help you today?"), rollouts=2)
    for output in (first, second):
        played = shiftbox.Trajectory.model_validate(output["shiftbox_trajectory"])
        assert not played.tool_calls
        _, (scored,) = score_trajectories([played], {TASK_ID: shiftbox.load_task_file(TASKS).tasks[0]})
        assert output["reward"] == scored.tsr.score < 1.0
        assert output["shiftbox_metrics"] == scored.model_dump(mode="json")
    assert first["shiftbox_trajectory"]["messages"] == second["shiftbox_trajectory"]["messages"]  # same seed


def test_the_rubric_reward_is_a_choice_of_shiftbox_scores():
    rubric = shiftbox.rl.ShiftboxRubric("success")
    names = [f.__name__ for f in rubric.funcs]
    assert dict(zip(names, rubric.weights, strict=True)) == {"tsr": 0.0, "tue": 0.0, "action": 0.0,
                                                             "communicate_info": 0.0, "success": 1.0}


def test_an_option_planning_refuses_is_refused_when_the_environment_is_made():
    """Before any rollout, with the error `shiftbox run`'s planning gives (`plan_run`)."""
    with pytest.raises(shiftbox.RunPlanError) as expected:
        shiftbox.plan_run(TASKS, ".", max_steps=1)
    with pytest.raises(shiftbox.RunPlanError) as refused:
        shiftbox.rl.load_environment(str(TASKS), max_steps=1)
    assert str(refused.value) == str(expected.value)
