"""The installed versions of shiftbox's two distributions (`shiftbox --version`, the report's provenance), and a
digest of their installed code (what a kept Ray actor must match to serve a run)."""

from __future__ import annotations

import functools
import hashlib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

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


@functools.cache
def installed_code_digest() -> str:
    """`code_digest` of the installed `shiftbox` and `shiftbox_servers` packages (made once a process)."""
    import shiftbox
    import shiftbox_servers

    return code_digest({package.__name__: Path(package.__file__).parent for package in (shiftbox, shiftbox_servers)})


def code_digest(packages: dict[str, Path]) -> str:
    """sha256 over the Python source of each package (name -> its directory): each file's path and its bytes, in
    sorted order. Two installs of the same version with other code differ."""
    digest = hashlib.sha256()
    for name, root in sorted(packages.items()):
        for path in sorted(root.rglob("*.py")):
            source = path.read_bytes()
            digest.update(f"{name}/{path.relative_to(root).as_posix()}\0{len(source)}\0".encode())
            digest.update(source)
    return digest.hexdigest()
