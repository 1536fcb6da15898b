"""`--agent a2a:URL`: a remote agent over the A2A protocol, served here by a2a-sdk's own server classes.

The agents are a2a-sdk `AgentExecutor`s behind its default request handler and Starlette routes, run by
uvicorn on 127.0.0.1 (a free port) in a thread: the example banking desk of examples/a2a_agent (streaming,
and again announcing no streaming), and small ones of this file that reject or fail their task, or answer
with a plain `Message` that says what the harness handed over. They read the handover with a2a-sdk's
own accessors, and call their tools with the `mcp` client at the URL they were given.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import ListTasksRequest, TaskState
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.routing import Mount
from typer.testing import CliRunner

import shiftbox
from shiftbox.agents import AgentContext, ExternalAgentError
from shiftbox.agents.a2a_agent import (
    DOMAIN_KEY,
    INSTALL_A2A,
    MCP_URL_KEY,
    POLICY_KEY,
    SEED_KEY,
    A2AAgent,
)
from shiftbox.cli import app
from shiftbox.trajectory import Message, read_trajectories
from shiftbox.world import GatewayLink
from tests.client.harness import REPO

runner = CliRunner()
TASKS = REPO / "examples" / "a2a_agent" / "tasks.json"


def load_example() -> Any:
    """examples/a2a_agent/agent.py as a module (it is a program, not a package)."""
    spec = importlib.util.spec_from_file_location("a2a_example_agent", REPO / "examples" / "a2a_agent" / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


desk = load_example()


class OneShot(AgentExecutor):
    """`reject` / `fail`: ends every task so; `message`: answers with a Message saying what it was handed."""

    def __init__(self, how: str):
        self.how = how

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if self.how == "message":
            meta = MessageToDict(message.metadata)
            data = get_data_parts(message.parts)
            said = (f"You said: {context.get_user_input()} | url={meta[MCP_URL_KEY]} domain={meta[DOMAIN_KEY]} "
                    f"seed={int(meta[SEED_KEY])} policy={len(meta.get(POLICY_KEY, ''))} data={len(data)} "
                    f"data_url={data[0][MCP_URL_KEY] if data else '-'} context={context.context_id}")
            await event_queue.enqueue_event(new_text_message(said, context_id=context.context_id))
            return
        task = context.current_task or new_task_from_user_message(message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        refusal = updater.new_agent_message([new_text_part(f"I will not do that ({self.how}).")])
        await (updater.reject(refusal) if self.how == "reject" else updater.failed(refusal))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def one_shot_app(url: str, how: str) -> Starlette:
    card = desk.agent_card(url)
    handler = DefaultRequestHandler(agent_executor=OneShot(how), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


@contextlib.contextmanager
def serving(make_app) -> Iterator[str]:
    """uvicorn on a free 127.0.0.1 port in a thread, for the block; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(make_app(url), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the A2A test server did not start"
        time.sleep(0.01)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def rest_desk_app(url: str) -> Starlette:
    """The example desk over A2A's HTTP+JSON (REST) binding instead of JSON-RPC."""
    card = desk.agent_card(url)
    card.supported_interfaces[0].protocol_binding = "HTTP+JSON"
    handler = DefaultRequestHandler(agent_executor=desk.BankingDesk(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_rest_routes(handler)])


def agents_app(url: str) -> Starlette:
    """Several agents under one server: /blocking/ (the desk without streaming), /rest/ (the desk over HTTP+JSON),
    /reject/, /fail/, /message/, and the desk itself at the root."""
    mounts = [Mount("/blocking", app=desk.build_app(f"{url}/blocking/", streaming=False)),
              Mount("/rest", app=rest_desk_app(f"{url}/rest"))]
    mounts += [Mount(f"/{how}", app=one_shot_app(f"{url}/{how}/", how)) for how in ("reject", "fail", "message")]
    return Starlette(routes=[*mounts, Mount("/", app=desk.build_app(url))])


@pytest.fixture(scope="module")
def agents() -> Iterator[str]:
    with serving(agents_app) as url:
        yield url


async def tasks_of(url: str) -> list[Any]:
    """Every task the agent at `url` holds, asked over A2A (`ListTasks`)."""
    async with httpx.AsyncClient() as http:
        client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(url)
        return list((await client.list_tasks(ListTasksRequest())).tasks)


def run_a2a(out: Path, url: str, *extra: str):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(TASKS), "--out", str(out),
                               "--agent", f"a2a:{url}", "--user", "scripted", *extra])


