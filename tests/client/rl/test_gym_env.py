"""The gym-style environment (shiftbox.rl.ShiftboxEnv) against shiftbox's normal run path: a policy replaying the
scripted oracle's replies gets the run's exact trajectory and score (1.0); a policy that never calls a tool
scores less; environments stepped interleaved stay in their own episodes; close leaves nothing running."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import shiftbox
from shiftbox.agents import AgentReply, to_openai_messages
from shiftbox.rl import (
    REWARDS,
    EnvironmentClosed,
    EnvironmentInUse,
    EpisodeTruncated,
    Observation,
    ShiftboxEnv,
    SyncShiftboxEnv,
)
from shiftbox.runs import score_trajectories
from tests.client.harness import HANDWRITTEN, REPO, alive, descendants
from tests.client.rl.conftest import TASK_ID

TASKS = HANDWRITTEN
TALKER = {"role": "assistant", "content": "How can I help you today?"}
"""The flawed policy's only reply: it talks, and never calls a tool."""

pytestmark = pytest.mark.anyio


def oracle_replies(trajectory: shiftbox.Trajectory) -> list[dict]:
    """The oracle's assistant messages, as an OpenAI-style policy would send them."""
    return to_openai_messages([m for m in trajectory.messages if m.role == "assistant"])


async def play(env: ShiftboxEnv, replies: list[dict]) -> tuple[float, dict]:
    for reply in replies:
        _, reward, done, info = await env.step(reply)
        if done:
            return reward, info
    raise AssertionError("the simulation did not end")


async def test_replaying_the_oracle_gets_the_runs_trajectory_and_reward_one(oracle_run):
    trajectory, metrics = oracle_run
    async with ShiftboxEnv(TASKS, agent_name="scripted:oracle") as env:
        observation = await env.reset(TASK_ID)
        assert [m["role"] for m in observation.messages] == ["user"]
        assert observation.messages[0]["content"] == trajectory.messages[0].content
        assert {t["function"]["name"] for t in observation.tools} >= {"get_customer_by_phone", "file_dispute"}
        assert observation.policy and observation.policy in observation.system_prompt
        reward, info = await play(env, oracle_replies(trajectory))
    assert metrics.tsr.score == 1.0
    assert reward == metrics.tsr.score
    assert info["metrics"].model_dump() == metrics.model_dump()
    assert info["trajectory"].canonical() == trajectory.canonical()  # the very trajectory of the normal run


async def test_observations_carry_the_policys_own_call_ids_and_no_assistant_messages(oracle_run):
    trajectory, _ = oracle_run
    replies = oracle_replies(trajectory)
    async with ShiftboxEnv(TASKS) as env:
        await env.reset(TASK_ID)
        await env.step(replies[0])  # asks who the user is
        call = dict(replies[1]["tool_calls"][0], id="policy-chose-this-id")
        observation, reward, done, _ = await env.step({**replies[1], "tool_calls": [call]})
    assert (reward, done) == (0.0, False)
    assert [(m["role"], m["tool_call_id"]) for m in observation.messages] == [("tool", "policy-chose-this-id")]
    assert json.loads(observation.messages[0]["content"])["customer_id"]


async def test_a_policy_that_never_calls_tools_scores_less_and_as_shiftbox_scores_it():
    async with ShiftboxEnv(TASKS) as env:
        await env.reset(TASK_ID)
        reward, info = await play(env, [TALKER] * 100)
    trajectory = info["trajectory"]
    assert not trajectory.tool_calls and trajectory.termination.reason == "user_stop"
    _, (scored,) = score_trajectories([trajectory], {TASK_ID: env.tasks[TASK_ID]})
    assert reward == scored.tsr.score < 1.0
    assert info["metrics"].model_dump() == scored.model_dump()


async def test_the_reward_is_any_per_simulation_score(oracle_run):
    trajectory, metrics = oracle_run
    async with ShiftboxEnv(TASKS, reward="tue") as env:
        await env.reset(TASK_ID)
        reward, _ = await play(env, oracle_replies(trajectory))
    assert reward == metrics.tue.tue == REWARDS["tue"](metrics)
    with pytest.raises(ValueError, match="unknown reward 'speed'; choose one of tsr, success"):
        ShiftboxEnv(TASKS, reward="speed")


