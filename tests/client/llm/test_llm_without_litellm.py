"""The fast path without litellm: the bodies `own_body` builds, the responses `own_response` converts and the
prices `_prices` finds are the ones litellm's own code gives (compared here with litellm imported), a case they
do not know is left to litellm, and a run whose every role takes the fast path never imports litellm or the
openai SDK (a `shiftbox run` subprocess, which also exits fast with complete outputs and the right code)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from shiftbox.llm import LLMRequest, import_litellm, price_usd
from shiftbox.llm._openai_body import dumps, own_body
from shiftbox.llm._openai_http import _completions_url, converted_by_litellm, request_body
from shiftbox.llm._openai_response import own_response
from shiftbox.llm._prices import _known_locally, known_model, local_price_map
from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.testing.fake_llm import scripted_tasks
from shiftbox.testing.fake_openai import FakeOpenAI
from shiftbox.trajectory import read_trajectories
from tests.client.llm.test_openai_body import CONVERSATION, NOT_PLAIN, TOOLS

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[3]
OWN_ROUTES = ["openai/fake-model", "hosted_vllm/fake-model", "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct",
              "openai/my-proxy-alias"]
NESTED_TOOLS = [{"type": "function", "function": {
    "name": "deep", "description": "Nested.", "strict": True,
    "parameters": {"type": "object", "additionalProperties": False, "required": ["a"],
                   "properties": {"a": {"type": "object", "additionalProperties": True, "strict": False,
                                        "properties": {"b": {"type": "array", "items": {
                                            "type": "object", "additionalProperties": False,
                                            "properties": {"strict": {"type": "boolean"}}}}}},
                                  "kind": {"type": "string", "enum": ["x", "y"]}}}}}]
OWN_PARAMS = [{}, {"temperature": 0.0, "seed": 7, "drop_params": True},
              {"temperature": 0.3, "seed": 7, "max_tokens": 64, "tool_choice": "required"},
              {"tool_choice": "auto", "parallel_tool_calls": False, "temperature": 1, "seed": True},
              {"stop": ["x", "y"], "top_p": 0.5, "presence_penalty": 0, "frequency_penalty": 0.25, "seed": 0},
              {"parallel_tool_calls": True, "stop": "END", "max_tokens": 1, "tool_choice": "none",
               "frequency_penalty": -1, "presence_penalty": 1.5, "top_p": 1, "temperature": 2, "seed": 3,
               "drop_params": False}]


async def litellm_body(request: LLMRequest) -> str:
    provider, _, model = request.model.partition("/")
    return dumps(await request_body(copy.deepcopy(request), provider, model))


@pytest.mark.parametrize("route", OWN_ROUTES)
async def test_own_bodies_are_the_ones_litellm_builds(route):
    provider, _, model = route.partition("/")
    for params in OWN_PARAMS:
        for tools in (TOOLS, NESTED_TOOLS, None):
            for n in (1, 2, 3, len(CONVERSATION)):
                request = LLMRequest(role="agent", model=route, messages=CONVERSATION[:n], tools=tools, params=params)
                body = own_body(request, provider, model)
                assert body is not None, (params, tools)
                assert dumps(body) == await litellm_body(request), (params, n)


LEFT_TO_LITELLM = [
    ("openai/gpt-4o-mini", {}, None, None),   # in the price map: catalog rules
    ("openai/o3-mini", {}, None, None),   # o-series: its system prompt is rewritten
    ("openai/gpt-5-local", {}, None, None),   # gpt-5 rules by name, whatever the map says
    ("hosted_vllm/gpt-4o", {}, None, None),
    ("openai/fake-model", {"reasoning_effort": "low"}, None, None),
    ("openai/fake-model", {"response_format": {"type": "json_object"}}, None, None),
    ("openai/fake-model", {"temperature": None}, None, None),
    ("openai/fake-model", {"temperature": "0.5"}, None, None),
    ("openai/fake-model", {"max_tokens": True}, None, None),
    ("openai/fake-model", {"tool_choice": {"type": "function", "function": {"name": "lookup"}}}, TOOLS, None),
    ("openai/fake-model", {"drop_params": "true"}, None, None),
    ("openai/fake-model", {}, [{"type": "custom", "custom": {"name": "x"}}], None),
    ("hosted_vllm/fake-model", {}, [{**TOOLS[0], "cache_control": {"type": "ephemeral"}}], None),
    *[("openai/fake-model", {}, None, messages) for messages in NOT_PLAIN],
]


@pytest.mark.parametrize(("route", "params", "tools", "messages"), LEFT_TO_LITELLM)
async def test_calls_it_does_not_know_are_left_to_litellm(route, params, tools, messages):
    provider, _, model = route.partition("/")
    request = LLMRequest(role="agent", model=route, messages=messages or CONVERSATION[:2], tools=tools, params=params)
    assert own_body(request, provider, model) is None


BASE = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi \u2603"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
CALLS = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
         {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{\"a\": \"\\u00e9\"}"}}]


REMOVED = object()


def shaped(**changes) -> dict:
    """BASE with top-level keys replaced (REMOVED removes one) and `message` / `choice` updates for the first choice."""
    data = copy.deepcopy(BASE)
    data["choices"][0]["message"].update(changes.pop("message", {}))
    data["choices"][0].update(changes.pop("choice", {}))
    for key, value in changes.items():
        if value is REMOVED:
            data.pop(key)
        else:
            data[key] = value
    return data


KNOWN_SHAPES = {
    "text": shaped(),
    "tool calls": shaped(message={"content": None, "tool_calls": CALLS}, choice={"finish_reason": "tool_calls"}),
    "tool calls said stop": shaped(message={"content": "Checking.", "tool_calls": CALLS[:1]}),
    "no finish reason": shaped(choice={"finish_reason": None}),
    "no finish reason, tool calls": shaped(message={"tool_calls": CALLS}, choice={"finish_reason": None}),
    "length": shaped(choice={"finish_reason": "length"}),
    "content filter": shaped(choice={"finish_reason": "content_filter"}),
    "null logprobs": shaped(choice={"logprobs": None}),
    "fingerprint": shaped(system_fingerprint="fp_1"),
    "null fingerprint": {**shaped(), "system_fingerprint": None},
    "no object": shaped(object=REMOVED),
    "no usage": shaped(usage=REMOVED),
    "usage that does not add up": shaped(usage={"total_tokens": 9, "completion_tokens": 5, "prompt_tokens": 1}),
    "empty content": shaped(message={"content": ""}),
    "null refusal": shaped(message={"refusal": None}),
    "a refusal": shaped(message={"content": None, "refusal": "I can't."}),
    "index out of order": shaped(choice={"index": 5}),
    "two choices": {**shaped(), "choices": [*BASE["choices"], {"index": 1, "finish_reason": "length",
                                                               "message": {"role": "assistant", "content": "yo"}}]},
}
UNKNOWN_SHAPES = {
    "vllm extras": shaped(prompt_logprobs=None, kv_transfer_params=None),
    "stop reason": shaped(choice={"stop_reason": None}),
    "logprobs": shaped(choice={"logprobs": {"content": []}}),
    "reasoning": shaped(message={"reasoning_content": "hmm"}),
    "think tags": shaped(message={"content": "<think>x</think>y"}),
    "empty tool calls": shaped(message={"tool_calls": []}),
    "parallel": shaped(message={"tool_calls": [{**CALLS[0], "function": {"name": "multi_tool_use.parallel",
                                                                          "arguments": "{}"}}]}),
    "token details": shaped(usage={**BASE["usage"], "prompt_tokens_details": {"cached_tokens": 0}}),
    "service tier": shaped(service_tier="default"),
    "no usage counts": shaped(usage={"prompt_tokens": 3}),
    "null usage": {**shaped(), "usage": None},
    "bool count": shaped(usage={**BASE["usage"], "prompt_tokens": True}),
    "other finish": shaped(choice={"finish_reason": "eos"}),
    "other role": shaped(message={"role": "tool"}),
    "annotations": shaped(message={"annotations": []}),
    "no id": shaped(id=REMOVED),
    "no choices": shaped(choices=[]),
    "lone surrogate": shaped(message={"content": "\ud83d"}),   # litellm's dump falls back to another shape
    "lone surrogate in a call": shaped(message={"tool_calls": [{**CALLS[0], "id": "\udc00"}]}),
    "lone surrogate in arguments": shaped(message={"tool_calls": [{**CALLS[0], "function": {
        "name": "f", "arguments": "{\"a\": \"\ud800\"}"}}]}),
    "lone surrogate in a tool name": shaped(message={"tool_calls": [{**CALLS[0], "function": {
        "name": "f\udfff", "arguments": "{}"}}]}),
    "lone surrogate in a refusal": shaped(message={"content": None, "refusal": "\ud83d"}),
    "lone surrogate in the second choice": {**shaped(), "choices": [*BASE["choices"], {
        "index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "\ud83d!"}}]},
    "lone surrogate in the id": shaped(id="chatcmpl-\ud83d"),
    "lone surrogate in the model": shaped(model="fake-\udc00"),
    "lone surrogate in the fingerprint": shaped(system_fingerprint="fp_\ud800"),
}


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
@pytest.mark.parametrize("shape", list(KNOWN_SHAPES))
def test_own_responses_are_the_json_of_litellms_conversion(provider, shape):
    data = KNOWN_SHAPES[shape]
    response = httpx.Response(200, content=b"{}", headers={"x-request-id": "r1"})   # only its headers are read
    mine = own_response(copy.deepcopy(data))
    assert mine is not None
    assert json.dumps(mine) == json.dumps(converted_by_litellm(provider, "fake-model", response, copy.deepcopy(data)))


@pytest.mark.parametrize("shape", list(UNKNOWN_SHAPES))
def test_responses_of_other_shapes_are_left_to_litellm(shape):
    assert own_response(copy.deepcopy(UNKNOWN_SHAPES[shape])) is None


def test_own_responses_serialize_nothing(monkeypatch):
    """Whether a response's text is valid Unicode is asked of its texts alone: the response (one per completion) is
    not serialized again to find out."""
    dumped: list[object] = []
    real = json.dumps
    monkeypatch.setattr(json, "dumps", lambda value, *args, **kwargs: (dumped.append(value), real(value, *args,
                                                                                                  **kwargs))[1])
    converted = [own_response(copy.deepcopy(data)) for data in (*KNOWN_SHAPES.values(), *UNKNOWN_SHAPES.values())]
    assert dumped == []
    assert sum(response is not None for response in converted) == len(KNOWN_SHAPES)


UNKNOWN_MODELS = ["openai/fake-model", "hosted_vllm/fake-model", "openai/my-proxy-alias",
                  "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", "openai/Qwen2.5-7B-local"]


@pytest.mark.parametrize("model", UNKNOWN_MODELS)
def test_models_the_price_map_does_not_know_cost_nothing_in_litellm_too(model):
    assert not known_model(model)
    assert price_usd(import_litellm(), model, 1000, 1000) == 0.0


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "gpt-4.1", "openai/GPT-4o", "hosted_vllm/gpt-4o"])
def test_models_the_price_map_knows_are_known(model):
    assert known_model(model)


@pytest.fixture
def fresh_price_map():
    _known_locally.cache_clear(), local_price_map.cache_clear()
    yield
    _known_locally.cache_clear(), local_price_map.cache_clear()


@pytest.mark.parametrize(("model", "known", "parsed"), [
    *[(m, False, False) for m in UNKNOWN_MODELS],  # no name of theirs is in the file: answered from its text
    ("openai", False, True), ("chat", False, True),  # values in the file, never keys: parsed to tell
    ("openai/gpt-4o-mini", True, True), ("gpt-4.1", True, True), ("openai/GPT-4o", True, True)])
def test_the_bundled_map_is_parsed_only_when_its_text_holds_a_name_of_the_model(model, known, parsed,
                                                                                 fresh_price_map):
    assert _known_locally(model) is known
    assert local_price_map.cache_info().currsize == int(parsed)


def test_a_map_with_unicode_escapes_is_always_parsed(tmp_path, monkeypatch, fresh_price_map):
    """`caf\\u00e9` is the key "café", spelled otherwise than json.dumps spells it: only parsing finds it."""
    escaped = tmp_path / "prices.json"
    escaped.write_text('{"caf\\u00e9": {"input_cost_per_token": 1e-06}}', encoding="utf-8")
    monkeypatch.setattr("shiftbox.llm._prices._price_map_file", lambda: escaped)
    assert _known_locally("openai/café") and not _known_locally("openai/cafe")


@pytest.mark.parametrize("base", ["http://127.0.0.1:8000/v1", "https://vllm.example/v1/chat/completions",
                                  "http://host:1/openai/deployments/x"])
def test_hosted_vllm_posts_where_litellm_does(base):
    import_litellm()
    from shiftbox.llm._openai_http import _chat_config

    litellm_url = _chat_config("hosted_vllm", "m").get_complete_url(api_base=base, api_key="k", model="m",
                                                                   optional_params={}, litellm_params={})
    assert _completions_url.__wrapped__("hosted_vllm", "m", base, "k") == litellm_url


# -- whole runs, as the program -------------------------------------------------------------------------------

PROGRAM = """
import json, os, sys
real_exit = os._exit
def reporting_exit(code):
    with open(os.environ["SHIFTBOX_TEST_REPORT"], "w") as report:
        json.dump({"code": code, "litellm": "litellm" in sys.modules, "openai": "openai" in sys.modules}, report)
    real_exit(code)