def test_an_a2a_agent_is_scored_from_its_own_protocol_and_its_recording_replays_without_it(tmp_path):
    with serving(desk.build_app) as url:
        res = run_a2a(tmp_path / "run", url, "--trials", "2", "--concurrency", "2", "--record", str(tmp_path / "fx"))
        assert res.exit_code == 0, res.output
        tasks = anyio.run(tasks_of, url)
    # on the agent's side: one conversation per simulation, each of two tasks (the first left input-required to ask
    # for the customer's details, then continued by the answer), both completed
    by_context = {c: [t.status.state for t in tasks if t.context_id == c] for c in {t.context_id for t in tasks}}
    assert sorted(map(len, by_context.values())) == [2, 2]
    assert {s for states in by_context.values() for s in states} == {TaskState.TASK_STATE_COMPLETED}
    trajectories = read_trajectories(tmp_path / "run")
    assert len(trajectories) == 2
    for t in trajectories:
        assert t.agent == f"a2a:{url}" and t.termination.reason == "user_stop"
        # the customer verified in the first exchange is remembered in the second: one contextId throughout
        assert [(c.name, c.arguments) for c in t.tool_calls] == [
            ("get_customer_by_phone", {"phone_number": "+15558562432"}), ("get_accounts", {"customer_id": "cust_0004"})]
        replies = [m.content for m in t.messages if m.role == "assistant"]
        assert replies[0] == desk.ASK_IDENTITY  # a task left input-required: the turn ends, the user answers
        # working-state narration goes with the call the gateway receives after it (the SSE event comes first unless
        # the machine is very slow, when it is said with the reply); the completed task's artifact is the reply
        assert replies[1] == "Let me look you up." or replies[1] is None and replies[2].startswith("Let me look you up.")
        assert replies[2].endswith("Thank you, Priya Jensen: you are verified. " + desk.ANYTHING_ELSE)
        assert "acc_00004 (checking): balance" in replies[-1]
    metrics, _ = shiftbox.score_run(tmp_path / "run")
    assert metrics.tsr.mean == 1.0 and metrics.tue.tue == 1.0
    # the server is gone, and so is the a2a-sdk: a replay plays the recorded replies back; a live run names the extra
    code = ("import sys; sys.modules['a2a'] = None; import shiftbox\n"
            f"result = shiftbox.replay_fixture({str(tmp_path / 'fx')!r}, {str(tmp_path / 'replay')!r})\n"
            "print('identical' if result.identical else result.problems)\n"
            "try:\n"
            f"    shiftbox.plan_run({str(TASKS)!r}, {str(tmp_path / 'live')!r}, agent='a2a:{url}')\n"
            "except shiftbox.RunPlanError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["identical", f"--agent a2a: needs the a2a-sdk, an optional extra of shiftbox: "
                                                    f"{INSTALL_A2A}"]
    assert [t.agent for t in read_trajectories(tmp_path / "replay")] == [f"a2a:{url}"] * 2


PASSWORD = "pw-a2a-5e4d3c2b1a09"


def test_credentials_in_the_agent_url_reach_the_agent_but_no_file_and_the_recording_replays(tmp_path, agents):
    """run.json's config records the agent spec: user:password in an a2a: URL must not be written there (nor in any
    other file of the run or its fixture), yet the live run still uses it and --resume is the same configuration."""
    with_password = agents.replace("http://", f"http://alice:{PASSWORD}@") + "/rest"
    res = run_a2a(tmp_path / "run", with_password, "--record", str(tmp_path / "fx"))
    assert res.exit_code == 0, res.output
    assert run_a2a(tmp_path / "run", with_password, "--resume").exit_code == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"run.json", "fixture.json"} <= {p.name for p in files}
    leaked = [str(p.relative_to(tmp_path)) for p in files if PASSWORD in p.read_text(errors="replace")]
    assert not leaked, f"the password was written to: {leaked}"
    config = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert config["agent"] == "a2a:" + with_password.replace(f"alice:{PASSWORD}", "%5Bredacted%5D")  # as a URL user name
    assert PASSWORD not in res.output
    replayed = runner.invoke(app, ["replay", str(tmp_path / "fx"), "--out", str(tmp_path / "replayed")])
    assert replayed.exit_code == 0, replayed.output


@pytest.mark.parametrize("path", ["blocking/", "rest"])
def test_an_agent_without_streaming_or_over_http_json_is_scored_the_same(tmp_path, agents, path):
    res = run_a2a(tmp_path / "r", f"{agents}/{path}")
    assert res.exit_code == 0, res.output
    [t] = read_trajectories(tmp_path / "r")
    assert [c.name for c in t.tool_calls] == ["get_customer_by_phone", "get_accounts"]
    assert shiftbox.score_run(tmp_path / "r")[0].tsr.mean == 1.0


