"""The gym-style environment is planned as a run is (issue 31 item 3): an episode is the simulation the same agent
gives on shiftbox's own simulation path (trajectory, reward, episode ids), its options are checked by `plan_run`
and refused with planning's error, and the plan's limits and snapshot are the ones it runs with."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import shiftbox
from shiftbox.agents import Agent, AgentContext, AgentReply
from shiftbox.cli import app
from shiftbox.orchestrator import SimulationLimits, run_simulation
from shiftbox.rl import ShiftboxEnv
from shiftbox.runs import RunPlanError, plan_run, score_trajectories
from shiftbox.tasks import load_task_file
from shiftbox.users import ScriptedUser
from tests.client.harness import HANDWRITTEN
from tests.client.rl.conftest import TASK_ID

pytestmark = pytest.mark.anyio

TASKS = {t.id: t for t in load_task_file(HANDWRITTEN).tasks}
TALK = "How can I help you today?"


class Talker(Agent):
    """Says `TALK` every turn and never calls a tool: the policy the environment is stepped with, as an agent."""

    def __init__(self, name: str):
        self.name = name

    async def start(self, context: AgentContext) -> None:
        return None

    async def respond(self, messages) -> AgentReply:
        return AgentReply(content=TALK)


async def play_talker(env: ShiftboxEnv, task: str = TASK_ID) -> tuple[float, dict]:
    await env.reset(task)
    for _ in range(200):
        _, reward, done, info = await env.step({"role": "assistant", "content": TALK})
        if done:
            return reward, info
    raise AssertionError("the simulation did not end")


async def test_an_episode_is_the_simulation_its_agent_gives_on_shiftboxs_own_path():
    """Recorded before the environment was planned, kept after: the trajectory (as JSON) of a talking policy is the
    orchestrator's, run by hand with the same agent, user, seed and default limits; the reward is its TSR as
    `score_trajectories` gives it; episode ids are `rl.<task>.<trial>.<8 hex>`, fresh for every reset."""
    task = TASKS[TASK_ID]
    async with shiftbox.open_world("banking") as world:
        expected = await run_simulation(task, 0, 7, Talker("rl:policy"), ScriptedUser(), world, SimulationLimits())
        opened: list[str] = []
        episode = world.episode
        world.episode = lambda episode_id: (opened.append(episode_id), episode(episode_id))[1]  # type: ignore[method-assign]
        async with ShiftboxEnv(HANDWRITTEN, seed=7, world=world) as env:
            reward, info = await play_talker(env)
            await play_talker(env)
    got = info["trajectory"]
    assert got.canonical_json() == expected.canonical_json()
    assert got.agent == "rl:policy" and got.seed == expected.seed
    _, (scored,) = score_trajectories([expected], {TASK_ID: task})
    assert reward == scored.tsr.score < 1.0
    assert len(opened) == 2 and opened[0] != opened[1]
    assert all(re.fullmatch(rf"rl\.{TASK_ID}\.0\.[0-9a-f]{{8}}", i) for i in opened), opened


def planning_error(**options) -> RunPlanError:
    with pytest.raises(RunPlanError) as refused:
        plan_run(HANDWRITTEN, ".", **options)
    return refused.value


@pytest.mark.parametrize(("options", "cli"), [
    ({"max_steps": 1}, ["--max-steps", "1"]),
    ({"servers": "nowhere"}, ["--servers", "nowhere"]),
    ({"user": "nobody:at-all"}, ["--user", "nobody:at-all"]),
    ({"policy": "mine"}, ["--policy", "mine"]),
    ({"graph_refusal": True}, ["--graph-refusal"]),
])
def test_an_option_planning_refuses_is_refused_as_shiftbox_run_refuses_it(options, cli, tmp_path):
    """The environment is made through `plan_run`: the same error class and message, when it is made."""
    expected = planning_error(**options)
    with pytest.raises(RunPlanError) as refused:
        ShiftboxEnv(HANDWRITTEN, **options)
    assert str(refused.value) == str(expected)
    res = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(tmp_path / "r"), *cli])
    assert res.exit_code == 2
    if "servers" not in options and "policy" not in options:  # typer's own choice check answers those first
        assert " ".join(str(expected).split()) in " ".join(res.output.split())


async def test_the_plans_limits_and_policy_are_what_an_episode_runs_with():
    async with ShiftboxEnv(HANDWRITTEN, max_steps=4, policy="none") as env:
        observation = await env.reset(TASK_ID)
        assert observation.policy == "" and observation.tools
        reward, info = await play_talker(env)
    trajectory = info["trajectory"]
    assert trajectory.termination.reason == "max_steps"
    assert len(trajectory.messages) == 4 and reward < 1.0


def test_the_snapshot_is_resolved_by_planning():
    """A task file written for a snapshot that is not there is refused naming it, as `shiftbox run` refuses it;
    in-memory tasks (a `TaskFile` or a list of tasks) are planned too."""
    written = load_task_file(HANDWRITTEN).model_copy(update={"snapshot": "banking/not-here"})
    with pytest.raises(RunPlanError) as expected:
        plan_run(written, ".")
    with pytest.raises(RunPlanError) as refused:
        ShiftboxEnv(written)
    assert str(refused.value) == str(expected.value) and "banking/not-here" in str(expected.value)
    assert set(ShiftboxEnv(list(TASKS.values())).tasks) == set(TASKS)
