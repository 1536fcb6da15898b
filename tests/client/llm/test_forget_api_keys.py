"""A process serving run after run (a kept Ray actor) drops every value that holds a run's API key between runs."""

from __future__ import annotations

import sys
import types

import httpx

from shiftbox.llm import _openai_http as fast_http
from shiftbox.llm import forget_api_keys
from shiftbox.llm._http_bare import bare_head

KEY = "sk-run-one-0001"
URL = "http://127.0.0.1:9/v1/chat/completions"


def test_every_value_holding_a_key_is_dropped(monkeypatch):
    flushed: list[bool] = []
    litellm = types.SimpleNamespace(in_memory_llm_clients_cache=types.SimpleNamespace(
        flush_cache=lambda: flushed.append(True)))
    monkeypatch.setitem(sys.modules, "litellm", litellm)
    assert KEY.encode() in bare_head(b"POST", URL, KEY, True).before
    fast_http._completions_url("openai", "fake-model", "http://127.0.0.1:9/v1", KEY)
    client = httpx.AsyncClient()
    assert fast_http._prepared_parts(client, URL, KEY, 5.0)[1]["authorization"] == f"Bearer {KEY}"
    assert bare_head.cache_info().currsize and fast_http._completions_url.cache_info().currsize
    assert fast_http._prepared

    forget_api_keys()

    assert bare_head.cache_info().currsize == 0
    assert fast_http._completions_url.cache_info().currsize == 0
    assert not fast_http._prepared
    assert flushed == [True]


def test_without_litellm_loaded_there_is_no_client_cache_to_flush(monkeypatch):
    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    bare_head(b"POST", URL, KEY, True)
    forget_api_keys()
    assert bare_head.cache_info().currsize == 0
    assert "litellm" not in sys.modules
