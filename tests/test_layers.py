"""The package layout's rules, read from the source (AST), not from what happens to be imported at run time.

- The library never imports the command line (`shiftbox.cli`); the servers never import the client.
- No import circle, between the top-level packages of `shiftbox` and of `shiftbox_servers` or between modules,
  counting imports inside functions too (a lazy import is still a dependency); only `TYPE_CHECKING` is exempt.
- No shipped code drives the CLI through typer's test runner: library functions do what commands do.
- Packages import only what docs/architecture.md allows them (its floor tables are read here).
- The CLI stays thin: a command module imports no private module or name of another package, and a command's body
  (its docstring aside) is at most `COMMAND_LINES` lines: parse, call one library function, print.
- Tests, benchmarks and examples import no private module of another package (`shiftbox.runs._plan`): what they
  need is exported. Test folders mirror the source (`tests/client/runs/` tests `shiftbox.runs` and may import its
  private modules).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"shiftbox": REPO / "client" / "shiftbox", "shiftbox_servers": REPO / "servers" / "shiftbox_servers"}
SHIPPED = [REPO / "client", REPO / "servers", REPO / "bench", REPO / "examples"]


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (or module.name)
    in_function: bool
    line: int


def module_names(root: Path) -> dict[str, Path]:
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(module: str, path: Path) -> list[Import]:
    """Every import in a module, resolved to absolute names; imports under `if TYPE_CHECKING:` are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            in_function |= {id(n) for n in ast.walk(node)}
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            targets = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found += [Import(module, t, id(node) in in_function, node.lineno) for t in targets]
    return found


def every_import(package: str) -> list[Import]:
    names = module_names(PACKAGES[package])
    return [i for module, path in sorted(names.items()) for i in imports_of(module, path)]


def owner(name: str, modules: dict[str, Path]) -> str:
    """The module a dotted name lives in (`a.b.c` -> `a.b` when c is a name defined in module a.b)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def describe(found: list[list[str]], edges: dict[str, set[str]]) -> str:
    return "\n".join(f"{' <-> '.join(c)}: " + "; ".join(f"{a} -> {', '.join(sorted(edges[a] & set(c)))}" for a in c)
                     for c in found)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circle_between_top_level_packages(package):
    """`shiftbox.runs` may use `shiftbox.world`, or the other way round, never both (lazy imports count)."""
    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    edges: dict[str, set[str]] = {}
    for i in every_import(package):
        if i.target.split(".")[0] == package and top(i.source) != top(i.target):
            edges.setdefault(top(i.source), set()).add(top(i.target))
    found = cycles(edges)
    assert not found, "import circles between packages:\n" + describe(found, edges)


def module_circles(root: Path) -> tuple[list[list[str]], dict[str, set[str]]]:
    """Circles between the modules under `root`, counting imports inside functions (only `TYPE_CHECKING` is exempt)."""
    modules = module_names(root)
    edges: dict[str, set[str]] = {}
    for module, path in sorted(modules.items()):
        for i in imports_of(module, path):
            target = owner(i.target, modules)
            if target in modules and target != i.source:
                edges.setdefault(i.source, set()).add(target)
    return cycles(edges), edges


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circle_between_modules(package):
    """A module imported lazily (inside a function) is still a dependency: no two modules may need each other."""
    found, edges = module_circles(PACKAGES[package])
    assert not found, "import circles between modules (lazy imports count):\n" + describe(found, edges)


def test_the_library_never_imports_the_command_line():
    offending = [f"{i.source}:{i.line} imports {i.target}" for i in every_import("shiftbox")
                 if (i.target == "shiftbox.cli" or i.target.startswith("shiftbox.cli."))
                 and not (i.source == "shiftbox.cli" or i.source.startswith("shiftbox.cli."))]
    assert not offending, "library code imports the CLI package:\n" + "\n".join(offending)


def test_the_servers_never_import_the_client():
    offending = [f"{i.source}:{i.line} imports {i.target}" for i in every_import("shiftbox_servers")
                 if i.target.split(".")[0] == "shiftbox"]
    assert not offending, "\n".join(offending)


COMMAND_LINES = 30
"""A command's budget: enough to parse options, call the library, map its errors to exit codes and print."""


