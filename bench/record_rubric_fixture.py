"""Re-record the rubric fixture, fixtures/banking-rubric: a small banking task set with VitaBench rubric items,
its conversations and its judge's calls, all against the local fake OpenAI-compatible server (no network).

    uv run python bench/record_rubric_fixture.py               # everything
    uv run python bench/record_rubric_fixture.py --judge-only  # step 2-3 only, on the committed conversations

1. Three hand-written banking tasks get the rubric items in RUBRIC, and one trial of each is run with the
   LLM agent and user played by `ScriptedLLM` and recorded with `shiftbox run --record fixtures/banking-rubric`
   (as bench/record_fixtures.py records the other fixtures).
2. `shiftbox metrics fixtures/banking-rubric --judge litellm:openai/fake-model` (JUDGE_ARGS: windows of 6
   messages, stride 4) with `--judge-record fixtures/banking-rubric/judge-cassettes` records every judge call
   (rubric windows, NL assertions, acknowledgments) with `ScriptedJudge` answering.
3. The verdicts are kept in judge-verdicts.json (`verdicts_of` the metrics; metrics.json itself is not kept).
4. The compat GSRT judge's cassettes are recorded again (bench/record_compat_gsrt_fixture.py).

CI replays step 2 offline with `--judge-replay` and asserts the same verdicts
(tests/client/replay/test_rubric_fixture.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from record_compat_gsrt_fixture import record_compat_gsrt

from shiftbox.tasks import load_task_file
from shiftbox.testing.fake_brains import ScriptedJudge, ScriptedLLM
from shiftbox.testing.fake_openai import fake_openai

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path("fixtures") / "banking-rubric"
JUDGE = "litellm:openai/fake-model"
JUDGE_ARGS = ["--judge-arg", "rubric_window=6", "--judge-arg", "rubric_stride=4"]
VERDICTS_FILE = "judge-verdicts.json"
SHIFTBOX = [sys.executable, "-m", "shiftbox.cli"]
# ScriptedJudge meets an item in a window that shows every "quoted" phrase of it
RUBRIC = {
    "hw_banking_001": [
        "The agent asks for the customer's \"phone number\" before anything else.",
        "The agent looks the customer up (\"get_customer_by_phone\").",
        "The agent files the dispute (\"file_dispute\") and the result gives its id (\"disp_000013\").",
        "When the customer raises another request (\"I also need help with transactions\"), the agent confirms "
        "it (\"Your transactions request is done\").",
        "The agent offers the customer a \"credit limit increase\".",
    ],
    "hw_banking_002": [
        "The agent asks for the customer's \"phone number\".",
        "The agent unlocks the card (\"unlock_card\") and the card ends up \"Active\".",
        "The customer ends the call (\"that is everything\") after asking about statements again "
        "(\"I also need help with statements\").",
    ],
    "hw_banking_004": [
        "The agent checks the customer's accounts (\"get_accounts\").",
        "The agent locks the card (\"lock_card\") and the card ends up \"Locked\".",
    ],
}


def verdicts_of(metrics: dict[str, Any]) -> dict[str, Any]:
    """What the judge decided in a metrics.json: the run's rubric figures, judge usage, each simulation's rubric."""
    return {"judge": metrics["run"]["judge"], "rubric": metrics["run"]["rubric"],
            "simulations": {s["simulation_id"]: s["rubric"] for s in metrics["simulations"]}}


def run_conversations(tmp: Path, env: dict[str, str]) -> int:
    source = load_task_file(REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json")
    tasks = [t for t in source.tasks if t.id in RUBRIC]
    for t in tasks:
        t.evaluation_criteria.rubric = RUBRIC[t.id]
    task_file = tmp / "tasks.json"
    task_file.write_text(source.model_copy(update={"tasks": tasks}).model_dump_json(indent=2) + "\n")
    with fake_openai(ScriptedLLM(tasks)) as server:
        args = []
        for role in ("agent", "user"):
            args += [f"--{role}", "litellm:openai/fake-model", f"--{role}-arg", f"api_base={server.base_url}",
                     f"--{role}-arg", "api_key_env=SHIFTBOX_FAKE_KEY"]
        cmd = [*SHIFTBOX, "run", "--domain", "banking", "--tasks", str(task_file), *args, "--trials", "1",
               "--out", str(tmp / "run"), "--record", str(FIXTURE)]
        return subprocess.run(cmd, cwd=REPO, env=env).returncode


def record_judge(env: dict[str, str]) -> int:
    with fake_openai(ScriptedJudge()) as server:
        cmd = [*SHIFTBOX, "metrics", str(FIXTURE), "--judge", JUDGE, *JUDGE_ARGS, "--judge-arg",
               f"api_base={server.base_url}", "--judge-record", str(FIXTURE / "judge-cassettes")]
        code = subprocess.run(cmd, cwd=REPO, env=env).returncode
    if code == 0:
        metrics_file = REPO / FIXTURE / "metrics.json"
        verdicts = verdicts_of(json.loads(metrics_file.read_text()))
        (REPO / FIXTURE / VERDICTS_FILE).write_text(json.dumps(verdicts, indent=2, sort_keys=True) + "\n")
        metrics_file.unlink()
    return code


def main() -> int:
    env = {**os.environ, "SHIFTBOX_FAKE_KEY": "sk-fake-recording-key", "OPENAI_API_KEY": "sk-fake-recording-key"}
    if sys.argv[1:] == ["--judge-only"]:  # the judge's prompts changed, the conversations did not
        shutil.rmtree(REPO / FIXTURE / "judge-cassettes", ignore_errors=True)
        return record_judge(env)
    shutil.rmtree(REPO / FIXTURE, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        code = run_conversations(Path(tmp), env)
    return code or record_judge(env) or record_compat_gsrt(env)


if __name__ == "__main__":
    sys.exit(main())
