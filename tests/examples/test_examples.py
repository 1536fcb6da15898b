"""The example external agents in examples/, driven the way the harness will drive them.

Each example runs as a real subprocess speaking the JSON-lines protocol of examples/README.md. Its
tools are a real `shiftbox-server banking --transport http`, reached through a small recording proxy
(the test's stand-in for the harness's gateway: it logs every tools/call in order, and holds each
call until the narration the model sent with it has been read from the agent's stdout, so a
narration written after the call is caught). Its LLM is the fake OpenAI server running
`ScriptedLLM`; the test plays the user with the same ScriptedLLM (goal tokens stripped, as the
harness's user simulator does) until the user says ###STOP###, then closes stdin.

Checked: every stdout line is protocol JSON with exactly one final reply per user message; the gold
calls reached the server in order and changed its state (the episode's diff has the dispute); the
LLM saw the domain policy as system prompt and the MCP tools as function schemas; EOF exits 0; and
the minimal example makes the same calls and says the same things as the in-process `litellm:` agent;
and under `shiftbox run --agent cmd:...` (the real gateway) its run scores exactly like the in-process one.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client

from shiftbox.testing import Reply, fake_openai
from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.users import strip_control_tokens
from shiftbox_servers.kit import (
    EPISODE_META_KEY,
    STATE_DIFF_URI,
    STATE_DIGEST_URI,
    http_server_process,
)
from tests.client.harness import HANDWRITTEN, REPO, handwritten

pytestmark = pytest.mark.slow

TASK = next(t for t in handwritten().tasks if t.id == "hw_banking_001")
SNAPSHOT = REPO / "snapshots" / "banking" / "v1"
EPISODE = "examples-test-1"
SEED = "7"
STOP = "###STOP###"
GOLD = [(s.function_name, dict(s.params)) for a in TASK.evaluation_criteria.action_sets
        for s in a.allowed_tools[:1]]
MINIMAL = [sys.executable, "examples/minimal_agent/agent.py", "--model", "openai/fake-model"]
OPENAI_AGENTS = [sys.executable, "examples/openai_agents_agent/agent.py", "--model", "fake-model"]
TURN_TIMEOUT_S = 60.0  # the first turn includes the start (litellm alone imports in ~6 s)


# -- the harness's side: a recording proxy in front of the MCP server -----------------------------------


class RecordingProxy:
    """Forwards HTTP to the MCP server; logs tools/call requests and lets a hook run before each."""

    def __init__(self, upstream: str, before_call):
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname, parts.port
        self.before_call = before_call
        self.calls: list[tuple[str, dict[str, Any]]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    message = json.loads(body) if body else None
                except ValueError:
                    message = None
                if isinstance(message, dict) and message.get("method") == "tools/call":
                    params = message.get("params") or {}
                    proxy.before_call(params.get("name"))
                    proxy.calls.append((params.get("name"), params.get("arguments") or {}))
                upstream = http.client.HTTPConnection(proxy.host, proxy.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                except OSError as exc:  # the server is gone (a failing test tearing down)
                    self.send_error(502, f"proxy: {exc}")
                    return
                finally:
                    upstream.close()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- the agent process ------------------------------------------------------------------------------------


class AgentProcess:
    """The example as a subprocess: user lines in, protocol lines out (read by a thread as they come)."""

    def __init__(self, command: list[str], env: dict[str, str]):
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; read at the end
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True)
        self.raw: list[str] = []
        self.lines: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = json.loads(raw)  # anything else on stdout fails the test
            with self.cond:
                self.raw.append(raw)
                self.lines.append(line)
                self.cond.notify_all()

    def narrations(self) -> list[str]:
        with self.cond:
            return [line["content"] for line in self.lines if line.get("final") is False]

    def wait_for_narrations(self, count: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len([x for x in self.lines if x.get("final") is False]) >= count,
                                      timeout)

    def say(self, text: str) -> list[dict[str, Any]]:
        """Send one user message; return the lines of the agent's turn (narrations, then the reply)."""
        with self.cond:
            start = len(self.lines)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"role": "user", "content": text}) + "\n")
        self.proc.stdin.flush()
        with self.cond:
            done = self.cond.wait_for(lambda: any(x.get("final") is not False for x in self.lines[start:]),
                                      TURN_TIMEOUT_S)
            if not done:
                raise AssertionError(f"no reply within {TURN_TIMEOUT_S}s; stderr:\n{self.stderr_text()}")
            return list(self.lines[start:])

    def close(self) -> int:
        """EOF on stdin; the exit code (the process is killed if it does not exit)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=TURN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = -999
        self.reader.join(timeout=5)
        return code

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-4000:]


# -- one conversation --------------------------------------------------------------------------------------


@dataclass
class Conversation:
    lines: list[dict[str, Any]]
    raw: list[str]
    turns: list[list[dict[str, Any]]]
    user_messages: list[str]
    returncode: int
    stderr: str
    calls: list[tuple[str, dict[str, Any]]]
    late_narrations: list[str]
    requests: list[dict[str, Any]]
    replies: list[Reply]
    llm_errors: list[str]
    policy: str = ""
    mcp_tools: list[dict[str, Any]] = field(default_factory=list)
    diff: dict[str, Any] = field(default_factory=dict)
    digest: dict[str, Any] = field(default_factory=dict)


def play_user(agent: AgentProcess, brains: ScriptedLLM, max_turns: int = 12):
    """ScriptedLLM as the user (it sees the agent's texts as `user`, its own as `assistant`)."""
    system = {"role": "system", "content": f"What you know: {TASK.user_scenario.instructions.known_info}"}
    view: list[dict[str, Any]] = []
    turns, said = [], []
    for _ in range(max_turns):
        reply = brains.user([system, *view], system["content"]).content or ""
        view.append({"role": "assistant", "content": reply})
        if STOP in reply:
            break
        text, _ = strip_control_tokens(reply)
        said.append(text)
        lines = agent.say(text)
        turns.append(lines)
        view.append({"role": "user", "content": "\n\n".join(x["content"] for x in lines)})
    return turns, said


def converse(command: list[str], script=None, user_messages: list[str] | None = None) -> Conversation:
    """Run the example against a real banking server and a fake LLM; play the user; collect everything."""
    return anyio.run(_converse, command, script, user_messages)


async def _converse(command: list[str], script, user_messages: list[str] | None) -> Conversation:
    brains = ScriptedLLM([TASK])
    async with http_server_process("banking", SNAPSHOT) as base:
        with fake_openai(script or brains) as llm:
            late: list[str] = []
            holder: dict[str, AgentProcess] = {}

            def before_call(name: str) -> None:
                # The narration of the reply asking for this call must already be on stdout: the
                # agent is blocked on this very call, so one written after it could never arrive.
                expected = len([r for r in llm.replies if r.content and r.tool_calls])
                if not holder["agent"].wait_for_narrations(expected, timeout=5.0):
                    late.append(name)

            with RecordingProxy(base, before_call) as proxy:
                env = {**os.environ, "SHIFTBOX_MCP_URL": f"{proxy.base_url}/episodes/{EPISODE}/mcp",
                       "SHIFTBOX_DOMAIN": "banking", "SHIFTBOX_SEED": SEED, "OPENAI_API_KEY": "sk-test"}
                env.pop("PYTHONUNBUFFERED", None)  # the examples must flush each line themselves
                # Let the examples cache their bytecode (a fresh .venv has none): litellm and the Agents
                # SDK then import in seconds instead of compiling from source in every process.
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                agent = holder["agent"] = AgentProcess([*command, "--api-base", llm.base_url], env)
                try:
                    if user_messages is None:
                        turns, said = await anyio.to_thread.run_sync(play_user, agent, brains)
                    else:
                        said = user_messages
                        turns = [await anyio.to_thread.run_sync(agent.say, m) for m in user_messages]
                    returncode = await anyio.to_thread.run_sync(agent.close)
                finally:
                    if agent.proc.poll() is None:
                        agent.proc.kill()
                conversation = Conversation(
                    lines=agent.lines, raw=agent.raw, turns=turns, user_messages=said, returncode=returncode,
                    stderr=agent.stderr_text(), calls=list(proxy.calls), late_narrations=late,
                    requests=list(llm.requests), replies=list(llm.replies), llm_errors=list(llm.errors))
        async with Client(f"{base}/mcp") as client:
            meta = {EPISODE_META_KEY: EPISODE}
            conversation.diff = json.loads((await client.read_resource(STATE_DIFF_URI, meta=meta)).contents[0].text)
            conversation.digest = json.loads(
                (await client.read_resource(STATE_DIGEST_URI, meta=meta)).contents[0].text)
            prompt = await client.get_prompt("policy")
            conversation.policy = prompt.messages[0].content.text
            listed = await client.list_tools()
            conversation.mcp_tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                      for t in listed.tools]
    return conversation


