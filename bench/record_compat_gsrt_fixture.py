"""Re-record the compat GSRT judge cassettes of the rubric fixture, fixtures/banking-rubric/compat-gsrt-cassettes:
the AgentChangeBench GSRT judge asked about each of its simulations, against the local fake OpenAI-compatible
server with `ScriptedJudge` answering (no network).

    uv run python bench/record_compat_gsrt_fixture.py

Runs `shiftbox metrics fixtures/banking-rubric --compat agentchangebench --judge litellm:openai/fake-model
--judge-record fixtures/banking-rubric/compat-gsrt-cassettes`. bench/record_rubric_fixture.py calls it after
re-recording the run itself (the prompts contain the transcripts). CI replays the cassettes offline with
`--judge-replay` (tests/client/replay/test_compat_gsrt_fixture.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from shiftbox.testing.fake_brains import ScriptedJudge
from shiftbox.testing.fake_openai import fake_openai

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path("fixtures") / "banking-rubric"
CASSETTES = FIXTURE / "compat-gsrt-cassettes"
SHIFTBOX = [sys.executable, "-m", "shiftbox.cli"]


def record_compat_gsrt(env: dict[str, str]) -> int:
    shutil.rmtree(REPO / CASSETTES, ignore_errors=True)
    with fake_openai(ScriptedJudge()) as server:
        cmd = [*SHIFTBOX, "metrics", str(FIXTURE), "--compat", "agentchangebench", "--judge",
               "litellm:openai/fake-model", "--judge-arg", f"api_base={server.base_url}",
               "--judge-record", str(CASSETTES)]
        return subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL).returncode


def main() -> int:
    env = {**os.environ, "SHIFTBOX_FAKE_KEY": "sk-fake-recording-key", "OPENAI_API_KEY": "sk-fake-recording-key"}
    return record_compat_gsrt(env)


if __name__ == "__main__":
    sys.exit(main())
