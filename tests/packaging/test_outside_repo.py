"""shiftbox used from another project: install the two distributions from the checkout into a fresh
venv outside the repository, build the snapshots where an installed shiftbox looks for them, and
replay a committed fixture with the pytest plugin — the steps docs/install.md gives, run as written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(args: list, cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    res = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{args}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> dict:
    """A venv outside the repo with shiftbox-servers and shiftbox installed from the checkout (locked deps)."""
    uv = [sys.executable, "-m", "uv"]
    if subprocess.run([*uv, "--version"], capture_output=True).returncode != 0:
        uv = [shutil.which("uv") or pytest.skip("uv is not installed (make env installs it)")]
    root = tmp_path_factory.mktemp("outside")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_PROJECT", "SHIFTBOX_"))}
    env["HOME"] = str(root / "home")                   # a user with nothing in ~/.local/share yet
    reqs = root / "requirements.txt"
    _run([*uv, "export", "--frozen", "--no-dev", "--no-group", "examples", "--package", "shiftbox",
          "--no-emit-workspace", "--output-file", reqs], cwd=REPO, env=env)
    venv = root / "venv"
    _run([*uv, "venv", "--python", sys.executable, venv], cwd=root, env=env)
    python = venv / "bin" / "python"
    _run([*uv, "pip", "install", "--python", python, "--require-hashes", "-r", reqs], cwd=root, env=env)
    _run([*uv, "pip", "install", "--python", python, "--no-deps", REPO / "servers", REPO / "client"], cwd=root, env=env)
    _run([*uv, "pip", "install", "--python", python, f"pytest=={version('pytest')}"], cwd=root, env=env)
    return {"root": root, "venv": venv, "python": python, "env": env}


def test_installed_shiftbox_is_not_the_checkout(outside):
    res = _run([outside["python"], "-c", "import shiftbox, shiftbox_servers; print(shiftbox.__file__); "
                "print(shiftbox_servers.__file__)"], cwd=outside["root"], env=outside["env"])
    assert str(REPO) not in res.stdout and "site-packages" in res.stdout


def test_the_plugin_imports_nothing_heavy_until_used(outside):
    """pytest loads the plugin in every run of a project that installs shiftbox: it must stay light. (The servers'
    package and its lazy-names helper, stdlib only, are what `import shiftbox` shares with the kit.)"""
    res = _run([outside["python"], "-c", "import sys, shiftbox.pytest; print(sorted(m for m in sys.modules if "
                "m.split('.')[0] in ('mcp', 'litellm', 'typer', 'rich', 'shiftbox_servers', 'pydantic') "
                "and m not in ('shiftbox_servers', 'shiftbox_servers._lazy') "
                "or m.startswith('shiftbox.metrics')))"], cwd=outside["root"], env=outside["env"])
    assert res.stdout.strip() == "[]"


def test_build_snapshots_and_replay_a_fixture_with_the_plugin(outside):
    project = outside["root"] / "my-project"
    (project / "tests").mkdir(parents=True)
    shutil.copytree(REPO / "fixtures" / "banking-litellm", project / "fixtures" / "banking-litellm")
    (project / "tests" / "test_agent.py").write_text(
        "def test_my_agent_still_scores(shiftbox_replay):\n"
        "    metrics = shiftbox_replay('fixtures/banking-litellm', min_tsr=0.1)\n"
        "    assert metrics.simulations > 0\n")
    bin_dir = outside["venv"] / "bin"
    env = {**outside["env"], "PATH": f"{bin_dir}{os.pathsep}{outside['env'].get('PATH', '')}"}
    # step 1: the snapshots, built where an installed shiftbox looks for them by default
    _run([bin_dir / "shiftbox", "snapshots", "build", "banking"], cwd=project, env=env)
    assert (outside["root"] / "home" / ".local" / "share" / "shiftbox" / "snapshots" / "banking" / "v1"
            / "manifest.json").exists()
    # step 2: the project's own test suite, using the plugin's fixture
    res = _run([outside["python"], "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env)
    assert "1 passed" in res.stdout


def test_snapshots_built_under_a_root_are_read_through_shiftbox_snapshots(outside):
    bin_dir = outside["venv"] / "bin"
    root = outside["root"] / "snaps"
    _run([bin_dir / "shiftbox", "snapshots", "build", "echo", "--root", root], cwd=outside["root"],
         env=outside["env"])
    env = {**outside["env"], "SHIFTBOX_SNAPSHOTS": str(root)}
    res = _run([bin_dir / "shiftbox", "snapshots", "verify"], cwd=outside["root"], env=env)
    assert "echo" in res.stdout + res.stderr
