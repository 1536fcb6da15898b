"""`shiftbox serve-assessor`: shiftbox as an A2A assessor ("green") agent, asked over A2A to assess a participant
(tests/client/agents/text_only_agent.py, which reads only message text), answering with the run's metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from a2a.client import ClientConfig, ClientFactory  # noqa: E402
from a2a.helpers import get_data_parts, get_text_parts, new_text_part  # noqa: E402
from a2a.types import Message, Role, SendMessageRequest, TaskState  # noqa: E402

from shiftbox.assessor import AssessorSettings, assessor_app  # noqa: E402
from shiftbox.trajectory import read_trajectories  # noqa: E402
from tests.client.agents import text_only_agent  # noqa: E402
from tests.client.agents.test_a2a_agent import TASKS, serving  # noqa: E402
from tests.client.harness import REPO  # noqa: E402


async def ask(url: str, text: str) -> tuple[int, list[str], list[Any]]:
    """Send one message to the assessor; (final task state, every status text said, the final task's artifacts)."""
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_text_part(text)])
    said, state, artifacts = [], None, []
    async with httpx.AsyncClient(timeout=300) as http:
        client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(url)
        async for response in client.send_message(SendMessageRequest(message=message)):
            if response.HasField("task"):
                state, artifacts = response.task.status.state, list(response.task.artifacts)
            if response.HasField("status_update"):
                state = response.status_update.status.state
                said += get_text_parts(response.status_update.status.message.parts)
            if response.HasField("artifact_update"):
                artifacts.append(response.artifact_update.artifact)
    return state, said, artifacts


def request(participant: str, **config: Any) -> str:
    return json.dumps({"participants": {"agent": participant}, "config": config})


def test_the_assessor_runs_its_tasks_against_the_participant_and_answers_the_metrics(tmp_path):
    settings = AssessorSettings(tasks=TASKS, out=tmp_path / "assessments")
    with serving(text_only_agent.build_app) as participant, \
            serving(lambda url: assessor_app(url, settings)) as assessor:
        state, said, artifacts = anyio.run(ask, assessor, request(participant, trials=2))
    assert state == TaskState.TASK_STATE_COMPLETED, said
    run_dir = tmp_path / "assessments" / "assessment-0001"
    assert said[0] == f"Assessing {participant} into {run_dir}"
    assert sorted(said[1:]) == ["a2a_banking_001 trial 0: user_stop", "a2a_banking_001 trial 1: user_stop"]
    [artifact] = artifacts
    [summary] = get_text_parts(artifact.parts)
    [result] = get_data_parts(artifact.parts)
    # two simulations, each with the two gold calls and nothing else (test_a2a_text_handover): TSR = TUE = 1
    assert result["participant"] == participant and result["run_dir"] == str(run_dir)
    assert (result["simulations"], result["scored_simulations"]) == (2, 2)
    assert result["headlines"]["tsr"] == 1.0 and result["headlines"]["tue"] == 1.0
    assert summary.startswith(f"Assessed {participant}: 2 of 2 simulations scored; TSR 1.000, TUE 1.000")
    trajectories = read_trajectories(run_dir)
    assert [t.agent for t in trajectories] == [f"a2a:{participant}"] * 2
    assert all(len(t.tool_calls) == 2 for t in trajectories)


def test_a_request_that_does_not_fit_is_rejected_and_an_absent_participant_fails_the_task(tmp_path):
    settings = AssessorSettings(tasks=TASKS, out=tmp_path / "assessments")
    with serving(lambda url: assessor_app(url, settings)) as assessor:
        state, said, _ = anyio.run(ask, assessor, "assess http://127.0.0.1:1 please")
        assert state == TaskState.TASK_STATE_REJECTED
        assert said[-1].startswith("the assessment request is not JSON") and '"participants"' in said[-1]
        state, said, _ = anyio.run(ask, assessor, json.dumps({"participants": {"a": "http://x", "b": "http://y"}}))
        assert state == TaskState.TASK_STATE_REJECTED and "exactly one participant (got 2)" in said[-1]
        state, said, _ = anyio.run(ask, assessor, request("http://127.0.0.1:1", trials=0))
        assert state == TaskState.TASK_STATE_REJECTED and "config.trials: Input should be greater than" in said[-1]
        state, said, _ = anyio.run(ask, assessor, request("http://127.0.0.1:1"))
        assert state == TaskState.TASK_STATE_FAILED
        assert said[-1].startswith("the assessment of http://127.0.0.1:1 failed:")
        assert "no A2A agent answers at http://127.0.0.1:1" in said[-1]


def test_serve_assessor_serves_on_loopback_and_assesses_over_a2a(tmp_path):
    """The command as a user runs it (a process of its own, port 0), asked by an A2A client."""
    env = {**os.environ, "SHIFTBOX_SNAPSHOTS": str(REPO / "snapshots")}
    command = [str(Path(sys.executable).parent / "shiftbox"), "serve-assessor", "--tasks", str(TASKS), "--out",
               str(tmp_path / "out"), "--port", "0"]
    server = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline().strip()
        assert line.startswith("shiftbox assessor at http://127.0.0.1:"), line
        with serving(text_only_agent.build_app) as participant:
            state, said, artifacts = anyio.run(ask, line.rsplit(" ", 1)[1], request(participant))
        assert state == TaskState.TASK_STATE_COMPLETED, said
        [result] = get_data_parts(artifacts[0].parts)
        assert result["headlines"]["tsr"] == 1.0
        assert len(read_trajectories(tmp_path / "out" / "assessment-0001")) == 1
    finally:
        server.terminate()
        server.wait(30)


def test_a_task_file_that_does_not_load_is_refused_before_serving(tmp_path):
    from typer.testing import CliRunner

    from shiftbox.cli import app

    deep = tmp_path / "tasks.json"
    deep.write_text("[" * 1000 + "]" * 1000)
    res = CliRunner().invoke(app, ["serve-assessor", "--tasks", str(deep), "--port", "0"])
    assert res.exit_code == 2 and f"{deep}: nested deeper than" in res.output
    res = CliRunner().invoke(app, ["serve-assessor", "--tasks", str(tmp_path / "none.json"), "--port", "0"])
    assert res.exit_code == 2 and "none.json: cannot read the file" in res.output
