"""A fake-server script for bench/llm_throughput.py's `--script`: the litellm path's agent (the openai SDK's
requests, which carry `x-stainless-lang`) answers a tool result with something the script does not say; the
fast path's requests get the scripted conversation."""

from shiftbox.testing.fake_openai import Reply


def reply(body: dict, headers: dict) -> Reply | None:
    messages = body.get("messages") or []
    if "x-stainless-lang" in headers and messages and messages[-1].get("role") == "tool":
        return Reply.text("Here is your profile, and nothing else.")
    return None
