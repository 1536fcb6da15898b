"""docs/adding-a-domain.md, done: the toy domain of its code blocks, installed through an entry point (a
package plus its `*.dist-info/entry_points.txt` on sys.path, as an install leaves them), is found by name
by the kit, its snapshot is built, the task generator writes tasks for it, `shiftbox-server` serves it, and
every domain-wide list (the tests' parametrizations, `shiftbox snapshots list`, the demo, `make tasks`,
the images) picks it up with no shared list edited: no such list exists outside a domain's own folder."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from shiftbox_servers.kit import (
    Snapshot,
    domain_names,
    get_domain,
    registered_domains,
    task_domains,
)
from tests.conftest import REPO
from tests.servers.helpers import ok

PAGE = REPO / "docs" / "adding-a-domain.md"


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A folder on sys.path holding the page's toyshop package and the metadata an install writes for it."""
    site = tmp_path / "site"
    (package,) = [b for b in code_blocks("python") if b.startswith("# toyshop/__init__.py\n")]
    (site / "toyshop").mkdir(parents=True)
    (site / "toyshop" / "__init__.py").write_text(package)
    (pyproject,) = code_blocks("toml")
    group = tomllib.loads(pyproject)["project"]["entry-points"]["shiftbox.domains"]
    info = site / "toyshop-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyshop\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[shiftbox.domains]\n" + "".join(f"{name} = {target}\n" for name, target in group.items()))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("SHIFTBOX_SNAPSHOTS", str(tmp_path / "snapshots"))
    yield site
    get_domain.cache_clear()
    sys.modules.pop("toyshop", None)


def test_the_kit_finds_the_installed_domain_by_name(site):
    assert "toyshop" in domain_names()
    domain = get_domain("toyshop")
    assert registered_domains()["toyshop"] is domain
    assert [t.name for t in domain.tools] == ["get_customer", "add_note", "transfer_to_human_agents"]
    assert domain.missions.opener == "lookup" and set(domain.missions) == set(domain.goal_tools)


def test_snapshot_build_and_task_generation_use_it(site, tmp_path):
    from shiftbox.generation import generate_tasks

    domain = get_domain("toyshop")
    manifest = domain.build_snapshot(domain.default_snapshot_dir())
    assert domain.default_snapshot_dir() == tmp_path / "snapshots" / "toyshop" / "v1"
    assert (manifest.domain, manifest.row_counts["customers"]) == ("toyshop", 2)
    tasks = generate_tasks("toyshop", domain.default_snapshot_dir(), n=6, seed=1)
    assert tasks.domain == "toyshop" and len(tasks.tasks) == 6
    goals = {g for t in tasks.tasks for g in t.user_scenario.goal_shifts.goals}
    assert goals == {"lookup", "note"}
    calls = {a.allowed_tools[0].function_name for t in tasks.tasks for a in t.evaluation_criteria.action_sets}
    assert calls == {"get_customer", "add_note"}
    first = tasks.tasks[0].user_scenario.instructions.known_info
    assert first.startswith(("You are Ana Lopez.", "You are Ben Okafor."))  # MissionSet's default introduce


