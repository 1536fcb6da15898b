"""Package names that load with their module on first use (PEP 562), for both distributions: the kit's names that
need the MCP SDK, and the client's packages (`shiftbox._lazy`), so importing a package costs only what its
importer uses."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose names (`exports`: name -> the module defining it, absolute
    or relative to the package) are imported on first use and then kept in the package's namespace."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
