"""The installed versions of shiftbox's two distributions (`shiftbox --version`, the report's provenance)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTIONS = ("shiftbox", "shiftbox-servers")


def distribution_version(name: str) -> str:
    """`name`'s installed version, or "unknown" (a source tree without package metadata)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def distribution_versions() -> dict[str, str]:
    """Distribution -> installed version, for both distributions (the client and the domain servers)."""
    return {name: distribution_version(name) for name in DISTRIBUTIONS}
