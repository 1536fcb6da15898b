"""Naming a credentials failure: which model, where, the provider's whole message, and the fix.

Used by the retries (a call that failed mid-run) and by the preflight (`_preflight`, before the run), so a
missing, wrong or unauthorised key reads the same wherever it is found.
"""

from __future__ import annotations

import os
import re

from ..redact import redact_text
from ._model import Role

OPENAI_BASE = "https://api.openai.com/v1"
"""Where litellm's `openai/` route goes without an api_base (nor OPENAI_BASE_URL / OPENAI_API_BASE)."""
KEY_ENV = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
           "gemini": "GEMINI_API_KEY", "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY",
           "deepseek": "DEEPSEEK_API_KEY", "together_ai": "TOGETHERAI_API_KEY", "openrouter": "OPENROUTER_API_KEY",
           "xai": "XAI_API_KEY", "azure": "AZURE_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY"}
"""The variable litellm reads a provider's key from (the providers people use most; others: litellm's docs)."""
OPTION_FLAG = {"agent": "--agent-arg", "user": "--user-arg", "judge": "--judge-arg"}
"""Where a role's options are given (`api_base`; `api_key_env=NAME` for the agent and the user: the judge
reads its provider's variable only)."""
MISSING_KEY_WORDS = ("missing credentials", "api_key client option must be set", "no api key", "api key not found",
                     "api_key is not set", "didn't provide an api key")
"""How providers and SDKs say no key was sent (litellm raises some of them as a 500)."""
_LITELLM_PREFIX = re.compile(r"^litellm\.\w+: (?:\w+: )*(?:\w+Exception - )?")


def provider(model: str) -> str:
    """litellm's route of a model name (`openai/gpt-4o` -> openai; a bare name is OpenAI's)."""
    route, slash, _ = model.partition("/")
    return route if slash else "openai"


def endpoint_base(model: str, api_base: str | None) -> str:
    """Where the model's calls go, as said in messages (credentials in the URL redacted)."""
    route = provider(model)
    if api_base:
        return redact_text(api_base)
    if route == "openai":
        return redact_text(os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or OPENAI_BASE)
    if route == "hosted_vllm" and os.environ.get("HOSTED_VLLM_API_BASE"):
        return redact_text(os.environ["HOSTED_VLLM_API_BASE"])
    return f"{route}'s default endpoint"


def key_variable(model: str, api_key_env: str | None) -> str | None:
    """The variable the model's key is read from: the one named with api_key_env, else the provider's."""
    return api_key_env or KEY_ENV.get(provider(model))


def is_missing_key(message: str) -> bool:
    """Whether an error says no key was sent at all."""
    lowered = message.lower()
    return any(words in lowered for words in MISSING_KEY_WORDS)


def provider_message(exc: BaseException | str) -> str:
    """An error's whole message on one line, credentials redacted, without litellm's class-name prefix."""
    return _LITELLM_PREFIX.sub("", redact_text(" ".join(str(exc).split())))


def credentials_fix(model: str, api_key_env: str | None, role: Role | str) -> str:
    """What to do about a missing or refused key for this model and role."""
    variable = key_variable(model, api_key_env)
    fix = f"set {variable} to a valid key" if variable else f"set {provider(model)}'s API key variable (litellm's docs)"
    if role in ("agent", "user") and not api_key_env:
        fix += f" (or keep the key in another variable and name it: {OPTION_FLAG[role]} api_key_env=NAME)"
    return fix


def auth_failure(model: str, api_base: str | None, api_key_env: str | None, role: Role | str, detail: str) -> str:
    """'authentication failed for model M at URL: <the provider's whole message>; fix: …'."""
    return (f"authentication failed for model {model} at {endpoint_base(model, api_base)}: {detail}; "
            f"fix: {credentials_fix(model, api_key_env, role)}")
