"""shiftbox tasks run as Inspect AI tasks (docs/inspect.md), checked through Inspect's own API: its `eval()`, its mock
model, its log reader, and the `inspect` command, against shiftbox's own scoring of the same trajectories."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai import Epochs  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai import score as inspect_score  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402
from inspect_ai.tool import ToolCall as InspectToolCall  # noqa: E402

import shiftbox  # noqa: E402
from shiftbox.inspect_eval import (  # noqa: E402
    EPISODE_KEY,
    METRICS_KEY,
    REPLY_TOOL,
    SCORES,
    SHIFT_EVENT_SOURCE,
    TRAJECTORY_KEY,
    airline,
    inline_refs,
    log_metrics,
    log_trajectories,
    pass_hat,
    retail,
    shiftbox_scores,
    shiftbox_task,
    shiftbox_tools,
    task_file,
    tool_info,
)
from shiftbox.metrics import aggregate_gsrt, pass_hat_k  # noqa: E402
from shiftbox.runs import score_trajectories  # noqa: E402
from shiftbox.testing import fake_openai  # noqa: E402
from shiftbox.testing.fake_brains import ScriptedLLM  # noqa: E402
from shiftbox.world import open_world  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
HANDWRITTEN = REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json"
SCORER = "shiftbox_scores"


def trajectories_of(log) -> list[shiftbox.Trajectory]:
    return [shiftbox.Trajectory.model_validate(s.store[TRAJECTORY_KEY]) for s in log.samples]


def shiftbox_view(metrics) -> dict[str, float | None]:
    """What shiftbox's own scoring says of one simulation, in the score value's keys."""
    return {"tsr": metrics.tsr.score, "tue": metrics.tue.tue, "tcrr": metrics.tcrr.ratio,
            "gsrt": aggregate_gsrt(metrics.gsrt).recovery_rate,
            "success": None if metrics.success is None else float(metrics.success)}


def same(a: float | None, b: float | None) -> bool:
    return (a is None and math.isnan(b)) or (a is not None and math.isclose(a, b))


def assert_scored_as_shiftbox_scores(log, tasks: dict[str, shiftbox.Task]) -> None:
    """Every sample's score value and metadata are what shiftbox's own scoring gives its trajectory."""
    trajectories = trajectories_of(log)
    _, per_simulation = score_trajectories(trajectories, tasks)
    by_id = {m.simulation_id: m for m in per_simulation}
    for sample, trajectory in zip(log.samples, trajectories, strict=True):
        score = sample.scores[SCORER]
        assert set(score.value) == set(SCORES)
        expected = shiftbox_view(by_id[trajectory.simulation_id])
        assert all(same(expected[k], score.value[k]) for k in SCORES), (expected, score.value)
        assert score.metadata[METRICS_KEY] == by_id[trajectory.simulation_id].model_dump(mode="json")


def served_tools(domain: str) -> list[str]:
    """The tools shiftbox's world lists for a domain (or several, namespaced)."""

    async def names() -> list[str]:
        async with open_world(domain) as world:
            return sorted(t["name"] for t in world.tools)

    return anyio.run(names)


def result(log, name: str, reducer: str = "mean") -> float:
    return next(s.metrics["mean"].value for s in log.results.scores if s.name == name and s.reducer == reducer)


@pytest.fixture(scope="module")
def mock_log(tmp_path_factory):
    """Two handwritten banking tasks, two epochs each, answered by Inspect's default mock model; epochs reduced by
    mean, pass^2 (the default k: every epoch) and pass^1, named as `--epochs-reducer` names them."""
    out = tmp_path_factory.mktemp("inspect")
    ids = [t.id for t in shiftbox.load_task_file(HANDWRITTEN).tasks[:2]]
    [log] = inspect_eval("shiftbox/banking", model="mockllm/model", display="none", log_dir=str(out),
                         epochs=Epochs(2, ["mean", "shiftbox/pass_hat", "shiftbox/pass_hat_1"]),
                         task_args={"tasks": str(HANDWRITTEN), "task_ids": ids})
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def test_every_sample_is_one_simulation_scored_as_shiftbox_scores_its_trajectory(mock_log):
    tasks = {t.id: t for t in shiftbox.load_task_file(HANDWRITTEN).tasks}
    assert sorted((s.id, s.epoch) for s in mock_log.samples) == sorted(
        (i, e) for i in {s.id for s in mock_log.samples} for e in (1, 2))
    trajectories = trajectories_of(mock_log)
    assert all(t.agent == "inspect:mockllm/model" for t in trajectories)
    assert {(t.task_id, t.trial) for t in trajectories} == {(s.id, s.epoch - 1) for s in mock_log.samples}
    assert_scored_as_shiftbox_scores(mock_log, tasks)


