"""The fake OpenAI-compatible server as a program: `shiftbox fake-llm` and `python -m shiftbox.testing.fake_llm`
serve it on 127.0.0.1 until Ctrl-C, and a `shiftbox run` with LLM agent and user (and the `cmd:` example agent)
runs against it offline with the options it prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from shiftbox.runs import score_run
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, REPO

pytestmark = pytest.mark.slow
ENV = {**os.environ, "OPENAI_API_KEY": "sk-fake", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # `python`: this environment's


class Served:
    """The program running, its printed lines read up to the usage lines."""

    def __init__(self, *command: str):
        self.proc = subprocess.Popen([sys.executable, *command], cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = [self.proc.stdout.readline() for _ in range(5)]
        found = re.search(r"http://127\.0\.0\.1:\d+/v1", self.lines[0])
        assert found, "".join(self.lines) + self.proc.stderr.read()
        self.base_url = found.group(0)

    def option(self, label: str) -> list[str]:
        """The options a usage line gives (after its label), split as a shell would."""
        line = next(x for x in self.lines if x.startswith(label))
        return shlex.split(line.split(":", 1)[1])

    def interrupt(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


def complete(base_url: str, text: str) -> dict:
    body = json.dumps({"model": "anything", "messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def shiftbox_run(out, *roles: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks",
                           str(HANDWRITTEN), "--task-id", "hw_banking_001", "--out", str(out), *roles],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)


def test_shiftbox_fake_llm_serves_the_llm_and_cmd_paths_of_shiftbox_run(tmp_path):
    served = Served("-m", "shiftbox.cli", "fake-llm", "--port", "0", "--tasks", str(HANDWRITTEN))
    try:
        assert "OPENAI_API_KEY=sk-fake" in "".join(served.lines)
        answer = complete(served.base_url, "Hi")  # as the agent of a conversation not begun: asks who calls
        assert answer["choices"][0]["message"]["content"].startswith("Hello!")
        llm = shiftbox_run(tmp_path / "llm", *served.option("litellm agent and user"))
        assert llm.returncode == 0, llm.stdout + llm.stderr
        cmd = shiftbox_run(tmp_path / "cmd", *served.option("example cmd agent"), "--user", "scripted")
        assert cmd.returncode == 0, cmd.stdout + cmd.stderr
    finally:
        code, out, err = served.interrupt()
    assert code == 0, err
    assert re.search(r"stopped after [1-9]\d* completions", err)
    for run in ("llm", "cmd"):
        [t] = read_trajectories(tmp_path / run)
        assert t.termination.reason == "user_stop", (run, t.termination)
        assert score_run(tmp_path / run)[0].tsr.mean == 1.0, run  # the scripted model makes every gold call


def test_python_m_fake_llm_serves_it_too(tmp_path):
    served = Served("-m", "shiftbox.testing.fake_llm", "--port", "0")
    try:
        assert complete(served.base_url, "Hi")["object"] == "chat.completion"
    finally:
        code, out, err = served.interrupt()
    assert code == 0 and "stopped after 1 completions" in out
    assert "Warning" not in err, err


def test_a_missing_task_file_is_an_input_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "shiftbox.cli", "fake-llm", "--port", "0", "--tasks",
                           str(tmp_path / "nope.json")], cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "nope.json does not exist" in done.stderr


def test_ctrl_c_while_it_still_announces_stops_it_cleanly():
    """Regression (a CI run's `python -m ... fake_llm` died of SIGINT, exit -2): Ctrl-C that lands after the server
    started but before it waits (a reader that has its lines may interrupt while the last ones are printed) stops it
    as Ctrl-C during the wait does: the count returned, the server stopped."""
    from shiftbox.testing.fake_llm import serve_fake_llm

    said: list[str] = []

    def announce(line: str) -> None:
        said.append(line)
        if len(said) == 3:  # the last announcement: the usage lines
            raise KeyboardInterrupt

    assert serve_fake_llm([HANDWRITTEN], port=0, announce=announce) == 0
    base_url = re.search(r"http://127\.0\.0\.1:\d+/v1", said[0]).group(0)
    with pytest.raises(OSError):  # stopped: nothing listens there any more
        complete(base_url, "Hi")