async def test_two_environments_stepped_interleaved_change_only_their_own_episode(oracle_run):
    """One server for both (a shared world), one event loop, steps alternating: the oracle's episode ends in
    the oracle run's final state, the talker's in the state nobody touched."""
    trajectory, _ = oracle_run
    async with shiftbox.open_world("banking") as world:
        oracle, talker = ShiftboxEnv(TASKS, world=world), ShiftboxEnv(TASKS, world=world)
        await oracle.reset(TASK_ID)
        await talker.reset(TASK_ID)
        results = {}
        for reply in oracle_replies(trajectory):
            for env, message in ((oracle, reply), (talker, TALKER)):
                if env not in results:
                    _, reward, done, info = await env.step(message)
                    if done:
                        results[env] = (reward, info["trajectory"])
        while talker not in results:
            _, reward, done, info = await talker.step(TALKER)
            if done:
                results[talker] = (reward, info["trajectory"])
        await oracle.close()
        await talker.close()
    (oracle_reward, oracle_trajectory), (talker_reward, talker_trajectory) = results[oracle], results[talker]
    assert (oracle_reward, talker_reward < 1.0) == (1.0, True)
    assert oracle_trajectory.final_state == trajectory.final_state
    assert talker_trajectory.final_state != trajectory.final_state and not talker_trajectory.tool_calls
    untouched = await untouched_final_state()
    assert talker_trajectory.final_state == untouched


async def untouched_final_state() -> dict[str, str]:
    """The final state of the task's episode when the agent does nothing (setup calls only)."""
    async with ShiftboxEnv(TASKS) as env:
        await env.reset(TASK_ID)
        _, info = await env.truncate()
    return info["trajectory"].final_state


async def test_reset_twice_truncates_the_first_episode_and_close_leaves_nothing_running(oracle_run):
    trajectory, _ = oracle_run
    before = asyncio.all_tasks()
    env = ShiftboxEnv(TASKS)
    first = await env.reset(TASK_ID)
    await env.step(oracle_replies(trajectory)[0])
    second = await env.reset(TASK_ID)  # a fresh episode: the same opening, nothing carried over
    assert second.messages == first.messages
    reward, info = await play(env, oracle_replies(trajectory))
    assert reward == 1.0 and info["trajectory"].messages[0].content == first.messages[0]["content"]
    await env.reset(TASK_ID)
    reward, info = await env.truncate()
    assert info["trajectory"].termination.reason == "agent_error"
    assert EpisodeTruncated.__name__ in info["trajectory"].termination.detail
    await env.close()
    assert asyncio.all_tasks() == before  # no simulation, no server task left behind
    with pytest.raises(EnvironmentClosed, match="closed.*make a new ShiftboxEnv"):
        await env.step(TALKER)
    with pytest.raises(EnvironmentClosed, match=r"reset\(\) on a closed environment"):
        await env.reset(TASK_ID)  # issue 30 (Low): a closed environment opened its server again
    with pytest.raises(EnvironmentClosed):
        await env.truncate()
    await env.close()  # twice is fine
    assert asyncio.all_tasks() == before  # nothing reopened


async def test_a_step_before_reset_names_reset():
    async with ShiftboxEnv(TASKS) as env:
        with pytest.raises(RuntimeError, match="call reset"):
            await env.step(AgentReply(content="Hello"))


async def within(seconds: float, *calls):
    """The calls run concurrently; each one's result or exception (a hang fails the test, not the run)."""
    async with asyncio.timeout(seconds):
        return await asyncio.gather(*calls, return_exceptions=True)


async def test_two_concurrent_resets_are_refused_not_hung(oracle_run):
    """Issue 30 (Low): two concurrent `reset()` on an environment with a running episode never returned."""
    trajectory, _ = oracle_run
    async with ShiftboxEnv(TASKS) as env:
        await env.reset(TASK_ID)
        await env.step(oracle_replies(trajectory)[0])
        first, second = await within(30, env.reset(TASK_ID), env.reset(TASK_ID))
        assert isinstance(first, Observation) and first.messages[0]["role"] == "user"
        assert isinstance(second, EnvironmentInUse)
        assert re.search(r"reset\(\) while reset\(\) is still running.*await each call", str(second))
        reward, info = await play(env, oracle_replies(trajectory))  # the episode the first reset started
    assert reward == 1.0 and info["trajectory"].termination.reason != "agent_error"