@pytest.mark.anyio
async def test_the_installed_commands_serve_and_build_it(site, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    bin_dir = Path(sys.executable).parent
    built = subprocess.run([str(bin_dir / "shiftbox"), "snapshots", "build", "toyshop"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    snapshot = Snapshot.load(tmp_path / "snapshots" / "toyshop" / "v1")
    assert set(snapshot.manifest.tool_contracts) == {"default"}
    params = StdioServerParameters(command=str(bin_dir / "shiftbox-server"), args=["toyshop"], env=env)
    async with Client(stdio_client(params)) as client:  # mcp 2.0 takes no parameters
        assert client.server_info.name == "shiftbox-toyshop"
        assert (await ok(client, "get_customer", {"customer_id": "cust_1"}))["tier"] == "gold"
        note = await ok(client, "add_note", {"customer_id": "cust_2", "body": "Prefers email."})
        assert note["note_id"] and note["customer_id"] == "cust_2"


def installed_env(site: Path) -> dict[str, str]:
    """The environment of a process that sees the toy domain as installed."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_the_domain_wide_listing_names_it(site):
    assert "toyshop" in task_domains() and "echo" not in task_domains()
    shiftbox = str(Path(sys.executable).parent / "shiftbox")
    listed = subprocess.run([shiftbox, "snapshots", "list"], env=installed_env(site), capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert {"toyshop", "echo"} <= set(listed.stdout.split())
    with_tasks = subprocess.run([shiftbox, "snapshots", "list", "--tasks"], env=installed_env(site),
                                capture_output=True, text=True, timeout=120)
    assert with_tasks.returncode == 0, with_tasks.stderr
    assert with_tasks.stdout.split() == task_domains()


EVERY_DOMAIN_TESTS = [
    "tests/servers/test_every_domain.py", "tests/servers/kit/test_fuzz_arguments.py",
    "tests/servers/kit/test_invisible_arguments.py", "tests/client/tasks/test_generate.py",
    "tests/client/tasks/test_committed_task_sets.py", "tests/client/world/test_dependency_graph_mode.py",
    "tests/client/metrics/test_harmless_calls.py", "tests/containers/test_images.py",
]
"""Test files that once parametrized over a hard-coded list of the shipped domains."""


def test_the_tests_parametrized_over_every_domain_collect_it(site):
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                *EVERY_DOMAIN_TESTS], env=installed_env(site), cwd=REPO, capture_output=True,
                               text=True, timeout=600)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    ids = collected.stdout.splitlines()
    missing = [f for f in EVERY_DOMAIN_TESTS if not any(i.startswith(f) and "toyshop" in i for i in ids)]
    assert not missing, f"no test of these files runs on the installed toy domain: {missing}"


def named_domain_lists(path: Path, shipped: set[str]) -> list[int]:
    """Lines of `path` holding a list (tuple, set, dict keys, comma-separated string, shell words) that names
    every shipped domain."""
    text = path.read_text()
    if path.suffix != ".py":
        return [n for n, line in enumerate(text.splitlines(), 1) if shipped <= set(re.findall(r"[a-z_]+", line))]
    found = []
    for node in ast.walk(ast.parse(text)):
        items: list[ast.AST] = []
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        names = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = {part.strip() for part in node.value.split(",")}
        if shipped <= names:
            found.append(node.lineno)
    return found


EXEMPT = {
    "client/shiftbox/inspect_eval/__init__.py":
        "Inspect finds a task by its function's name (`inspect eval shiftbox/banking`); shiftbox_task(domain=...) "
        "serves any installed domain",
    "client/shiftbox/tasks/_reference.py": "AgentChangeBench's own three domains (the reference's, not ours)",
    "tests/conftest.py": "the files of AgentChangeBench's own three domains",
    "tests/client/tasks/test_reference_end_to_end.py": "AgentChangeBench's own three domains",
    "tests/client/metrics/test_cross_domain_metrics.py": "one scenario: a run with a domain open beyond the task's",
    # Not done yet: per-domain test data keyed by domain, to move into tests/servers/<domain>/conftest.py.
}
"""Files allowed to name the shipped domains, and why."""


def test_no_list_outside_a_domain_folder_names_the_shipped_domains():
    shipped = set(task_domains())
    assert len(shipped) >= 2
    own = tuple(f"{root}/{d}/" for d in shipped for root in ("servers/shiftbox_servers", "tests/servers"))
    tracked = subprocess.run(["git", "ls-files", "*.py", "*.sh", "Makefile"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    offenders = {f: lines for f in tracked if not f.startswith(own) and f not in EXEMPT
                 and (lines := named_domain_lists(REPO / f, shipped))}
    assert not offenders, ("these lists name the shipped domains, so a new domain would have to find them; ask "
                           f"`task_domains()` (or `shiftbox snapshots list --tasks`) instead: {offenders}")
