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