@pytest.fixture(scope="module")
def minimal() -> Conversation:
    return converse(MINIMAL)


@pytest.fixture(scope="module")
def openai_agents() -> Conversation:
    return converse(OPENAI_AGENTS)


EXAMPLES = ["minimal", "openai_agents"]


# -- what every example must do ----------------------------------------------------------------------------


def check_protocol(c: Conversation) -> None:
    assert c.llm_errors == [], c.llm_errors
    for raw, line in zip(c.raw, c.lines, strict=True):
        assert raw.endswith("\n") and "\n" not in raw[:-1]
        assert set(line) <= {"role", "content", "final"} and line["role"] == "assistant"
        assert isinstance(line["content"], str) and line["content"]
        assert line.get("final", True) is False or "final" not in line
    # exactly one reply per user message, and it closes the turn (narrations only before it)
    assert len(c.turns) == len(c.user_messages) >= 3
    for turn in c.turns:
        assert [x.get("final") is not False for x in turn] == [False] * (len(turn) - 1) + [True]
    assert sum(x.get("final") is not False for x in c.lines) == len(c.user_messages)
    assert c.returncode == 0, c.stderr


@pytest.mark.parametrize("example", EXAMPLES)
def test_stdout_is_the_protocol_and_eof_exits_0(example, request):
    check_protocol(request.getfixturevalue(example))


