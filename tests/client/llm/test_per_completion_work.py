"""What a completion costs the roles besides the call itself, counted: the settings' connection is made once per
key, not per call, and a call's usage is added up without validating what was converted already."""

from __future__ import annotations

from shiftbox._usage import COST_FIELD, Usage
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


def test_usage_is_added_up_without_validating_it_again(monkeypatch):
    validated = []
    original = Usage.__init__
    monkeypatch.setattr(Usage, "__init__", lambda self, **kw: validated.append(kw) or original(self, **kw))
    one = Usage.of_response({"usage": {"prompt_tokens": 7, "completion_tokens": 3}, COST_FIELD: 0.25})
    total = one + Usage.of_response({"usage": {"prompt_tokens": 1, "completion_tokens": 2}})
    assert validated == []
    expected = Usage.model_validate({"prompt_tokens": 8, "completion_tokens": 5, "cost_usd": 0.25, "calls": 2})
    assert total == expected
    assert total.model_dump_json() == expected.model_dump_json() == \
        '{"prompt_tokens":8.0,"completion_tokens":5.0,"cost_usd":0.25,"calls":2.0}'