def command_bodies(folder: Path) -> dict[str, int]:
    """Every command function of the CLI package (a public function taking typer-annotated options) -> its body's
    length in lines, docstring excluded."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("_"):
                continue
            if not any(a.annotation is not None and "typer." in ast.unparse(a.annotation) for a in node.args.args):
                continue
            body = node.body[1:] if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
                else node.body
            found[f"{path.name}:{node.name}"] = body[-1].end_lineno - body[0].lineno + 1 if body else 0
    return found


def test_every_command_is_thin():
    bodies = command_bodies(PACKAGES["shiftbox"] / "cli")
    assert len(bodies) >= 15, f"the scan found too few commands to be looking at the CLI: {sorted(bodies)}"
    fat = {name: n for name, n in bodies.items() if n > COMMAND_LINES}
    assert not fat, f"commands over {COMMAND_LINES} lines (move the logic into the library, keep parsing and " \
                    f"printing): {fat}"


def test_the_cli_imports_no_private_name_of_another_package():
    """`shiftbox.tasks.finding_order`, never `shiftbox.tasks._validate`; the root's own modules
    (`shiftbox._registry`) are the ground floor every package shares."""
    offending = []
    for i in every_import("shiftbox"):
        parts = i.target.split(".")
        if not i.source.startswith("shiftbox.cli"):
            continue
        if len(parts) >= 3 and parts[1] != "cli" and any(p.startswith("_") and not p.startswith("__")
                                                          for p in parts[2:]):
            offending.append(f"{i.source}:{i.line} imports {i.target}")
    assert not offending, "the CLI reaches into another package's private names:\n" + "\n".join(offending)


def test_the_thin_cli_rules_catch_a_fat_command(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(COMMAND_LINES + 1))
    (tmp_path / "fat.py").write_text(f"import typer\nfrom typing import Annotated\n\n\n"
                                     f"def fat(n: Annotated[int, typer.Option()] = 1) -> None:\n    \"\"\"Doc.\"\"\"\n{body}\n")
    assert command_bodies(tmp_path) == {"fat.py:fat": COMMAND_LINES + 1}


ARCHITECTURE = REPO / "docs" / "architecture.md"


def documented_floors(text: str) -> dict[str, dict[str, set[str]]]:
    """docs/architecture.md's floor tables: distribution -> package -> the packages it may import."""
    tables: dict[str, dict[str, set[str]]] = {}
    current = None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] == "floor":
            current = tables.setdefault(cells[1].strip("`").rstrip("."), {})
        elif current is not None and len(cells) == 4 and cells[0].isdigit():
            allowed = {c.strip().strip("`") for c in cells[2].split(",")} - {"—", ""}
            current[cells[1].strip("`")] = allowed
    return tables


def package_imports(package: str) -> dict[str, set[str]]:
    """Each package (or root module) of a distribution -> the others of the same distribution it imports (the
    distribution's own `__init__`, its public names, has no row)."""
    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    found: dict[str, set[str]] = {top(m).split(".", 1)[1]: set() for m in module_names(PACKAGES[package]) if "." in m}
    for i in every_import(package):
        inside = "." in i.target and "." in i.source
        if i.target.split(".")[0] == package and inside and top(i.source) != top(i.target):
            found[top(i.source).split(".", 1)[1]].add(top(i.target).split(".", 1)[1])
    return found


def undocumented(actual: dict[str, set[str]], allowed: dict[str, set[str]]) -> dict[str, list[str]]:
    """Package -> what it imports beyond its row (a package without a row: everything, or `["(no row)"]`)."""
    return {p: sorted(used - allowed[p]) if p in allowed else ["(no row)"] for p, used in sorted(actual.items())
            if p not in allowed or used - allowed[p]}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_packages_import_only_what_docs_architecture_allows(package):
    allowed = documented_floors(ARCHITECTURE.read_text(encoding="utf-8"))[package]
    beyond = undocumented(package_imports(package), allowed)
    assert not beyond, f"imports docs/architecture.md does not allow (add a row, or the name to the row, if no " \
                       f"circle results): {beyond}"


def test_the_architecture_rule_catches_an_import_beyond_its_row():
    table = "| floor | `pkg.` | may import | what |\n|---|---|---|---|\n| 0 | `tasks` | — | x |\n| 1 | `runs` | `tasks` | y |\n"
    floors = documented_floors(table)["pkg"]
    assert floors == {"tasks": set(), "runs": {"tasks"}}
    assert undocumented({"tasks": set(), "runs": {"tasks", "world"}, "cli": {"runs"}}, floors) == \
        {"cli": ["(no row)"], "runs": ["world"]}