def test_the_log_results_are_shiftbox_run_metrics(mock_log):
    trajectories = trajectories_of(mock_log)
    tasks = {t.id: t for t in shiftbox.load_task_file(HANDWRITTEN).tasks}
    run, _ = score_trajectories(trajectories, tasks)
    assert math.isclose(result(mock_log, "tsr"), run.tsr.mean)
    assert math.isclose(result(mock_log, "success", "shiftbox/pass_hat"), run.pass_hat_k[2])  # --epochs 2: pass^2
    assert math.isclose(result(mock_log, "success", "shiftbox/pass_hat_1"), run.pass_hat_k[1])
    assert math.isclose(result(mock_log, "success"), run.pass_hat_k[1])  # the mean over epochs: avg@k = pass^1
    assert log_metrics(mock_log) == (run, score_trajectories(trajectories, tasks)[1])
    assert log_trajectories(mock_log.location) == (trajectories, {t: tasks[t] for t in {s.id for s in mock_log.samples}})


def test_the_transcript_shows_the_conversation_and_each_goal_shift(mock_log):
    for sample, trajectory in zip(mock_log.samples, trajectories_of(mock_log), strict=True):
        conversation = [m for m in sample.messages if m.role != "system"]
        assert [(m.role, m.text) for m in conversation] == [(m.role, m.content or "") for m in trajectory.messages]
        shifts = [e.data for e in sample.events if e.event == "info" and e.source == SHIFT_EVENT_SOURCE]
        assert [(s["from_goal"], s["to_goal"], s["message_index"]) for s in shifts] == [
            (s.from_goal, s.to_goal, s.message_index) for s in trajectory.shifts]
    assert any(trajectory.shifts for trajectory in trajectories_of(mock_log))


def oracle_outputs(trajectory: shiftbox.Trajectory) -> list[ModelOutput]:
    """The oracle's replies as Inspect model outputs: a mock model that answers with them plays the oracle."""
    return [ModelOutput.from_message(ChatMessageAssistant(
        content=m.content or "", tool_calls=[InspectToolCall(id=f"mock{i}", function=c.name, arguments=c.arguments)
                                             for i, c in enumerate(m.tool_calls)] or None))
        for m in trajectory.messages if m.role == "assistant"]


def test_a_mock_model_answering_as_the_oracle_gets_the_oracles_trajectory_and_scores(mock_log, tmp_path):
    task = shiftbox.load_task_file(HANDWRITTEN).tasks[0]
    plan = shiftbox.plan_run(HANDWRITTEN, tmp_path / "oracle", agent="scripted:oracle", task_ids=[task.id])
    [oracle] = shiftbox.run_evaluation(plan).trajectories
    model = get_model("mockllm/model", custom_outputs=oracle_outputs(oracle))
    [log] = inspect_eval("shiftbox/banking", model=model, display="none", log_dir=str(tmp_path / "logs"),
                         task_args={"tasks": str(HANDWRITTEN), "task_ids": [task.id]})
    [sample] = read_eval_log(log.location).samples
    [trajectory] = trajectories_of(read_eval_log(log.location))
    assert [m.model_dump(exclude={"timing"}) for m in trajectory.messages] == \
        [m.model_dump(exclude={"timing"}) for m in oracle.messages]
    assert trajectory.final_state == oracle.final_state
    _, [expected] = score_trajectories([oracle], {task.id: task})
    assert all(same(shiftbox_view(expected)[k], sample.scores[SCORER].value[k]) for k in SCORES)
    default = next(s for s in mock_log.samples if s.id == task.id and s.epoch == 1).scores[SCORER].value
    assert sample.scores[SCORER].value["tsr"] > default["tsr"]


def busy_output(input, tools, tool_choice, config) -> ModelOutput:
    """A mock model's answer that makes tool calls: after each user message it calls the first tool it is offered
    twice with no arguments (most tools need some: failed, repeated calls for TUE and TCRR), then answers."""
    since_user = list(itertools.takewhile(lambda m: m.role != "user", reversed(input)))
    if sum(m.role == "assistant" for m in since_user) < 2:
        return ModelOutput.for_tool_call("mockllm/model", tools[0].name, {})
    return ModelOutput.from_content("mockllm/model", "I have looked into it. Anything else?")