def test_a_message_reply_is_the_turn_and_the_handover_is_in_metadata_and_the_first_data_part(tmp_path, agents):
    res = run_a2a(tmp_path / "r", f"{agents}/message", "--max-steps", "4")
    assert res.exit_code == 0, res.output
    [t] = read_trajectories(tmp_path / "r")
    replies = [m.content for m in t.messages if m.role == "assistant"]
    users = [m.content for m in t.messages if m.role == "user"]
    assert len(replies) >= 2
    assert replies[0].startswith(f"You said: {users[0]} | ")
    fields = [dict(re.findall(r"(\w+)=(\S+)", r.split(" | ", 1)[1])) for r in replies]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/episodes/[\w-]+/mcp", fields[0]["url"])
    assert all(f["url"] == fields[0]["url"] and f["domain"] == "banking" and f["seed"] == str(t.seed) for f in fields), (fields, t.seed)
    assert int(fields[0]["policy"]) > 100 and fields[0]["data"] == "1" and fields[0]["data_url"] == fields[0]["url"]
    assert all(f["policy"] == "0" and f["data"] == "0" for f in fields[1:])  # the policy and data part: first only
    assert len({f["context"] for f in fields}) == 1  # one A2A conversation per simulation


@pytest.mark.parametrize(("how", "state", "reason", "blame", "code"), [
    ("reject", "rejected", "agent_error", "agent", 0),  # the agent declined: its answer, scored
    ("fail", "failed", "agent_program_error", "agent_program", 1),  # it failed to run: not scored, the run exits 1
])
def test_a_rejected_task_is_the_agents_answer_and_a_failed_one_is_not(tmp_path, agents, how, state, reason, blame,
                                                                       code):
    res = run_a2a(tmp_path / how, f"{agents}/{how}")
    assert res.exit_code == code, res.output
    [t] = read_trajectories(tmp_path / how)
    assert t.termination.reason == reason and t.termination.blame == blame
    assert f"ended the task as {state}: I will not do that ({how})." in t.termination.detail


def test_nothing_listening_or_no_agent_card_is_a_usage_error_naming_the_url(tmp_path, agents):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    res = run_a2a(tmp_path / "dead", dead)
    assert res.exit_code == 2
    assert f"no A2A agent answers at {dead}" in res.output and "start the agent there" in res.output
    res = run_a2a(tmp_path / "card", f"{agents}/no/such/agent")
    assert res.exit_code == 2
    assert f"{agents}/no/such/agent does not serve an A2A agent card" in res.output
    assert not (tmp_path / "dead").exists() and not (tmp_path / "card").exists()  # refused before the run


def test_an_agent_gone_mid_run_is_an_agent_program_failure():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"

    async def first_turn() -> None:
        agent = A2AAgent(dead.replace("//", "//user:s3cret@") + "/?token=s3cret")
        assert agent.name == f"a2a:{dead.replace('//', '//%5Bredacted%5D@')}/?token=[redacted]"  # recorded without them
        link = GatewayLink(url="http://127.0.0.1:1/episodes/x/mcp", attach=lambda route: None)
        await agent.start(AgentContext(domain="banking", policy="", tools=[], seed=1, gateway=link))
        try:
            await agent.respond([Message(index=0, role="user", content="hello")])
        finally:
            await agent.close()

    with pytest.raises(ExternalAgentError, match="no A2A agent answers at http://") as failed:
        anyio.run(first_turn)
    assert "s3cret" not in str(failed.value)


def test_the_a2a_page_example_runs_as_written(tmp_path):
    """docs/a2a.md's three blocks (the agent, the run and its metrics, the replay), in a scratch folder, on a free
    port instead of 9999; the agent is stopped before the replay."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "docs" / "a2a.md").read_text(), re.S)
    assert len(blocks) == 3
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    start_agent, run, replay = (block.replace("9999", port) for block in blocks)
    for name in ("examples", "snapshots"):
        (tmp_path / name).symlink_to(REPO / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SHIFTBOX_SNAPSHOTS": str(REPO / "snapshots")}
    agent = subprocess.Popen(["bash", "-c", f"exec {start_agent}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert agent.stdout.readline().strip() == f"A2A agent at http://127.0.0.1:{port}"
        ran = subprocess.run(["bash", "-ec", run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    finally:
        agent.terminate()
        agent.wait(30)
    replayed = subprocess.run(["bash", "-ec", replay], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "identical to the recording" in replayed.stdout
    assert len(read_trajectories(tmp_path / "runs" / "a2a")) == 2
    assert shiftbox.score_run(tmp_path / "runs" / "a2a")[0].tsr.mean == 1.0