@pytest.mark.parametrize("example", EXAMPLES)
def test_gold_calls_reach_the_server_in_order_and_change_its_state(example, request):
    c: Conversation = request.getfixturevalue(example)
    assert c.calls == GOLD
    assert c.digest["tool_calls"] == len(GOLD)
    disputes = c.diff["disputes"]["added"]
    assert [(d["account_id"], d["tx_id"], d["reason_code"]) for d in disputes] == [
        ("acc_00018", "tx_000422", "unauthorized")]
    # what the task wants told to the user was told (ScriptedLLM reports it from the tool results)
    assert any("tx_000422" in x["content"] for x in c.lines)


@pytest.mark.parametrize("example", EXAMPLES)
def test_narration_comes_before_its_tool_calls(example, request):
    c: Conversation = request.getfixturevalue(example)
    spoken = [r.content for r in c.replies if r.content and r.tool_calls]
    assert spoken, "the script has no reply with both text and tool calls: nothing was checked"
    assert [x["content"] for x in c.lines if x.get("final") is False] == spoken
    assert c.late_narrations == []


@pytest.mark.parametrize("example", EXAMPLES)
def test_llm_sees_policy_tools_and_whole_history(example, request):
    c: Conversation = request.getfixturevalue(example)
    first, last = c.requests[0], c.requests[-1]
    assert first["messages"][0] == {"role": "system", "content": c.policy}
    assert [t["function"]["name"] for t in first["tools"]] == [t["name"] for t in c.mcp_tools]
    for schema, tool in zip(first["tools"], c.mcp_tools, strict=True):
        assert schema["function"]["description"] == tool["description"]
        assert schema["function"]["parameters"]["properties"] == tool["inputSchema"]["properties"]
    assert first["temperature"] == 0 and first["seed"] == int(SEED)
    # the history carries every user message, every tool call with its provider id, every result
    history = last["messages"]
    assert [m["content"] for m in history if m["role"] == "user"] == c.user_messages
    ids = [call["id"] for m in history if m["role"] == "assistant" for call in m.get("tool_calls") or []]
    assert [m["tool_call_id"] for m in history if m["role"] == "tool"] == ids
    assert len(ids) == len(GOLD) and all(i.startswith("call_") for i in ids)
    assert all(r == first["tools"] for r in (q["tools"] for q in c.requests))


def test_minimal_tool_results_are_the_structured_content_as_sorted_json(minimal):
    history = minimal.requests[-1]["messages"]
    results = [m["content"] for m in history if m["role"] == "tool"]
    customer = json.loads(results[0])
    assert customer["phone_number"] == "+15555640027"
    assert results[0] == json.dumps(customer, sort_keys=True)


def test_minimal_behaves_like_the_in_process_litellm_agent(minimal):
    """Same script, same user: the in-process `litellm:` agent makes the same calls and says the same."""
    from shiftbox import agent_from_spec, user_from_spec
    from shiftbox.orchestrator import run_simulation
    from shiftbox.world import open_world

    async def in_process():
        with fake_openai(ScriptedLLM([TASK])) as llm:
            opts = {"api_base": llm.base_url, "api_key_env": "SHIFTBOX_EXAMPLES_TEST_KEY", "seed": SEED}
            agent = agent_from_spec("litellm:openai/fake-model", opts)
            user = user_from_spec("litellm:openai/fake-model", opts)
            async with open_world("banking") as world:
                return await run_simulation(TASK, 0, 0, agent, user, world)

    os.environ.setdefault("SHIFTBOX_EXAMPLES_TEST_KEY", "sk-test")
    t = anyio.run(in_process)
    assert t.termination.reason == "user_stop"
    assert [(c.name, c.arguments) for c in t.tool_calls] == minimal.calls
    said = [(m.content, bool(m.tool_calls)) for m in t.messages if m.role == "assistant" and m.content]
    assert said == [(x["content"], x.get("final") is False) for x in minimal.lines]
    users = [m.content for m in t.messages if m.role == "user"]
    assert users[:-1] == minimal.user_messages and "###STOP###" in users[-1]  # the stop never reaches an agent