TASK_FILES = {"shiftbox/retail": REPO / "snapshots/retail/v1/tasks.json",
              "shiftbox/airline": REPO / "snapshots/airline/v1/tasks.json",
              "shiftbox/task_file": REPO / "tasks/cross-domain.json"}


@pytest.fixture(scope="module")
def domain_logs(tmp_path_factory):
    """One sample each of retail, airline and the cross-domain task file, in one `eval()` of the three tasks, with
    a mock model that calls tools."""
    out = tmp_path_factory.mktemp("domains")
    model = get_model("mockllm/model", custom_outputs=busy_output)
    logs = inspect_eval([retail(), airline(), task_file(str(TASK_FILES["shiftbox/task_file"]))],
                        model=model, limit=1, display="none", log_dir=str(out))
    assert [log.status for log in logs] == ["success"] * 3, [log.error for log in logs]
    return {log.eval.task: read_eval_log(log.location) for log in logs}


def test_retail_airline_and_a_task_file_run_and_their_tools_reach_the_model_resolved(domain_logs):
    assert set(domain_logs) == {"shiftbox/retail", "shiftbox/airline", "shiftbox/task_file"}
    for name, log in domain_logs.items():
        [sample] = log.samples
        [trajectory] = trajectories_of(log)
        assert set(sample.scores[SCORER].value) == set(SCORES)
        model_calls = [e for e in sample.events if e.event == "model"]
        assert model_calls and len(model_calls) == sum(m.role == "assistant" for m in trajectory.messages), name
        offered = model_calls[0].tools
        assert sorted(t.name for t in offered) == served_tools(shiftbox.load_task_file(TASK_FILES[name]).domain), name
        assert "$ref" not in json.dumps([t.model_dump() for t in offered]), name
        assert_scored_as_shiftbox_scores(log, {t.id: t for t in shiftbox.load_task_file(TASK_FILES[name]).tasks})
        assert not math.isnan(sample.scores[SCORER].value["tcrr"]), name  # the mock's calls were made and scored
    assert trajectories_of(domain_logs["shiftbox/task_file"])[0].domain.count(",") >= 1  # cross-domain


def test_inspect_score_scores_a_log_again_from_what_it_holds(mock_log):
    rescored = inspect_score(mock_log, shiftbox_scores(), action="overwrite", display="none")
    for before, after in zip(mock_log.samples, rescored.samples, strict=True):
        assert json.dumps(before.scores[SCORER].value) == json.dumps(after.scores[SCORER].value)


def test_an_inspect_limit_ends_the_simulation_and_inspect_records_it_and_scores_the_sample(tmp_path):
    task = shiftbox.load_task_file(HANDWRITTEN).tasks[0]
    [log] = inspect_eval("shiftbox/banking", model="mockllm/model", message_limit=6, display="none",
                         log_dir=str(tmp_path), task_args={"tasks": str(HANDWRITTEN), "task_ids": [task.id]})
    log = read_eval_log(log.location)
    [sample] = log.samples
    [trajectory] = trajectories_of(log)
    assert sample.limit is not None and sample.limit.type == "message"
    assert trajectory.termination.reason == "agent_error" and "LimitExceededError" in trajectory.termination.detail
    assert len(trajectory.messages) < 6
    assert_scored_as_shiftbox_scores(log, {task.id: task})


def test_an_llm_user_simulator_plays_the_customer_and_its_shift_shows_in_the_transcript(tmp_path, monkeypatch):
    task = shiftbox.load_task_file(HANDWRITTEN).tasks[0]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    script = ["<<GOAL:authentication>> Hi, I would like to check who I am registered as.",
              "<<GOAL:transactions>> Also, please show me my recent transactions.",
              "<<GOAL:dispute>> I will dispute one another day. ###STOP###"]  # a last shift no model call follows
    with fake_openai(script) as server:
        [log] = inspect_eval("shiftbox/banking", model="mockllm/model", display="none", log_dir=str(tmp_path),
                             task_args={"tasks": str(HANDWRITTEN), "task_ids": [task.id], "user": "litellm:openai/fake",
                                        "user_args": {"api_base": server.base_url}})
    log = read_eval_log(log.location)
    [sample] = log.samples
    [trajectory] = trajectories_of(log)
    assert len(server.requests) == 3 and trajectory.user == "litellm:openai/fake"
    shifts = [("authentication", "transactions"), ("transactions", "dispute")]
    assert [(s.from_goal, s.to_goal) for s in trajectory.shifts] == shifts
    assert [(e.data["from_goal"], e.data["to_goal"]) for e in sample.events
            if e.event == "info" and e.source == SHIFT_EVENT_SOURCE] == shifts
    assert_scored_as_shiftbox_scores(log, {task.id: task})