async def test_concurrent_steps_are_refused_not_interleaved_into_one_conversation(oracle_run):
    """Issue 30 (Low): two concurrent `step()` calls both went into the one conversation."""
    trajectory, _ = oracle_run
    replies = oracle_replies(trajectory)
    async with ShiftboxEnv(TASKS) as env:
        await env.reset(TASK_ID)
        first, second = await within(30, env.step(replies[0]), env.step(TALKER))
        assert isinstance(first, tuple) and isinstance(second, EnvironmentInUse)
        assert "step() while step() is still running" in str(second)
        reward, info = await play(env, replies[1:])
    assert reward == 1.0
    sent = [m.content for m in info["trajectory"].messages if m.role == "assistant"]
    assert TALKER["content"] not in sent  # the refused step never reached the conversation


async def test_a_server_process_of_its_own_is_stopped_by_close():
    """With `servers="stdio"` the environment starts the domain server as a child process; close ends it."""
    before = set(descendants(os.getpid()))
    env = ShiftboxEnv(TASKS, servers="stdio")
    await env.reset(TASK_ID)
    _, reward, _, _ = await env.step(TALKER)
    started = set(descendants(os.getpid())) - before
    assert reward == 0.0 and started  # the server runs while the episode does
    await env.close()
    assert not [pid for pid in started if alive(pid)]


def test_the_sync_environment_blocks_on_the_same_calls_and_stops_its_thread(oracle_run):
    trajectory, metrics = oracle_run
    threads = set(threading.enumerate())
    with SyncShiftboxEnv(TASKS, agent_name="scripted:oracle") as env:
        assert env.reset(TASK_ID).messages[0]["content"] == trajectory.messages[0].content
        for reply in oracle_replies(trajectory):
            _, reward, done, info = env.step(reply)
    assert done and reward == metrics.tsr.score == 1.0
    assert info["trajectory"].canonical() == trajectory.canonical()
    env.close()  # twice is fine
    assert set(threading.enumerate()) == threads


def test_the_gym_env_needs_no_verifiers_and_says_how_to_get_the_verifiers_one():
    """`import shiftbox.rl` loads no verifiers; without the extra (made unimportable) load_environment names the
    install command."""
    code = ("import sys, shiftbox, shiftbox.rl\n"
            "print('verifiers' in sys.modules or 'datasets' in sys.modules)\n"
            "sys.modules['verifiers'] = None\n"
            "assert not shiftbox.rl.verifiers_installed()\n"
            "try:\n    shiftbox.rl.load_environment()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    loaded, message = out.stdout.splitlines()
    assert loaded == "False"
    assert "pip install 'shiftbox[verifiers]'" in message
    assert "uv sync --all-packages --extra verifiers --no-group examples" in message  # its own environment


def test_the_rl_page_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """docs/rl.md's first Python block, run in a scratch folder that holds the repository's snapshots path."""
    code = re.search(r"```python\n(.*?)```", (REPO / "docs" / "rl.md").read_text(), re.S).group(1)
    (tmp_path / "snapshots").symlink_to(REPO / "snapshots")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/rl.md", "exec"), {"__name__": "__main__"})
    user, result = capsys.readouterr().out.splitlines()
    assert user.startswith("user: ") and len(user) > 20
    reward, tsr = re.fullmatch(r"reward (\S+) \(TSR (\S+)\) after \d+ messages, ended by user_stop", result).groups()
    assert reward == tsr and float(reward) < 1.0


def test_an_ended_episode_leaves_no_stream_open():
    # Each episode talks to its policy over memory streams; left open, every reset leaked four of them until the
    # collector found them (Gymnasium's env checker printed 44 "Unclosed <MemoryObject...Stream>" ResourceWarnings).
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with SyncShiftboxEnv(TASKS) as env:
            for seed in range(3):
                env.reset(TASK_ID, trial=seed)
                env.step({"role": "assistant", "content": "Hello, how can I help?"})
            env.truncate()
        gc.collect()
    unclosed = [str(w.message) for w in caught if "MemoryObject" in str(w.message)]
    assert unclosed == []
