"""Test helpers shipped with shiftbox: a local fake OpenAI-compatible server for LLM code paths."""

from .fake_openai import FakeOpenAI, Reply, ToolCallReply, count_tokens, fake_openai

__all__ = ["FakeOpenAI", "Reply", "ToolCallReply", "count_tokens", "fake_openai"]
