"""The verifiers environment driven by verifiers' own CLI (`vf-eval shiftbox-verifiers ...`, verifiers 0.4) with a
scripted model on the local fake OpenAI server: replaying the oracle's replies scores 1.0, the run's score; a model
that never calls a tool scores less, as shiftbox scores its trajectory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import shiftbox
import shiftbox.rl
from shiftbox.runs import score_trajectories
from shiftbox.testing import Reply, ToolCallReply, fake_openai
from tests.client.harness import HANDWRITTEN
from tests.client.rl.conftest import TASK_ID

pytest.importorskip("verifiers.v1", reason="the optional extra shiftbox[verifiers] (verifiers 0.4) is not installed: "
                    "`make env` leaves it out (it conflicts with the inspect extra and the examples group, "
                    "[tool.uv] conflicts); `make test-floor` runs this test in .venv-floor, which has it")

TASKS = HANDWRITTEN
VF_EVAL = Path(sys.executable).with_name("vf-eval")
VF_EVAL_TIMEOUT = 600
"""Seconds: importing verifiers alone takes about 10 s of CPU (40 s on a loaded two-core machine)."""


def vf_eval(tmp_path: Path, script, *flags: str) -> tuple[list[dict], list[dict]]:
    """`vf-eval shiftbox-verifiers` on the one task, the model answering from `script` on the fake server, offline
    (no upload): the episodes it wrote to traces.jsonl, and the model requests the server answered."""
    with fake_openai(script) as server:
        command = [str(VF_EVAL), "shiftbox-verifiers", "-m", "fake-model", "--client.base-url", server.base_url,
                   "--client.api-key-var", "SHIFTBOX_TEST_KEY", "--no-push", "-o", str(tmp_path), "--run.dir", "run",
                   "--env.taskset.tasks", str(TASKS), "--select.include.ids", TASK_ID,
                   "--env.taskset.options", json.dumps({"agent_name": "scripted:oracle"}), *flags]
        done = subprocess.run(command, env={**os.environ, "SHIFTBOX_TEST_KEY": "sk-test"}, capture_output=True,
                              text=True, timeout=VF_EVAL_TIMEOUT)
        requests = list(server.requests)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    episodes = [json.loads(line) for line in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    assert all(e["ok"] and not e["errors"] for e in episodes), [e["errors"] for e in episodes]
    return episodes, requests


@pytest.mark.slow
@pytest.mark.timeout(VF_EVAL_TIMEOUT + 60)
def test_replaying_the_oracle_scores_one_with_the_runs_trajectory(tmp_path, oracle_run):
    trajectory, metrics = oracle_run
    assistant = [m for m in trajectory.messages if m.role == "assistant"]

    def oracle(request: dict) -> Reply:  # the oracle's n-th reply, its calls under the model's own ids
        message = assistant[sum(m["role"] == "assistant" for m in request["messages"])]
        calls = tuple(ToolCallReply(name=c.name, arguments=c.arguments, id=f"model-{c.id}") for c in message.tool_calls)
        return Reply(content=message.content, tool_calls=calls)

    (episode,), requests = vf_eval(tmp_path, oracle)
    (trace,) = episode["traces"]
    assert trace["rewards"] == {"tsr": {"score": 1.0, "weight": 1.0}} and metrics.tsr.score == 1.0
    assert trace["metrics"]["tue"] == metrics.tue.tue and trace["metrics"]["success"] == 1.0
    played = shiftbox.Trajectory.model_validate(trace["info"]["shiftbox_trajectory"])
    assert played.canonical() == trajectory.canonical()  # the normal run's trajectory, call for call
    assert played.messages[-1].content.endswith("###STOP###")  # ended by the user simulator
    assert len(requests) == len(assistant)  # one model call a turn
    seen = requests[-1]["messages"]
    assert seen[0]["role"] == "system" and seen[1] == {"role": "user", "content": trajectory.messages[0].content}
    tool_ids = [m["tool_call_id"] for m in seen if m["role"] == "tool"]
    assert tool_ids and all(i.startswith("model-call_") for i in tool_ids)  # results answer the model's ids
    assert {t["function"]["name"] for t in requests[0]["tools"]} >= {c.name for c in trajectory.tool_calls}


@pytest.mark.slow
@pytest.mark.timeout(VF_EVAL_TIMEOUT + 60)
def test_a_model_that_never_calls_tools_scores_less_in_each_concurrent_rollout(tmp_path):
    """Two rollouts of the task at once (`-r 2`, a verifiers group), rewarded by `success`: each its own simulation
    and episode, both scored as shiftbox scores their trajectories."""
    episodes, _ = vf_eval(tmp_path, lambda request: Reply.text("How can I help you today?"), "-r", "2",
                          "--env.taskset.task.reward", "success")
    assert len(episodes) == 2
    played = []
    for episode in episodes:
        (trace,) = episode["traces"]
        trajectory = shiftbox.Trajectory.model_validate(trace["info"]["shiftbox_trajectory"])
        assert not trajectory.tool_calls
        _, (scored,) = score_trajectories([trajectory], {TASK_ID: shiftbox.load_task_file(TASKS).tasks[0]})
        assert scored.tsr.score < 1.0 and not scored.success
        assert trace["rewards"] == {"success": {"score": 0.0, "weight": 1.0}}
        assert trace["metrics"] == {"tsr": scored.tsr.score, "tue": scored.tue.tue or 0.0, "action": scored.tsr.action or 0.0,
                                    "communicate_info": scored.tsr.communicate_info or 0.0}
        assert trace["info"]["shiftbox_metrics"] == scored.model_dump(mode="json")
        played.append(trajectory.messages)
    assert played[0] == played[1]  # same task, trial and seed


def test_the_reward_is_a_choice_of_shiftbox_scores():
    from shiftbox.rl._verifiers_env import ShiftboxTaskConfig

    assert ShiftboxTaskConfig(reward="tue").reward == "tue"
    with pytest.raises(ValueError, match="unknown reward 'nope'; choose one of tsr, success"):
        ShiftboxTaskConfig(reward="nope")


def test_an_option_planning_refuses_is_refused_when_the_environment_is_made():
    """Before any rollout, with the error `shiftbox run`'s planning gives (`plan_run`)."""
    with pytest.raises(shiftbox.RunPlanError) as expected:
        shiftbox.plan_run(TASKS, ".", max_steps=1)
    with pytest.raises(shiftbox.RunPlanError) as refused:
        shiftbox.rl.load_environment(str(TASKS), max_steps=1)
    assert str(refused.value) == str(expected.value)


def test_the_environment_has_one_task_per_task_and_trial():
    env = shiftbox.rl.load_environment(str(TASKS), trials=2)
    tasks = list(env.taskset)
    ids = [t.id for t in shiftbox.load_task_file(TASKS).tasks]
    assert [(t.data.task_id, t.data.trial) for t in tasks] == [(i, n) for i in ids for n in range(2)]
    assert isinstance(env, shiftbox.rl.ShiftboxVerifiersEnv)
