"""docs/adding-a-domain.md, done: the toy domain of its code blocks, installed through an entry point (a
package plus its `*.dist-info/entry_points.txt` on sys.path, as an install leaves them), is found by name
by the kit, its snapshot is built, the task generator writes tasks for it and `shiftbox-server` serves it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from shiftbox_servers.kit import Snapshot, domain_names, get_domain, registered_domains
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
    async with Client(params) as client:
        assert client.server_info.name == "shiftbox-toyshop"
        assert (await ok(client, "get_customer", {"customer_id": "cust_1"}))["tier"] == "gold"
        note = await ok(client, "add_note", {"customer_id": "cust_2", "body": "Prefers email."})
        assert note["note_id"] and note["customer_id"] == "cust_2"
