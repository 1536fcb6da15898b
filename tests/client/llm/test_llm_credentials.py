"""Credentials on the `litellm:` path (issue 29 item 2): a missing, wrong or unauthorised key is never retried,
is named with the model, the endpoint, the provider's whole message and the fix; other messages are shortened
at a word boundary, never mid-word."""

from __future__ import annotations

import time

import pytest

from shiftbox.errors import LLMRequestRejected, LLMUnavailable
from shiftbox.llm import LLMConnection, LLMRequest, import_litellm
from shiftbox.llm._retries import complete_with_retries
from shiftbox.testing import Reply, fake_openai

pytestmark = pytest.mark.anyio

HI = [{"role": "user", "content": "hi"}]
WRONG_KEY_END = "You can find your API key at https://platform.openai.com/account/api-keys."
DENIED = ("Project `proj_abc` does not have access to model `fake-model`. " * 8).strip()  # > 300 characters


async def call(server, *, key: str | None, fast_path: bool = True, retries: int = 3, key_env: str | None = None,
               backoff_s: float = 0.2):
    request = LLMRequest(role="agent", model="openai/fake-model", messages=HI)
    connection = LLMConnection(api_base=server.base_url, api_key=key, api_key_env=key_env, fast_path=fast_path)
    return await complete_with_retries(request, connection, retries=retries, backoff_s=backoff_s, what="agent X")


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


async def test_a_missing_key_is_an_auth_failure_at_once_not_a_retried_server_error():
    import_litellm()  # its import (seconds) is not the call's time
    with fake_openai(["never"], api_key="sk-right") as server:
        base = server.base_url
        start = time.monotonic()
        with pytest.raises(LLMUnavailable) as caught:
            await call(server, key=None, backoff_s=5.0)   # a retry would wait 5 s first
        took = time.monotonic() - start
    message = str(caught.value)
    assert caught.value.cause == "auth" and "attempts" not in message and took < 5.0
    assert message.startswith(f"agent X: authentication failed for model openai/fake-model at {base}: ")
    assert "Missing credentials" in message and message.rstrip().endswith(
        "fix: set OPENAI_API_KEY to a valid key (or keep the key in another variable and name it: "
        "--agent-arg api_key_env=NAME)")
    assert "…" not in message


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "litellm-path"])
async def test_a_wrong_key_is_tried_once_and_the_providers_whole_message_is_kept(fast_path):
    with fake_openai(["never"], api_key="sk-right") as server:
        base = server.base_url
        with pytest.raises(LLMUnavailable) as caught:
            await call(server, key="sk-wrong-key-0001", fast_path=fast_path, key_env="MY_KEY")
    message = str(caught.value)
    assert server.rejected == [("POST", "/v1/chat/completions")]      # one request: no retry
    assert caught.value.cause == "auth"
    assert f"authentication failed for model openai/fake-model at {base}: " in message
    assert f"Incorrect API key provided: sk-w*********0001. {WRONG_KEY_END}; fix: set MY_KEY to a valid key" in message
    assert "litellm.AuthenticationError" not in message  # the provider's message, not the wrapper's class names


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "litellm-path"])
async def test_permission_denied_is_an_auth_failure_not_retried_and_not_cut(fast_path):
    with fake_openai(["never"], permission_denied=DENIED) as server:
        with pytest.raises(LLMUnavailable) as caught:
            await call(server, key="sk-fine", fast_path=fast_path)
    assert len(server.rejected) == 1 and caught.value.cause == "auth"
    assert f": {DENIED}; fix: set OPENAI_API_KEY" in str(caught.value)


async def test_other_failures_are_shortened_at_a_word_boundary():
    words = " ".join(f"word{n:03d}" for n in range(100))   # 799 characters
    with fake_openai([Reply.error(400, words)]) as server:
        with pytest.raises(LLMRequestRejected) as caught:
            await call(server, key="sk-fine")
    message = str(caught.value)
    assert message.endswith("…")
    last = message.removesuffix("…").split()[-1]
    assert last.startswith("word") and len(last) == len("word000"), last   # a whole word before the ellipsis
    assert len(message) < len(words)
