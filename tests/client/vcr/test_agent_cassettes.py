"""The `shiftbox_vcr` fixture and `python -m shiftbox.vcr`, through docs/vcr.md's example run as written.

The example's agent calls shiftbox's fake OpenAI server through the real openai SDK, in-process and as a program
(a subprocess, as a `cmd:` agent runs). Its tests run in a pytest of their own (as in the user's CI): recorded with
`--shiftbox-record=once`, the server stopped, replayed under `CI=1` against another port. The key and organization
sent while recording appear nowhere in the cassettes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import shiftbox.vcr
from shiftbox.testing import Reply, fake_openai

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-shiftbox-vcr-test-0123456789abcdef"
ORGANIZATION = "org-shiftbox-vcr-secret"
ANSWER = "Your refund was issued on Monday; it reaches your account within 3 days."
UNRECORDED = '''import pytest


@pytest.mark.shiftbox_vcr(path="cassettes/never-recorded.yaml", record_mode="none")
def test_unrecorded(shiftbox_vcr):
    pass
'''


def page_examples() -> tuple[str, str]:
    """docs/vcr.md's agent.py and test_agent.py (its first two python blocks)."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "vcr.md").read_text(), re.S)
    return blocks[0], blocks[1]


def run_pytest(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("CI", "OPENAI_API_KEY", "OPENAI_ORG_ID", "LLM_BASE_URL", shiftbox.vcr.RECORD_MODE_ENV,
                         shiftbox.vcr.CASSETTE_ENV, "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rA",
                           *args],
                          cwd=folder, env={**base, **env}, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str], list[dict[str, str]]]:
    """The page's example, recorded against the fake server (which is stopped afterwards)."""
    folder = tmp_path_factory.mktemp("vcr-example")
    agent, tests = page_examples()
    (folder / "agent.py").write_text(agent)
    (folder / "test_agent.py").write_text(tests)
    reply = Reply.text(ANSWER, headers={"openai-organization": ORGANIZATION, "set-cookie": f"session={KEY}"})
    with fake_openai(lambda body: reply, api_key=KEY) as server:
        done = run_pytest(folder, {"OPENAI_API_KEY": KEY, "OPENAI_ORG_ID": ORGANIZATION,
                                   "LLM_BASE_URL": server.base_url}, "--shiftbox-record=once")
        headers = list(server.headers)
    return folder, done, headers


def test_the_page_example_records_its_cassettes_without_credentials(recorded):
    folder, done, headers = recorded
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert len(headers) == 2 and all(h["authorization"] == f"Bearer {KEY}" for h in headers)
    assert all(h["openai-organization"] == ORGANIZATION for h in headers)  # sent live, never written
    cassettes = sorted((folder / "cassettes" / "test_agent").glob("*.yaml"))
    assert [c.name for c in cassettes] == ["test_agent_answers.yaml", "test_agent_program_answers.yaml"]
    for cassette in cassettes:
        text = cassette.read_text()
        [interaction] = yaml.safe_load(text)["interactions"]  # vcrpy's format
        assert "Where is my refund?" in interaction["request"]["body"]
        assert ANSWER in interaction["response"]["body"]["string"]
        assert KEY not in text and ORGANIZATION not in text
        assert not re.search(r"(?im)^\s*(authorization|openai-organization|set-cookie):", text)


def test_the_page_example_replays_offline_in_ci(recorded):
    """The server is gone and the endpoint differs (host and port are not matched): the cassettes answer."""
    folder, _, _ = recorded
    (folder / "test_unrecorded.py").write_text(UNRECORDED)
    try:
        done = run_pytest(folder, {"CI": "1", "OPENAI_API_KEY": "unused", "LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    finally:
        (folder / "test_unrecorded.py").unlink()
    assert "2 passed, 1 error" in done.stdout, done.stdout + done.stderr
    assert "PASSED test_agent.py::test_agent_answers" in done.stdout
    assert "PASSED test_agent.py::test_agent_program_answers" in done.stdout
    assert "no cassette to replay at" in done.stdout and "--shiftbox-record=once" in done.stdout


def test_a_request_the_cassette_does_not_hold_fails_in_mode_none(recorded):
    """vcrpy refuses it; openai 3 lets the refusal through as it is (openai 2 wrapped it in its APIConnectionError,
    and shiftbox allows both)."""
    from openai import APIConnectionError, OpenAI
    from vcr.errors import CannotOverwriteExistingCassetteException

    folder, _, _ = recorded
    cassette = folder / "cassettes" / "test_agent" / "test_agent_answers.yaml"
    client = OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused", max_retries=0)
    with shiftbox.vcr.use_cassette(cassette, "none"), \
            pytest.raises((CannotOverwriteExistingCassetteException, APIConnectionError)) as raised:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "other"}])
    refused = raised.value.__cause__ if isinstance(raised.value, APIConnectionError) else raised.value
    assert isinstance(refused, CannotOverwriteExistingCassetteException)
    assert "no recorded interaction matches it (the closest differ in llm_body)" in str(refused)


def test_without_vcrpy_the_fixture_names_the_extra(tmp_path):
    (tmp_path / "conftest.py").write_text("import sys\nsys.modules['vcr'] = None  # as if not installed\n")
    (tmp_path / "test_x.py").write_text("def test_x(shiftbox_vcr):\n    pass\n")
    done = run_pytest(tmp_path, {})
    assert "1 error" in done.stdout, done.stdout + done.stderr
    assert "the shiftbox_vcr fixture needs vcrpy: pip install 'shiftbox[vcr]'" in done.stdout


def test_import_vcr_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vcr", None)
    assert not shiftbox.vcr.vcr_installed()
    with pytest.raises(ImportError, match=re.escape("pip install 'shiftbox[vcr]'")):
        shiftbox.vcr.import_vcr()


def test_the_plugin_and_the_package_do_not_import_vcrpy():
    code = "import sys, shiftbox, shiftbox.pytest, shiftbox.vcr; print('vcr' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_record_mode_defaults(monkeypatch):
    monkeypatch.delenv(shiftbox.vcr.RECORD_MODE_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert shiftbox.vcr.default_record_mode() == "once"
    monkeypatch.setenv("CI", "true")
    assert shiftbox.vcr.default_record_mode() == "none"
    monkeypatch.setenv(shiftbox.vcr.RECORD_MODE_ENV, "new_episodes")
    assert shiftbox.vcr.default_record_mode() == "new_episodes"
    monkeypatch.setenv(shiftbox.vcr.RECORD_MODE_ENV, "sometimes")
    with pytest.raises(ValueError, match="use one of none, once, new_episodes, all"):
        shiftbox.vcr.default_record_mode()
