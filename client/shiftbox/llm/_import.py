"""The one place shiftbox imports litellm, lazily, configured before its first import:
- `LITELLM_LOCAL_MODEL_COST_MAP=True`: use the bundled price map; otherwise the import fetches one
  from the internet (no internet here, and a fetched map would make costs drift between runs).
- `DISABLE_AIOHTTP_TRANSPORT=True`: async calls go through httpx like sync ones.
Both are set with `os.environ.setdefault`, so an explicit setting by the caller wins.

The import is slow (seconds: litellm builds many pydantic models), so it happens only when litellm's own
code is needed: a call down the litellm path, or a fast-path call `_openai_body` / `_openai_response` cannot
serve themselves (a replay, and a run whose every call they serve, never import it).
"""

from __future__ import annotations

import os
from types import ModuleType

LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DISABLE_AIOHTTP_TRANSPORT": "True",
}


def set_litellm_environment() -> None:
    """`LITELLM_ENV` into this process's environment where the caller set nothing: before any import of litellm,
    this process's or a child's it starts (the workers' fork server imports it by name)."""
    for key, value in LITELLM_ENV.items():
        os.environ.setdefault(key, value)


def import_litellm() -> ModuleType:
    """Set litellm's environment, import it, silence its banners and return the module."""
    set_litellm_environment()
    import litellm

    litellm.suppress_debug_info = True
    return litellm
