"""A package exports its API, not its helpers: every name in a guarded package's `__all__` is used outside it.

A name is API when shipped code outside the package uses it (client/, servers/, bench/, examples/: an import
from the package or `package.name`), when the docs name it in code (docs/, examples/, README.md), when a public
name's signature or fields mention it (what a public model holds or a public method returns is public too), or
when it is a documented extension point listed in `EXTENSION_POINTS` below. Anything else is a helper: the
package's own tests import it from its private module (`tests/client/metrics/` may import `shiftbox.metrics._x`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE = [REPO / "client", REPO / "servers", REPO / "bench", REPO / "examples"]
DOCS = [*sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "examples").rglob("*.md")), REPO / "README.md"]
SOURCES = {"shiftbox": REPO / "client", "shiftbox_servers": REPO / "servers"}

# the packages whose exports are held to their API (a package joins once its helpers are private)
GUARDED = ["shiftbox.llm", "shiftbox.metrics", "shiftbox.runs", "shiftbox_servers.kit"]

# names nothing in the repository uses yet that a user is meant to (each with the reason and where it is documented)
EXTENSION_POINTS: dict[str, set[str]] = {
    "shiftbox.llm": set(),
    "shiftbox.metrics": set(),
    "shiftbox.runs": set(),
    # the servers' wire contract, documented by value in docs/servers.md (its resources table and
    # `_meta["shiftbox/error"]`): a Python MCP client reads the snapshot, the diff and the error kind by these
    "shiftbox_servers.kit": {"ERROR_META_KEY", "SNAPSHOT_URI", "STATE_DIFF_URI"},
}


def package_dir(package: str) -> Path:
    top, *rest = package.split(".")
    return SOURCES[top].joinpath(top, *rest)


def module_of(path: Path) -> list[str]:
    """The dotted package a file's relative imports start from (`client/shiftbox/runs/_x.py` -> shiftbox.runs)."""
    for root in SOURCES.values():
        if root in path.parents:
            parts = list(path.relative_to(root).with_suffix("").parts)
            return parts[:-1]
    return []


@functools.cache
def parsed(roots: tuple[Path, ...]) -> list[tuple[Path, ast.Module]]:
    """Every Python file under `roots` with its syntax tree (read once for all the packages checked)."""
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for root in roots for path in sorted(root.rglob("*.py"))
            if ".venv" not in path.parts and "node_modules" not in path.parts]


def code_uses(package: str) -> dict[str, list[str]]:
    """Names of `package` that code outside it imports or reads as `package.name`, with the files that do."""
    inside = package_dir(package)
    found: dict[str, list[str]] = {}
    for path, tree in parsed(tuple(CODE)):
        if inside in path.parents:
            continue
        base_package = module_of(path)
        aliases = {package}
        used = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(base_package[: len(base_package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    if base == package:
                        used.add(alias.name)
                    elif f"{base}.{alias.name}" == package:
                        aliases.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                aliases |= {a.asname for a in node.names if a.name == package and a.asname}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) in aliases:
                used.add(node.attr)
        for name in used:
            found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


@functools.cache
def doc_code() -> str:
    """Every code block and code span of the user documentation, joined."""
    pieces = []
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
        text = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
        pieces += blocks + re.findall(r"`([^`]+)`", text)
    return "\n".join(pieces)


def named_in_docs(package: str, name: str, code: str) -> bool:
    """Named on its own (`ratio`, `from shiftbox.metrics import ratio`) or as `package.name`, not as a method."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\b|\b{re.escape(package)}\.{re.escape(name)}\b", code) is not None


def annotations_of(value: object) -> str:
    """The text of a public name's annotations: a function's signature, a class's fields and public methods."""
    texts = []
    if isinstance(value, type):
        for klass in value.__mro__:
            if klass.__module__.split(".")[0] not in SOURCES:
                continue
            texts += map(str, inspect.get_annotations(klass).values())
            for name, member in vars(klass).items():
                if inspect.isfunction(member) and (not name.startswith("_") or name == "__init__"):
                    texts += map(str, inspect.get_annotations(member).values())
    elif inspect.isfunction(value):
        texts += map(str, inspect.get_annotations(value).values())
    return "\n".join(texts)


def unused_exports(package: str) -> list[str]:
    """The names `package` exports that nothing outside it uses, documents or holds in a public signature."""
    module = importlib.import_module(package)
    exported = set(module.__all__)
    used = set(code_uses(package))
    code = doc_code()
    api = {n for n in exported if n in used or named_in_docs(package, n, code)} | EXTENSION_POINTS[package]
    frontier = set(api)
    while frontier:  # what a public name's signature or fields mention is public too
        mentioned = set(re.findall(r"\w+", "\n".join(annotations_of(getattr(module, n, None)) for n in frontier)))
        frontier = (mentioned & exported) - api
        api |= frontier
    return sorted(exported - api)


@pytest.mark.parametrize("package", GUARDED)
def test_every_export_is_api(package):
    unused = unused_exports(package)
    init = package_dir(package).relative_to(REPO) / "__init__.py"
    assert not unused, (
        f"{package} exports {', '.join(unused)}, which no code outside it (client/, servers/, bench/, examples/) "
        f"uses, no doc names and no public signature mentions: remove them from {init}'s imports and __all__ "
        f"(the package's own tests import them from its private modules), or, if one is a documented extension "
        f"point, add it with the reason to EXTENSION_POINTS in {Path(__file__).relative_to(REPO)}")


def test_every_extension_point_is_exported():
    for package, names in EXTENSION_POINTS.items():
        missing = sorted(names - set(importlib.import_module(package).__all__))
        assert not missing, f"EXTENSION_POINTS lists {missing}, which {package} does not export: drop them from it"


def test_a_new_helper_export_is_caught(monkeypatch):
    metrics = importlib.import_module("shiftbox.metrics")

    def toy_helper() -> None:
        """Exported, used by nothing."""

    monkeypatch.setattr(metrics, "toy_helper", toy_helper, raising=False)
    monkeypatch.setattr(metrics, "__all__", [*metrics.__all__, "toy_helper"])
    assert "toy_helper" in unused_exports("shiftbox.metrics")


def test_a_type_in_a_public_signature_is_api(monkeypatch):
    """An exported model only a public function's return annotation names is kept (and caught once it is not)."""
    metrics = importlib.import_module("shiftbox.metrics")

    class ToyScore:
        value: int

    def toy_score() -> ToyScore:
        """Named only here."""
        return ToyScore()

    monkeypatch.setattr(metrics, "ToyScore", ToyScore, raising=False)
    monkeypatch.setattr(metrics, "toy_score", toy_score, raising=False)
    monkeypatch.setattr(metrics, "__all__", [*metrics.__all__, "ToyScore", "toy_score"])
    monkeypatch.setitem(EXTENSION_POINTS, "shiftbox.metrics", {"toy_score"})
    assert "ToyScore" not in unused_exports("shiftbox.metrics")
    monkeypatch.setitem(EXTENSION_POINTS, "shiftbox.metrics", set())
    assert {"ToyScore", "toy_score"} <= set(unused_exports("shiftbox.metrics"))
