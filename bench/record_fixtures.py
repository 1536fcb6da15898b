"""Re-record the committed fixtures: LLM agent and LLM user (litellm) against the local fake server.

    uv run python bench/record_fixtures.py banking retail

Each domain's hand-written tasks are run once with both roles played by `ScriptedLLM` behind the
fake OpenAI-compatible server on 127.0.0.1, and recorded to fixtures/<domain>-litellm/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from shiftbox.tasks import load_task_file
from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.testing.fake_openai import fake_openai

REPO = Path(__file__).resolve().parents[1]


def record(domain: str) -> int:
    tasks_path = Path("snapshots") / domain / "v1" / "tasks-handwritten.json"
    fixture = Path("fixtures") / f"{domain}-litellm"
    shutil.rmtree(REPO / fixture, ignore_errors=True)
    tasks = load_task_file(REPO / tasks_path).tasks
    with fake_openai(ScriptedLLM(tasks)) as server, tempfile.TemporaryDirectory() as tmp:
        args = []
        for role in ("agent", "user"):
            args += [f"--{role}", "litellm:openai/fake-model", f"--{role}-arg", f"api_base={server.base_url}",
                     f"--{role}-arg", "api_key_env=SHIFTBOX_FAKE_KEY"]
        cmd = ["shiftbox", "run", "--domain", domain, "--tasks", str(tasks_path), *args, "--trials", "2",
               "--concurrency", "4", "--out", str(Path(tmp) / "run"), "--record", str(fixture)]
        env = {**os.environ, "SHIFTBOX_FAKE_KEY": "sk-fake-recording-key"}
        return subprocess.run(cmd, cwd=REPO, env=env).returncode


if __name__ == "__main__":
    sys.exit(max(record(d) for d in sys.argv[1:] or ["banking"]))
