"""The fork server of `--workers` preloads litellm (seconds to import) only for a role whose calls need it: a
fast path served without litellm (`LLMSettings.calls_litellm`) does not."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import pytest

from shiftbox import agent_from_spec, user_from_spec
from shiftbox.runs._workers import preloaded_modules

FAKE = "litellm:openai/fake-model"


@pytest.mark.parametrize(("options", "preloaded"), [
    ({"api_base": "http://127.0.0.1:9/v1"}, False),
    ({"api_base": "http://127.0.0.1:9/v1", "fast_path": "false"}, True),
    ({"api_base": "http://127.0.0.1:9/v1", "extra.reasoning_effort": "low"}, True),
    ({}, True),   # no api_base: litellm's own route to OpenAI
])
def test_worker_processes_preload_litellm_only_for_a_role_whose_calls_need_it(monkeypatch, options, preloaded):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")

    def never_made():
        raise AssertionError("a scripted role is not made to decide")

    for agent, user in ((FAKE, "scripted"), ("scripted:oracle", FAKE)):
        job = SimpleNamespace(config=SimpleNamespace(agent=agent, user=user),
                              make_agent=partial(agent_from_spec, FAKE, options) if agent == FAKE else never_made,
                              make_user=partial(user_from_spec, FAKE, options) if user == FAKE else never_made)
        assert ("litellm" in preloaded_modules(job)) == preloaded, (agent, user)


def test_a_fork_server_that_preloads_litellm_has_litellms_environment(monkeypatch):
    # The fork server imports litellm by name, past `import_litellm`: without the local price map setting, that
    # import would try to download the map (seen: 30 s of retries offline) for a Python API caller who never set it.
    from shiftbox.runs import _workers

    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    started = []
    monkeypatch.setattr(_workers._CONTEXT, "set_forkserver_preload", started.append)
    monkeypatch.setattr(_workers.multiprocessing.forkserver, "ensure_running", lambda: None)
    job = SimpleNamespace(config=SimpleNamespace(agent=FAKE, user="scripted"),
                          make_agent=partial(agent_from_spec, FAKE, {}), make_user=None)
    _workers.start_fork_server(job)
    assert "litellm" in started[0]
    import os
    assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") == "True"
