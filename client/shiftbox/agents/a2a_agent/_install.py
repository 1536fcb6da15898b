"""Whether the optional a2a-sdk is installed, and how to install it."""

from __future__ import annotations

import importlib.util

INSTALL_A2A = "pip install 'shiftbox[a2a]' (in a checkout of shiftbox: uv sync --extra a2a)"


def a2a_installed() -> bool:
    """True when the a2a-sdk's client can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec("a2a.client") is not None
    except ModuleNotFoundError:
        return False


def require_a2a() -> None:
    """Raise ValueError naming `INSTALL_A2A` when the a2a-sdk is missing."""
    if not a2a_installed():
        raise ValueError(f"--agent a2a: needs the a2a-sdk, an optional extra of shiftbox: {INSTALL_A2A}")
