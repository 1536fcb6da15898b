"""Whether the optional a2a-sdk is installed, and how to install it."""

from __future__ import annotations

from ..._extras import extra_installed, install_command

INSTALL_A2A = install_command("a2a")


def a2a_installed() -> bool:
    """True when the a2a-sdk's client can be imported (checked without importing it)."""
    return extra_installed("a2a.client")


def require_a2a() -> None:
    """Raise ValueError naming `INSTALL_A2A` when the a2a-sdk is missing."""
    if not a2a_installed():
        raise ValueError(f"--agent a2a: needs the a2a-sdk, an optional extra of shiftbox: {INSTALL_A2A}")