os._exit = reporting_exit
sys.argv[0] = "shiftbox"
from shiftbox.cli import app
app()
"""
"""`shiftbox` as installed (`app()`), with `os._exit` reporting the code and whether litellm and the openai SDK
were imported: no report means the program did not exit fast."""
TASK_FILE = REPO / "snapshots" / "banking" / "v1" / "tasks-handwritten.json"


def shiftbox_program(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    env = {**os.environ, "SHIFTBOX_TEST_REPORT": str(report), "OPENAI_API_KEY": "sk-fake", "COLUMNS": "160"}
    done = subprocess.run([sys.executable, "-c", PROGRAM, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    return done, (json.loads(report.read_text()) if report.exists() else None)


def run_args(base_url: str, out: Path, fast: bool) -> list[str]:
    roles = []
    for role in ("agent", "user"):
        roles += [f"--{role}", "litellm:openai/fake-model", f"--{role}-arg", f"api_base={base_url}",
                  f"--{role}-arg", f"fast_path={str(fast).lower()}"]
    return ["run", "--domain", "banking", "--tasks", str(TASK_FILE), "--limit", "3", *roles, "--out", str(out)]


def test_a_fast_path_run_never_imports_litellm_and_plays_as_the_litellm_path(tmp_path):
    server = FakeOpenAI(ScriptedLLM(scripted_tasks([TASK_FILE]))).start()
    try:
        fast, fast_report = shiftbox_program([*run_args(server.base_url, tmp_path / "fast", True), "--record",
                                              str(tmp_path / "fixture")], tmp_path)
        slow, slow_report = shiftbox_program(run_args(server.base_url, tmp_path / "litellm", False), tmp_path)
    finally:
        server.stop()
    assert fast.returncode == 0, fast.stderr
    assert fast_report == {"code": 0, "litellm": False, "openai": False}
    assert slow_report == {"code": 0, "litellm": True, "openai": True}   # the comparison really used litellm
    assert "3 simulations in" in fast.stdout and "LLM tokens and cost by role" in fast.stdout
    assert "3 scored of 3" in fast.stdout and fast.stdout.rstrip().endswith("report.html")   # printed whole
    played = {name: read_trajectories(tmp_path / name) for name in ("fast", "litellm")}
    assert len(played["fast"]) == 3
    assert sorted(t.canonical_json() for t in played["fast"]) == sorted(t.canonical_json() for t in played["litellm"])
    written = (tmp_path / "fast" / "trajectories.jsonl").read_text()
    assert written.endswith("\n") and len(written.splitlines()) == 3   # every line whole on disk
    replayed, report = shiftbox_program(["replay", str(tmp_path / "fixture"), "--out", str(tmp_path / "re")], tmp_path)
    assert replayed.returncode == 0 and report == {"code": 0, "litellm": False, "openai": False}, replayed.stderr
    assert "replayed 3 simulations" in replayed.stdout and "identical to the recording" in replayed.stdout


def test_a_failing_run_exits_fast_with_its_code(tmp_path):
    missing = tmp_path / "none.json"
    bad, report = shiftbox_program(["run", "--domain", "banking", "--tasks", str(missing), "--agent",
                                    "scripted:oracle", "--user", "scripted", "--out", str(tmp_path / "r")], tmp_path)
    assert bad.returncode == 2 and report == {"code": 2, "litellm": False, "openai": False}
    assert "error:" in bad.stderr and str(missing.name) in bad.stderr
    down, report = shiftbox_program([*run_args("http://127.0.0.1:9/v1", tmp_path / "down", True)[:-2],
                                     "--no-preflight", "--limit", "1", "--out", str(tmp_path / "down")], tmp_path)
    assert down.returncode == 1 and report == {"code": 1, "litellm": False, "openai": False}, down.stderr
    assert len((tmp_path / "down" / "trajectories.jsonl").read_text().splitlines()) == 1


def test_starting_shiftbox_imports_neither_litellm_nor_the_openai_sdk():
    done = subprocess.run([sys.executable, "-c", "import sys, shiftbox, shiftbox.cli, shiftbox.llm; "
                           "print(sorted({'litellm', 'openai'} & sys.modules.keys()))"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "[]", done.stderr