# -- limits -------------------------------------------------------------------------------------------------


def test_minimal_gives_up_after_20_steps_and_keeps_going():
    looping = lambda body: Reply.tool_call("get_customer_by_phone", {"phone_number": "+15555640027"})  # noqa: E731
    c = converse(MINIMAL, script=looping, user_messages=["Who am I?", "Still there?"])
    assert c.returncode == 0, c.stderr
    assert [x["content"] for x in c.lines] == [
        "I'm sorry, I could not complete that. Could you please try again or rephrase your request?"] * 2
    assert len(c.calls) == 40 and len(c.requests) == 40
    # the second turn's first request still carries the first turn, apology included
    second = c.requests[20]["messages"]
    assert [m["content"] for m in second if m["role"] == "user"] == ["Who am I?", "Still there?"]
    assert second[-2] == {"role": "assistant", "content": c.lines[0]["content"]}


# -- through the harness: `shiftbox run --agent cmd:...` and its recording gateway --------------------------


def test_gateway_records_every_call_and_metrics_equal_the_in_process_run(tmp_path, monkeypatch):
    """The minimal example under `shiftbox run` (its calls reach the server only through the run's
    gateway) is scored exactly like the same conversation with the in-process `litellm:` agent."""
    from typer.testing import CliRunner

    from shiftbox.cli import app
    from shiftbox.trajectory import read_trajectories

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    runner = CliRunner()

    def run(out: str, agent: list[str]) -> tuple[Any, dict[str, Any]]:
        with fake_openai(ScriptedLLM([TASK])) as llm:
            args = ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN),
                    "--task-id", TASK.id, "--out", str(tmp_path / out), "--seed", SEED,
                    "--user", "litellm:openai/fake-model", "--user-arg", f"api_base={llm.base_url}",
                    "--user-arg", "api_key_env=OPENAI_API_KEY", *agent]
            agent_args = [a.replace("{base}", llm.base_url) for a in args]
            res = runner.invoke(app, agent_args)
            assert res.exit_code == 0, res.output
        scored = runner.invoke(app, ["metrics", str(tmp_path / out), "--json"])
        assert scored.exit_code == 0, scored.output
        [trajectory] = read_trajectories(tmp_path / out)
        return trajectory, json.loads(scored.stdout)

    command = " ".join([*MINIMAL, "--api-base", "{base}"])
    external, external_metrics = run("external", ["--agent", f"cmd:{command}"])
    inproc, inproc_metrics = run("inproc", ["--agent", "litellm:openai/fake-model",
                                            "--agent-arg", "api_base={base}",
                                            "--agent-arg", "api_key_env=OPENAI_API_KEY"])
    assert external.termination.reason == inproc.termination.reason == "user_stop"
    # every call the program made over MCP is in the trajectory, as the in-process agent made it
    assert [(c.name, c.arguments) for c in external.tool_calls] == GOLD
    assert [(c.name, c.arguments, c.result, c.is_error) for c in external.tool_calls] == [
        (c.name, c.arguments, c.result, c.is_error) for c in inproc.tool_calls]
    assert external.final_state == inproc.final_state
    assert [(m.role, m.content) for m in external.messages] == [(m.role, m.content) for m in inproc.messages]
    # the same scores, all of them (but the agent's name, which differs, and its LLM use: an external program's
    # calls are its own, unseen by shiftbox; the user simulator's are the same)
    assert external_metrics.pop("agent") != inproc_metrics.pop("agent")
    external_usage, inproc_usage = external_metrics.pop("usage"), inproc_metrics.pop("usage")
    assert "agent" not in external_usage and inproc_usage["agent"]["calls"] > 0
    assert external_usage["user"] == inproc_usage["user"]
    assert external_metrics == inproc_metrics
    assert external_metrics["tool_calls"] == len(GOLD) and external_metrics["tsr"]["mean"] == 1.0