def test_no_shipped_code_drives_the_cli_through_the_test_runner():
    offending = []
    for folder in SHIPPED:
        for path in sorted(folder.rglob("*.py")):
            if ".venv" in path.parts:
                continue
            for i in imports_of(path.stem, path):
                if i.target.startswith("typer.testing") or i.target.startswith("click.testing"):
                    offending.append(f"{path.relative_to(REPO)}:{i.line}")
    assert not offending, "shipped code uses CliRunner (call the library function instead):\n" + "\n".join(offending)


TEST_ROOTS = {"shiftbox": REPO / "tests" / "client", "shiftbox_servers": REPO / "tests" / "servers"}


def own_package(path: Path) -> str | None:
    """The package a test file's folder mirrors (`tests/client/runs/test_x.py` -> `shiftbox.runs`), if any."""
    for package, root in TEST_ROOTS.items():
        if root in path.parents and path.parent != root:
            return f"{package}.{path.relative_to(root).parts[0]}"
    return None


def private_imports(path: Path) -> list[str]:
    """A file's imports of private modules or names, except its own package's (a test folder mirrors one)."""
    mine = own_package(path)
    found = []
    for i in imports_of(path.stem, path):
        parts = i.target.split(".")
        private = parts[0] in PACKAGES and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])
        if private and (mine is None or not (i.target == mine or i.target.startswith(mine + "."))):
            found.append(f"{path.relative_to(REPO)}:{i.line} imports {i.target}")
    return found


def test_tests_bench_and_examples_use_no_private_module_of_another_package():
    """They use what a user of the packages can, a name a package re-exports, never `pkg._module`; a test may
    reach into the private modules of the package its folder mirrors (`tests/client/runs/` -> `shiftbox.runs`)."""
    offending = []
    for folder in (REPO / "tests", REPO / "bench", REPO / "examples"):
        for path in sorted(folder.rglob("*.py")):
            if "node_modules" not in path.parts:
                offending += private_imports(path)
    assert not offending, "private modules imported (export the name from its package):\n" + "\n".join(offending)


def test_tests_mirror_the_source():
    """Every test folder names a package (or module) of the distribution it tests; no test file lies flat except
    the root package's own (`test_public_api.py`)."""
    wrong = []
    for package, root in TEST_ROOTS.items():
        names = {m.split(".")[1] for m in module_names(PACKAGES[package]) if m.count(".") >= 1}
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"):
            if any(folder.rglob("test_*.py")) and folder.name not in names:
                wrong.append(f"{folder.relative_to(REPO)}: no package {package}.{folder.name}")
    flat = [p.name for p in TEST_ROOTS["shiftbox"].glob("test_*.py")]
    assert flat == ["test_public_api.py"], f"test files lying flat in tests/client: {sorted(flat)}"
    assert not wrong, "\n".join(wrong)


def test_a_test_may_import_only_its_own_packages_private_modules(tmp_path, monkeypatch):
    monkeypatch.setitem(TEST_ROOTS, "shiftbox", tmp_path / "client")
    test = tmp_path / "client" / "runs" / "test_x.py"
    test.parent.mkdir(parents=True)
    test.write_text("from shiftbox.runs._plan import plan_run\nfrom shiftbox.world._world import World\n")
    monkeypatch.setattr("tests.test_layers.REPO", tmp_path)
    assert private_imports(test) == ["client/runs/test_x.py:2 imports shiftbox.world._world.World"]


def test_the_rules_catch_a_circle_and_a_cli_import(tmp_path):
    """The scan itself: a two-module circle and a lazy import of the CLI are both seen."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    source = tmp_path / "pkg" / "runs" / "_x.py"
    source.parent.mkdir(parents=True)
    source.write_text("def f():\n    from ..cli import app\n    from . import _y\n")
    found = imports_of("pkg.runs._x", source)
    assert [(i.target, i.in_function) for i in found] == [("pkg.cli.app", True), ("pkg.runs._y", True)]


def test_the_module_rule_catches_a_lazy_circle(tmp_path):
    """`a` imports `b` at the top and `b` imports `a` inside a function: a circle; under TYPE_CHECKING it is not."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import g\n    return g\n")
    assert module_circles(package)[0] == [["pkg.a", "pkg.b"]]
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import g\n")
    assert module_circles(package)[0] == []
