"""The HTTP environment server (`shiftbox env-server`, OpenEnv's reset/step/state) started as its own process and
driven with plain HTTP: two sessions played interleaved keep to their own episodes, the oracle's reply replayed
gets reward 1.0, refusals name the fix, and stopping the server leaves nothing running."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.client.harness import HANDWRITTEN, alive, descendants
from tests.client.rl.conftest import TASK_ID
from tests.client.rl.test_gym_env import TALKER, oracle_replies


@pytest.fixture
def server():
    """`shiftbox env-server --port 0` in a process of its own; its URL read from the line it prints when ready."""
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    process = subprocess.Popen([sys.executable, "-m", "shiftbox.cli", "env-server", "--tasks", str(HANDWRITTEN),
                                "--port", "0"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert match, f"the server did not start: {line}{process.stderr.read() if process.poll() is not None else ''}"
        yield process, match.group(0)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_two_sessions_over_http_play_their_own_episodes_and_the_oracle_scores_one(server, oracle_run):
    process, url = server
    trajectory, metrics = oracle_run
    with httpx.Client(base_url=url, timeout=60) as http:
        assert http.get("/health").json() == {"status": "healthy"}
        opened = {s: http.post("/reset", json={"task_id": TASK_ID, "session_id": s}).json() for s in ("a", "b")}
        for body in opened.values():
            assert (body["reward"], body["done"]) == (None, False)
            assert body["observation"]["messages"] == [{"role": "user", "content": trajectory.messages[0].content}]
            assert {t["function"]["name"] for t in body["observation"]["tools"]} >= {"get_customer_by_phone"}
        ended = {}
        replies = iter(oracle_replies(trajectory))
        while len(ended) < 2:
            for session in ("a", "b"):
                if session not in ended:
                    action = next(replies) if session == "a" else TALKER
                    body = http.post("/step", json={"action": action, "session_id": session}).json()
                    if body["done"]:
                        ended[session] = body
        state = {s: http.get("/state", params={"session_id": s}).json() for s in ("a", "b")}
        refused = http.post("/step", json={"action": TALKER, "session_id": "a"})
        unknown = http.post("/reset", json={"task_id": "nope"})
        no_session = http.get("/state", params={"session_id": "c"})
        malformed = http.post("/step", json={"message": "hi"})
    assert ended["a"]["reward"] == metrics.tsr.score == 1.0 and ended["b"]["reward"] < 1.0
    assert ended["a"]["observation"]["metrics"] == {**metrics.model_dump(mode="json"), "agent": "rl:policy"}
    assert state["a"]["trajectory"]["final_state"] == trajectory.final_state
    assert state["b"]["trajectory"]["final_state"] != trajectory.final_state
    assert not state["b"]["trajectory"]["tool_calls"]
    assert (state["a"]["task_id"], state["a"]["done"], state["a"]["episode_id"]) == (TASK_ID, True, f"{TASK_ID}.0.1")
    assert state["a"]["step_count"] == len(oracle_replies(trajectory))
    assert refused.status_code == 409 and "POST /reset" in refused.json()["detail"]
    assert unknown.status_code == 404 and "hw_banking_001" in unknown.json()["detail"]
    assert no_session.status_code == 404 and malformed.status_code == 422
    children = descendants(process.pid)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130  # interrupted, as every shiftbox command exits on Ctrl-C
    assert not [pid for pid in children if alive(pid)]


def test_the_server_listens_on_loopback_only(server):
    process, url = server
    assert url.startswith("http://127.0.0.1:")
    port = int(url.rsplit(":", 1)[1])
    listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    ours = [fields[1] for fields in listening if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A"]
    assert ours == ["0100007F:" + f"{port:04X}"]  # 127.0.0.1, not 0.0.0.0
