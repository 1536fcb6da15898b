"""The Gymnasium environments (shiftbox.rl.gym_envs) checked by Gymnasium's own env checker, played to the normal
run's trajectory and reward, and stepped four at once in one process with each episode kept to itself."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import threading
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from shiftbox.rl import ENV_ID, ShiftboxGymEnv, ShiftboxVectorEnv
from tests.client.harness import HANDWRITTEN, REPO
from tests.client.rl.conftest import TASK_ID
from tests.client.rl.test_gym_env import TALKER, oracle_replies

MAKE_ID = f"shiftbox.rl.gym_envs:{ENV_ID}"
"""Gymnasium's `module:id` form: importing the module registers the id."""


def as_actions(replies: list[dict]) -> list[str]:
    """The oracle's replies as a text policy writes them: JSON objects with content and tool_calls."""
    return [json.dumps({k: v for k, v in reply.items() if k != "role"}) for reply in replies]


def test_gymnasiums_env_checker_passes_without_a_warning():
    env = gymnasium.make(MAKE_ID, tasks=str(HANDWRITTEN), task_id=TASK_ID)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        assert [str(w.message) for w in caught if "gymnasium" in w.filename] == []
        assert isinstance(env.unwrapped, ShiftboxGymEnv) and env.spec.id == ENV_ID
    finally:
        env.close()


def test_replaying_the_oracle_as_text_gets_the_runs_trajectory_and_reward_one(oracle_run):
    trajectory, metrics = oracle_run
    threads = set(threading.enumerate())
    env = gymnasium.make(MAKE_ID, tasks=str(HANDWRITTEN), agent_name="scripted:oracle")
    observation, info = env.reset(seed=7, options={"task_id": TASK_ID})
    assert json.loads(observation) == [{"role": "user", "content": trajectory.messages[0].content}]
    assert info["task_id"] == TASK_ID and info["policy"] in info["system_prompt"]
    assert {t["function"]["name"] for t in info["tools"]} >= {"get_customer_by_phone", "file_dispute"}
    for action in as_actions(oracle_replies(trajectory)):
        observation, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    env.close()
    env.close()  # twice is fine
    assert (reward, terminated, truncated) == (1.0, True, False) and metrics.tsr.score == 1.0
    assert info["trajectory"].canonical() == trajectory.canonical()
    assert set(threading.enumerate()) == threads  # the event loop thread is stopped


def test_reset_draws_the_task_from_its_seed_and_a_cut_off_episode_is_truncated():
    env = ShiftboxGymEnv(HANDWRITTEN, max_steps=4)
    try:
        drawn = {env.reset(seed=seed)[1]["task_id"] for seed in range(40)}
        assert drawn == set(env.shiftbox_env.tasks)  # every task can be drawn
        first, again = (env.reset(seed=3)[1]["task_id"] for _ in range(2))
        assert first == again  # and a seed always draws the same one
        env.reset(options={"task_id": TASK_ID})
        ended = [env.step("How can I help you today?") for _ in range(2)][-1]
        _, reward, terminated, truncated, info = ended
        assert (terminated, truncated) == (False, True)
        assert info["trajectory"].termination.reason == "max_steps"
    finally:
        env.close()


def test_four_environments_step_concurrently_in_one_process_each_in_its_own_episode(oracle_run):
    """Environments 0 and 2 replay the oracle, 1 and 3 only talk: every step enters all four before any returns,
    the oracles end in the oracle run's final state and the talkers in a state nobody touched."""
    trajectory, _ = oracle_run
    actions = as_actions(oracle_replies(trajectory))
    vector = gymnasium.make_vec(MAKE_ID, num_envs=4, vectorization_mode="vector_entry_point",
                                tasks=str(HANDWRITTEN), task_id=TASK_ID)
    assert isinstance(vector, ShiftboxVectorEnv)
    log: list[tuple[str, int]] = []
    for i, env in enumerate(vector.envs):
        step = env.step

        async def logged(message, i=i, step=step):
            log.append(("in", i))
            try:
                return await step(message)
            finally:
                log.append(("out", i))

        env.step = logged
    try:
        observations, infos = vector.reset(seed=0)
        assert len(set(observations)) == 1 and list(infos["task_id"]) == [TASK_ID] * 4
        ended: dict[int, tuple] = {}  # each environment's first episode: reward, trajectory
        talk = json.dumps({"content": TALKER["content"]})
        done = [False] * 4
        for turn in range(100):
            if len(ended) == 4:
                break
            step_actions = [actions[min(turn, len(actions) - 1)] if i % 2 == 0 else talk for i in range(4)]
            log.clear()
            observations, rewards, terminated, truncated, infos = vector.step(step_actions)
            stepped = [i for i in range(4) if not done[i]]  # the others were reset (next-step autoreset)
            assert log[:len(stepped)] == [("in", i) for i in stepped]  # all handed their action at once
            for i in range(4):
                if done[i]:  # the step after an end resets that environment, its action ignored
                    assert json.loads(observations[i])[0]["role"] == "user" and rewards[i] == 0.0
                    assert infos["task_id"][i] == TASK_ID
                elif (terminated[i] or truncated[i]) and i not in ended:
                    ended[i] = (float(rewards[i]), infos["trajectory"][i])
            done = list(terminated | truncated)
        assert sorted(ended) == [0, 1, 2, 3]
    finally:
        vector.close()
    assert ended[0][0] == ended[2][0] == 1.0 and ended[1][0] < 1.0 and ended[3][0] < 1.0
    assert ended[0][1].final_state == ended[2][1].final_state == trajectory.final_state
    assert ended[1][1].final_state == ended[3][1].final_state != trajectory.final_state
    assert not ended[1][1].tool_calls and not ended[3][1].tool_calls


def test_the_gymnasium_names_say_how_to_get_the_extra():
    code = ("import sys, shiftbox.rl\n"
            "print('gymnasium' in sys.modules)\n"
            "sys.modules['gymnasium'] = None\n"
            "try:\n    shiftbox.rl.ShiftboxGymEnv\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    loaded, message = out.stdout.splitlines()
    assert loaded == "False"  # `import shiftbox.rl` does not load Gymnasium
    assert "pip install 'shiftbox[gym]'" in message


def test_a_world_is_refused_as_it_cannot_cross_event_loops():
    with pytest.raises(TypeError, match="world= cannot be shared"):
        ShiftboxGymEnv(HANDWRITTEN, world=object())


def doc_blocks(heading: str) -> list[str]:
    """docs/rl.md's Python blocks under `heading` (up to the next `## ` heading)."""
    section = (REPO / "docs" / "rl.md").read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_rl_pages_gymnasium_examples_run_as_written(tmp_path, monkeypatch, capsys):
    (tmp_path / "snapshots").symlink_to(REPO / "snapshots")
    monkeypatch.chdir(tmp_path)
    single, vector = doc_blocks("## Gymnasium")
    exec(compile(single, "docs/rl.md", "exec"), {"__name__": "__main__"})
    user, result = capsys.readouterr().out.splitlines()
    assert user.startswith("user: ") and len(user) > 20
    assert float(re.fullmatch(r"reward (\S+), ended by user_stop", result).group(1)) < 1.0
    exec(compile(vector, "docs/rl.md", "exec"), {"__name__": "__main__"})
    tasks, rewards = capsys.readouterr().out.splitlines()
    assert len(set(ast.literal_eval(tasks.removeprefix("tasks: ")))) > 1  # each environment drew its own task
    assert ast.literal_eval(rewards.removeprefix("rewards: ")) == [0.0] * 4
