"""`shiftbox run`'s start-up: up to its first LLM request, a fast-path run loads only what that request needs (its
own command, not the other commands' libraries; no metrics, reports or comparisons, which load once the run has
ended; no httpx for a plain-http endpoint, no tool set but the one it serves), loads no SSL certificates for a
plain-http endpoint, scans the installed entry points once and never parses litellm's price map for a model it does
not hold, and makes each JSON schema its tools publish once. Checked in
the program itself (a subprocess stopped at its first completion request), so a saving cannot silently go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.testing.fake_llm import scripted_tasks
from shiftbox.testing.fake_openai import FakeOpenAI
from shiftbox_servers.kit import get_domain
from tests.client.llm.test_llm_without_litellm import REPO, TASK_FILE, run_args

PROBE = """
import importlib.metadata, json, os, socket, ssl, sys
import pydantic.json_schema
certificate_loads, scans, schemas = [], [], []
generate = pydantic.json_schema.GenerateJsonSchema.generate
def counted_generate(self, *args, **kwargs):
    schemas.append(1)
    return generate(self, *args, **kwargs)
pydantic.json_schema.GenerateJsonSchema.generate = counted_generate
scan = importlib.metadata.entry_points
def counted_scan(**selection):
    scans.append(sys._getframe(1).f_globals["__name__"])
    return scan(**selection)
importlib.metadata.entry_points = counted_scan
load_verify_locations = ssl.SSLContext.load_verify_locations
def counted(self, *args, **kwargs):
    certificate_loads.append(1)
    return load_verify_locations(self, *args, **kwargs)
ssl.SSLContext.load_verify_locations = counted
send = socket.socket.send
def first_request(self, data, *args):
    if b"/chat/completions" in bytes(data[:200]):
        from shiftbox.llm._prices import local_price_map
        with open(os.environ["SHIFTBOX_TEST_REPORT"], "w") as report:
            json.dump({"modules": sorted(sys.modules), "certificate_loads": len(certificate_loads),
                       "entry_point_scans": scans, "json_schemas_made": len(schemas),
                       "price_map_parsed": local_price_map.cache_info().currsize > 0}, report)
        os._exit(0)
    return send(self, data, *args)
socket.socket.send = first_request
sys.argv[0] = "shiftbox"
from shiftbox.cli import app
app()
"""
"""`shiftbox` as installed (`app()`), stopped as it sends its first completion request, reporting what it loaded."""

LOADED_LATER = ("shiftbox.metrics", "shiftbox.report", "shiftbox.runs._compare", "shiftbox.runs._reports",
                "shiftbox.runs._score", "shiftbox.runs._summary", "shiftbox.replay", "shiftbox.serve",
                "shiftbox.assessor", "shiftbox.generation", "shiftbox.agentchangebench", "shiftbox.conformance",
                "shiftbox.rl", "shiftbox.testing", "shiftbox.cli.compare", "shiftbox.cli.metrics",
                "shiftbox.cli.report", "shiftbox.cli.replay", "shiftbox.cli.serve", "shiftbox.cli.tasks",
                "shiftbox.cli.snapshots", "litellm", "openai", "mcp", "mcp_types",
                "shiftbox_servers.banking._reference", "httpx", "httpcore", "shiftbox.tasks._reference_format")
"""What a fast-path run must not have loaded at its first request (each was once loaded at start-up; `mcp`, the MCP
SDK, whose `__init__` imports its client and server with starlette, uvicorn, cryptography and opentelemetry: the
in-process world calls the kit directly; nor the protocol's models, `mcp_types`, whose `__init__` builds every one of
them: the kit shapes and the world reads the wire dicts of its answers (tests/client/world/test_tool_errors.py: nor
after); the domain's AgentChangeBench tool set loads only for `--toolset agentchangebench`, the reference's task format only for a
reference task file; httpx only once a request needs its client: https, a proxy, a cookie, an error reply)."""

LIBRARIES = ("pydantic.fields", "anyio", "sniffio", "typer", "rich.progress", "httptools", "jsonschema_rs")
"""What a fast-path run needs before its first request, each imported whole by its package's `__init__` (`sniffio`,
which anyio imports when it first asks which event loop runs; pydantic's, which imports lazily, by its models' and
fields' module): no narrower import of theirs loads less, so this is the floor."""


def first_request_report(tmp_path: Path) -> dict:
    server = FakeOpenAI(ScriptedLLM(scripted_tasks([TASK_FILE]))).start()
    report = tmp_path / "report.json"
    env = {**os.environ, "SHIFTBOX_TEST_REPORT": str(report), "OPENAI_API_KEY": "sk-fake"}
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, *run_args(server.base_url, tmp_path / "run", True)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.stop()
    assert report.exists(), f"the run sent no completion request (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(report.read_text())


def third_party(modules: list[str]) -> set[str]:
    """The top-level packages of `modules` that are neither the standard library's nor shiftbox's."""
    return {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - {"shiftbox", "shiftbox_servers"}


def libraries_floor() -> set[str]:
    """The third-party packages a fresh interpreter holds after importing `LIBRARIES`."""
    done = subprocess.run([sys.executable, "-c", f"import json, sys, {', '.join(LIBRARIES)}; "
                           "print(json.dumps(sorted(sys.modules)))"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return third_party(json.loads(done.stdout))


def test_a_fast_path_run_reaches_its_first_request_loading_only_what_it_needs(tmp_path):
    seen = first_request_report(tmp_path)
    modules = set(seen["modules"])
    assert {"shiftbox.cli.run", "shiftbox.runs._evaluate", "shiftbox.world"} <= modules  # the probe saw a real run
    loaded = sorted(m for m in modules if m.split(".")[0] in ("shiftbox", "shiftbox_servers", "litellm", "openai",
                                                             "mcp", "mcp_types", "httpx", "httpcore")
                    and any(m == name or m.startswith(name + ".") for name in LOADED_LATER))
    assert loaded == []
    assert sorted(third_party(seen["modules"]) - libraries_floor()) == []  # no third-party package of its own
    assert seen["certificate_loads"] == 0  # a plain-http endpoint: no SSL context (the preflight's GET included)
    assert seen["price_map_parsed"] is False  # fake-model is nowhere in litellm's price map: not parsed
    # the domain, the agent's and the user's kinds found in one scan (pydantic's own for its plug-ins aside)
    assert [m for m in seen["entry_point_scans"] if m.startswith("shiftbox")] == ["shiftbox_servers.kit._domain"]
    # each JSON schema the tools publish made once: a tool's arguments (not again for the tool contract's check), a
    # return model's (shared by the tools returning it)
    tools = list(get_domain("banking").toolset("default"))
    assert seen["json_schemas_made"] == len(tools) + len({t.signature.return_annotation for t in tools})