def test_a_bad_option_fails_before_any_sample_as_shiftbox_run_would():
    with pytest.raises(shiftbox.RunPlanError, match="nobody"):
        shiftbox_task(domain="banking", user="nobody")
    with pytest.raises(shiftbox.RunPlanError, match="retail"):
        shiftbox_task(HANDWRITTEN, domain="retail")


def test_pass_hat_reduces_epochs_to_shiftbox_pass_hat_k():
    def scores(*successes: float) -> list[Score]:
        return [Score(value=dict.fromkeys(SCORES, 0.0) | {"success": s}) for s in successes]

    four = scores(1.0, 0.0, 1.0, 1.0)
    assert pass_hat()(four).value == {"success": pass_hat_k(4, 3, 4)} == {"success": 0.0}
    assert pass_hat(k=2)(four).value == {"success": pass_hat_k(4, 3, 2)} == {"success": 0.5}
    assert pass_hat(k=2)(scores(1.0, math.nan, 1.0)).value == {"success": 1.0}  # unscored epochs are left out
    assert math.isnan(pass_hat()(scores(1.0, math.nan)).value["success"])  # fewer scored epochs than k


def test_airline_tools_reach_the_model_with_their_references_resolved():
    schema = {"type": "object", "$defs": {"Pax": {"type": "object", "properties": {"name": {"type": "string"}}}},
              "properties": {"passengers": {"type": "array", "items": {"$ref": "#/$defs/Pax"}}}}
    assert inline_refs(schema) == {"type": "object", "properties": {"passengers": {
        "type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}
    info = tool_info({"name": "book", "description": "Book.", "inputSchema": schema})
    assert info.parameters.properties["passengers"].items.properties["name"].type == "string"


def test_without_the_extra_the_integration_names_the_install_command_and_shiftbox_never_loads_it():
    code = ("import sys, shiftbox, shiftbox.cli\n"
            "print('inspect_ai' in sys.modules)\n"
            "sys.modules['inspect_ai'] = None  # as if the extra were not installed\n"
            "try:\n    import shiftbox.inspect_eval\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    loaded, message = out.stdout.strip().split("\n")
    assert loaded == "False" and "pip install 'shiftbox[inspect]'" in message


def run_shell(command: str, cwd: Path, **env: str) -> None:
    """A shell command as a user types it in `cwd` (this environment's `inspect` on PATH, the checkout's snapshots)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SHIFTBOX_SNAPSHOTS": str(REPO / "snapshots"), **env}
    ran = subprocess.run(["bash", "-ec", command], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, ran.stderr + ran.stdout


def test_the_inspect_page_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """docs/inspect.md's example as written, in a scratch folder: the `inspect` command (which finds the tasks by
    their entry point), then its Python block reading the log."""
    page = (REPO / "docs" / "inspect.md").read_text()
    command = re.search(r"```shell\n(.*?)```", page, re.S).group(1)
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    run_shell(command, tmp_path)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/inspect.md", "exec"), {})
    printed = capsys.readouterr().out
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == 4  # --limit 2, --epochs 2
    tasks = {t.id: t for t in shiftbox.load_task_file(REPO / "snapshots/banking/v1/tasks.json").tasks}
    run, _ = score_trajectories(trajectories_of(log), tasks)
    assert f"tsr mean {run.tsr.mean:.3f}" in printed
    assert f"success shiftbox/pass_hat {run.pass_hat_k[2]:.3f}" in printed
    assert f"shiftbox: 4 simulations, TSR {run.tsr.mean:.3f}, pass^2 {run.pass_hat_k[2]:.3f}" in printed


def test_the_inspect_page_openai_example_runs_against_the_fake_openai_server(tmp_path):
    """docs/inspect.md's real-model command (`--model openai/...`) as written, on Inspect's own OpenAI provider
    (it needs openai >= 3.4) pointed at the fake OpenAI server, which plays the agent of the airline tasks; only
    `--limit` and the log options are added. Every request reaches the fake under the page's model name and
    every sample is scored as shiftbox scores its trajectory."""
    page = (REPO / "docs" / "inspect.md").read_text()
    command = re.search(r"`(inspect eval shiftbox/\w+ --model openai/[^`]+)`", page).group(1)
    domain = re.search(r"shiftbox/(\w+)", command).group(1)
    model = re.search(r"--model openai/(\S+)", command).group(1)
    epochs = int(re.search(r"--epochs (\d+)", command).group(1))
    tasks = shiftbox.load_task_file(REPO / "snapshots" / domain / "v1" / "tasks.json").tasks
    with fake_openai(ScriptedLLM(tasks)) as server:
        run_shell(f"{command} --limit 1 --log-dir logs --display none", tmp_path,
                  OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-fake")
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == epochs
    assert server.requests and {r["model"] for r in server.requests} == {model}
    trajectories = trajectories_of(log)
    assert {t.agent for t in trajectories} == {f"inspect:openai/{model}"}
    assert all(t.tool_calls for t in trajectories)  # the fake's tool calls were executed by the harness
    assert_scored_as_shiftbox_scores(log, {t.id: t for t in tasks})


@pytest.mark.parametrize("user_args", [
    {"api_base": "http://alice:pw-9a8b7c6d5e4f3021@127.0.0.1:1/v1"},
    {"api_base": "http://127.0.0.1:1/v1?token=tk-9a8b7c6d5e4f3021"},
    {"extra.extra_headers": '{"Authorization": "Bearer hd-9a8b7c6d5e4f3021"}'},
    {"extra.extra_body": '{"password": "pb-9a8b7c6d5e4f3021"}'},
])
def test_a_credential_in_task_options_is_refused_before_inspect_writes_it_to_its_log(user_args, tmp_path):
    """Issue 30 item 5: Inspect records task options in its log as given (shiftbox cannot redact them there)."""
    with pytest.raises(shiftbox.RunPlanError, match=r"holds a credential, .* api_key_env=VARIABLE"):
        inspect_eval("shiftbox/banking", model="mockllm/model", display="none", log_dir=str(tmp_path),
                     task_args={"tasks": str(HANDWRITTEN), "user": "litellm:openai/fake", "user_args": user_args})
    assert not any("9a8b7c6d5e4f3021" in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())


def test_a_key_given_by_its_variable_is_not_refused():
    task = shiftbox_task(HANDWRITTEN, domain="banking", user="litellm:openai/fake",
                         user_args={"api_base": "http://127.0.0.1:1/v1", "api_key_env": "MY_KEY"})
    assert task.metadata["shiftbox_run_config"]["user_args"]["api_key_env"] == "MY_KEY"


@pytest.mark.parametrize(("options", "named"), [
    ({"max_steps": -5}, r"--max-steps \(max_steps\) -5: .*at least 2"),
    ({"max_steps": 1}, r"--max-steps \(max_steps\) 1: .*at least 2"),
    ({"max_steps": "many"}, r"--max-steps \(max_steps\) 'many': give a whole number"),
    ({"max_tool_errors": 0}, r"--max-tool-errors \(max_tool_errors\) 0: .*at least 1"),
    ({"retry_infra": -1}, r"--retry-infra \(retry_infra\) -1: .*at least 0"),
    ({"seed": 1.5}, r"--seed \(seed\) 1.5: give a whole number"),
    ({"one_tool_per_turn": "maybe"}, r"--one-tool-per-turn \(one_tool_per_turn\) 'maybe': give true or false"),
    ({"success_threshold": "high"}, r"success_threshold 'high': give a number"),
    ({"user_args": "notamapping"}, r"user_args 'notamapping': give a mapping of option names to values"),
    ({"user_args": [1, 2]}, r"user_args \[1, 2\]: give a mapping"),
    ({"task_ids": {"a": 1}}, r"task_ids \{'a': 1\}: give a task id or a list of them"),
])
def test_a_bad_task_option_fails_the_task_before_any_sample_naming_the_option(options, named, tmp_path):
    """Issue 30 (Low): `-T max_steps=-5` scored every sample 0 with status success; `-T user_args=notamapping` was a
    raw AttributeError. The options are checked as `shiftbox run` checks them, before any sample runs."""
    with pytest.raises(shiftbox.RunPlanError, match=named):
        inspect_eval("shiftbox/banking", model="mockllm/model", display="none", log_dir=str(tmp_path),
                     task_args={"tasks": str(HANDWRITTEN), **options})


def test_the_task_plans_the_eval_model_as_an_external_agent_not_a_stand_in_spec():
    """Issue 31 item 3: the task once planned `scripted:oracle` to get through the planner and renamed it."""
    task = shiftbox_task(HANDWRITTEN, domain="banking", retry_infra=2)
    assert task.metadata["shiftbox_run_config"]["agent"] == "external:inspect"
    with pytest.raises(shiftbox.RunPlanError, match=r"--retry-infra \(retry_infra\) -1"):
        shiftbox_task(HANDWRITTEN, domain="banking", retry_infra=-1)


def test_inspect_score_on_a_log_as_written_finds_the_scorer_without_being_told(mock_log, tmp_path):
    """Issue 33 item 2: Inspect records the scorer unqualified (`shiftbox_scores`) and `inspect score LOG` failed
    "scorer 'shiftbox_scores' couldn't be loaded" unless given `--scorer shiftbox/shiftbox_scores`."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    out = tmp_path / "rescored.eval"
    ran = subprocess.run(["inspect", "score", mock_log.location, "--action", "overwrite", "--output-file", str(out),
                          "--display", "none"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    rescored = read_eval_log(str(out))
    for before, after in zip(mock_log.samples, rescored.samples, strict=True):
        assert json.dumps(before.scores[SCORER].value) == json.dumps(after.scores[SCORER].value)


def react_output(input, tools, tool_choice, config) -> ModelOutput:
    """A mock model playing a react() agent: it calls the first domain tool with made-up arguments, then tells the
    customer through the reply tool, then again."""
    if input[-1].role == "tool" and input[-1].function != REPLY_TOOL:
        return ModelOutput.for_tool_call("mockllm/model", REPLY_TOOL, {"message": "I have looked into it."})
    first = tools[0]
    return ModelOutput.for_tool_call("mockllm/model", first.name, dict.fromkeys(first.parameters.required, "C0001"))


def test_an_inspect_react_agent_swapped_in_by_solver_calls_the_domain_tools_and_is_scored(tmp_path):
    """Issue 33 item 2: `--solver` swaps in any Inspect agent; here Inspect's own `react()` with the mock model,
    given the sample's tools (the domain's, and the customer as `reply_to_customer`) by `shiftbox_tools()`."""
    from inspect_ai.agent import react

    task = shiftbox.load_task_file(HANDWRITTEN).tasks[0]
    model = get_model("mockllm/model", custom_outputs=react_output)
    [log] = inspect_eval("shiftbox/banking", model=model, solver=react(tools=[shiftbox_tools()]), message_limit=12,
                         display="none", log_dir=str(tmp_path),
                         task_args={"tasks": str(HANDWRITTEN), "task_ids": [task.id]})
    log = read_eval_log(log.location)
    [sample] = log.samples
    assert sample.limit is not None and sample.limit.type == "message"
    tool_events = [e for e in sample.events if e.event == "tool"]
    [trajectory] = trajectories_of(log)
    calls = [c for m in trajectory.messages for c in m.tool_calls]
    domain_events = [e for e in tool_events if e.function != REPLY_TOOL]
    assert domain_events and [(c.name, c.arguments) for c in calls] == [(e.function, e.arguments)
                                                                        for e in domain_events]
    results = [m.content for m in trajectory.messages if m.role == "tool"]
    assert [e.result for e in domain_events] == results  # the agent saw what shiftbox's server answered
    said = [e.arguments["message"] for e in tool_events if e.function == REPLY_TOOL]
    assert said and said == [m.content for m in trajectory.messages if m.role == "assistant" and m.content]
    answers = [m.content for m in trajectory.messages if m.role == "user"]
    assert [e.result for e in tool_events if e.function == REPLY_TOOL] == answers[1:]  # the user simulator answered
    assert sample.messages[2].text == answers[0]  # after react's and shiftbox's system prompts: the opening
    assert trajectory.agent == "inspect:mockllm/model" and trajectory.termination.reason == "agent_error"
    assert_scored_as_shiftbox_scores(log, {task.id: task})


def oracle_through_tools(trajectory: shiftbox.Trajectory) -> list[ModelOutput]:
    """The oracle's turns as a react() agent makes them: its tool calls as they are, its words to the customer
    through the reply tool, then react's submit."""
    outputs = [ModelOutput.for_tool_call("mockllm/model", REPLY_TOOL, {"message": m.content}) if not m.tool_calls
               else oracle_outputs(shiftbox.Trajectory.model_validate({**trajectory.model_dump(), "messages": [m]}))[0]
               for m in trajectory.messages if m.role == "assistant"]
    return [*outputs, ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "done"})]


def test_a_react_agent_making_the_oracles_turns_gets_the_oracles_conversation_and_scores(tmp_path):
    """The swapped-in path records a normal run: the oracle's turns made through the Inspect tools give the oracle's
    conversation, final state, ending and scores; `inspect score` scores the log again as written."""
    from inspect_ai.agent import react

    task = shiftbox.load_task_file(HANDWRITTEN).tasks[0]
    plan = shiftbox.plan_run(HANDWRITTEN, tmp_path / "oracle", agent="scripted:oracle", task_ids=[task.id])
    [oracle] = shiftbox.run_evaluation(plan).trajectories
    model = get_model("mockllm/model", custom_outputs=oracle_through_tools(oracle))
    [log] = inspect_eval("shiftbox/banking", model=model, solver=react(tools=[shiftbox_tools()]), display="none",
                         log_dir=str(tmp_path / "logs"), task_args={"tasks": str(HANDWRITTEN), "task_ids": [task.id]})
    log = read_eval_log(log.location)
    [trajectory] = trajectories_of(log)

    def said(t: shiftbox.Trajectory) -> list[tuple]:  # words beside a tool call are the agent's, not said to anyone
        return [(m.role, None if m.tool_calls else m.content, [(c.name, c.arguments) for c in m.tool_calls])
                for m in t.messages]

    assert said(trajectory) == said(oracle) and trajectory.final_state == oracle.final_state
    assert trajectory.termination.reason == oracle.termination.reason == "user_stop"
    _, [expected] = score_trajectories([oracle], {task.id: task})
    [sample] = log.samples
    assert all(same(shiftbox_view(expected)[k], sample.scores[SCORER].value[k]) for k in SCORES)
    assert_scored_as_shiftbox_scores(log, {task.id: task})
    rescored = inspect_score(log, shiftbox_scores(), action="overwrite", display="none")
    assert json.dumps(rescored.samples[0].scores[SCORER].value) == json.dumps(sample.scores[SCORER].value)


def test_the_default_solver_starts_no_episode_of_its_own(mock_log):
    """The setup step that serves swapped-in solvers does nothing when the task's own solver runs."""
    assert all(EPISODE_KEY not in s.store for s in mock_log.samples)


def test_graph_refusal_is_a_task_option_checked_as_shiftbox_run_checks_it():
    with pytest.raises(shiftbox.RunPlanError, match="--graph-refusal"):
        shiftbox_task(HANDWRITTEN, domain="banking", graph_refusal=True)
    task = shiftbox_task(HANDWRITTEN, domain="banking", dependency_graph=True, graph_refusal=True)
    assert task.metadata["shiftbox_run_config"]["graph_refusal"] is True


def test_the_inspect_page_solver_example_runs_as_written(tmp_path):
    """docs/inspect.md's `--solver` example as written: the agent file, then the `inspect` command."""
    page = (REPO / "docs" / "inspect.md").read_text()
    agent_file = re.search(r'```python title="my_agent.py"\n(.*?)```', page, re.S).group(1)
    command = re.search(r"```bash\n(.*?)```", page, re.S).group(1)
    (tmp_path / "my_agent.py").write_text(agent_file)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SHIFTBOX_SNAPSHOTS": str(REPO / "snapshots")}
    ran = subprocess.run(["bash", "-ec", command], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    [path] = (tmp_path / "solver-logs").glob("*.eval")
    log = read_eval_log(str(path))
    [sample] = log.samples
    assert log.status == "success" and sample.limit is not None and sample.limit.type == "message"
    offered = {t.name for e in sample.events if e.event == "model" for t in e.tools}
    assert offered == {*served_tools("banking"), REPLY_TOOL, "submit"}
    [trajectory] = trajectories_of(log)
    assert [m.role for m in trajectory.messages] == ["user"]  # the mock never called a tool nor the customer
    task = shiftbox.load_task_file(REPO / "snapshots/banking/v1/tasks.json").tasks[0]
    assert trajectory.task_id == task.id and sample.messages[2].text == trajectory.messages[0].content
    assert_scored_as_shiftbox_scores(log, {task.id: task})
