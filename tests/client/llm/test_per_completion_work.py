"""What a completion costs the roles besides the call itself, counted: the settings' connection is made once per
key, not per call."""

from __future__ import annotations

from shiftbox.llm import forget_api_keys, parse_llm_options


def test_settings_make_their_connection_once_per_key(monkeypatch):
    monkeypatch.setenv("SHIFTBOX_TEST_KEY", "sk-one")
    settings, _ = parse_llm_options("agent", "openai/fake-model", {"api_base": "http://127.0.0.1:9",
                                                                    "api_key_env": "SHIFTBOX_TEST_KEY"})
    first = settings.connection()
    assert settings.connection() is first and first.api_key == "sk-one" and first.api_base == "http://127.0.0.1:9"
    monkeypatch.setenv("SHIFTBOX_TEST_KEY", "sk-two")   # read at each call: a new key, a new connection
    assert settings.connection().api_key == "sk-two"
    forget_api_keys()   # a kept Ray actor between runs: no connection holding a key survives
    monkeypatch.setenv("SHIFTBOX_TEST_KEY", "sk-one")
    assert settings.connection() is not first and settings.connection().api_key == "sk-one"


def test_a_fast_path_completion_enters_no_generator_context_manager(monkeypatch):
    """Timing the call (`timed`) and mapping its transport failures (`httpx_errors`) wrap every completion: as classes,
    not `contextlib.contextmanager` generators (a generator's enter and exit cost several calls more)."""
    import contextlib

    import anyio

    from shiftbox.llm import LLMConnection, LLMRequest, complete
    from shiftbox.testing import fake_openai

    entered: list[object] = []
    original = contextlib._GeneratorContextManager.__enter__
    monkeypatch.setattr(contextlib._GeneratorContextManager, "__enter__",
                        lambda self: entered.append(self.gen) or original(self))
    request = LLMRequest(role="agent", model="openai/fake-model", messages=[{"role": "user", "content": "hi"}],
                         params={"temperature": 0.0})
    with fake_openai(["one", "two"]) as server:
        connection = LLMConnection(api_base=server.base_url, api_key="sk-test")

        async def two_calls() -> None:
            await complete(request, connection)  # the first makes the pool and the body's template
            entered.clear()
            await complete(request, connection)

        anyio.run(two_calls)
    assert entered == []  # (that `timed` still times: test_litellm_agent's test of the trajectory's timing)
