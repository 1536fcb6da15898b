"""Optional extras (ray, inspect, a2a, verifiers, vcr): whether one is installed, how to install it, and its import
with an error that names the install command. One rule for every integration."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


def install_command(extra: str, checkout: str | None = None) -> str:
    """What a user runs to get `extra`, installed or in a checkout (`checkout`: the command there when it is not
    `uv sync --extra EXTRA`)."""
    return f"pip install 'shiftbox[{extra}]' (in a checkout of shiftbox: {checkout or f'uv sync --extra {extra}'})"


def extra_installed(module: str) -> bool:
    """Whether `module` (dotted names allowed) can be imported, checked without importing it (some take seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def import_extra(module: str, extra: str, what: str) -> ModuleType:
    """`module`, or ImportError "`what` is an optional extra of shiftbox: <install command>" without the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what} is an optional extra of shiftbox: {install_command(extra)}") from exc
