"""The public API: what `import shiftbox` promises, and the docs/python.md example run as written."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import shiftbox

REPO = Path(__file__).resolve().parents[2]
INIT = REPO / "client" / "shiftbox" / "__init__.py"


def type_checking_names() -> set[str]:
    """The names imported under `if TYPE_CHECKING:` in shiftbox/__init__.py (what type checkers see)."""
    tree = ast.parse(INIT.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            names |= {a.asname or a.name for n in ast.walk(node) if isinstance(n, ast.ImportFrom) for a in n.names}
    return names


def test_every_public_name_resolves_and_the_three_lists_agree():
    exported = set(shiftbox._EXPORTS)
    assert sorted(shiftbox.__all__) == shiftbox.__all__ and set(shiftbox.__all__) == exported
    assert type_checking_names() == exported
    for name in shiftbox.__all__:
        value = getattr(shiftbox, name)
        assert value is getattr(__import__(shiftbox._EXPORTS[name], fromlist=[name]), name)


def test_an_unknown_name_is_an_attribute_error():
    try:
        shiftbox.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("shiftbox.no_such_thing resolved")


def test_import_shiftbox_loads_no_submodule():
    """The pytest plugin lives in the package: importing it must not load the harness (or litellm); only the
    helper that loads the package's names on first use (`shiftbox._lazy`, standard library only)."""
    code = ("import sys, shiftbox, shiftbox.pytest; "
            "print(sorted(m for m in sys.modules if m.startswith('shiftbox.') or m == 'litellm'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout.replace("'", '"')) == ["shiftbox._lazy", "shiftbox.pytest"]


def test_the_package_and_the_kit_load_their_names_on_first_use_with_one_helper():
    """The helper was written twice, the client's (`shiftbox._lazy`) and the kit's own `__getattr__`: one now, the
    servers distribution's, which the client may import (never the reverse)."""
    from shiftbox_servers import kit

    assert shiftbox.__getattr__.__code__ is kit.__getattr__.__code__
    assert shiftbox.__dir__.__code__ is kit.__dir__.__code__


def test_the_python_page_example_runs_as_written(tmp_path):
    """docs/python.md's example, run in a scratch folder that holds the repository's snapshots path."""
    page = (REPO / "docs" / "python.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    (tmp_path / "snapshots").symlink_to(REPO / "snapshots")
    env = {**os.environ, "SHIFTBOX_SNAPSHOTS": str(REPO / "snapshots")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    trajectories = shiftbox.read_trajectories(tmp_path / "runs" / "from-python")
    tasks = shiftbox.load_task_file(REPO / "snapshots/banking/v1/tasks-handwritten.json").tasks
    assert len(trajectories) == 2 * len(tasks)  # trials=2
    metrics, _ = shiftbox.score_run(tmp_path / "runs" / "from-python")
    assert out.stdout.strip() == (f"TSR {metrics.tsr.mean:.2f}, TUE {metrics.tue.tue:.2f}, "
                                  f"{len(trajectories)} simulations, {len(trajectories)} scored")


def test_bad_choices_from_python_are_plan_errors_naming_the_choices(tmp_path):
    """The CLI's typer choices never reach these checks; a Python caller does, and gets the same guidance."""
    import pytest

    from shiftbox.serve import serve_gateway

    tasks = REPO / "snapshots/banking/v1/tasks-handwritten.json"
    with pytest.raises(shiftbox.RunPlanError, match="'docker-compose' is not one of inproc, stdio, http, docker"):
        shiftbox.plan_run(tasks, tmp_path / "a", servers="docker-compose")
    with pytest.raises(shiftbox.RunPlanError, match="'k8s' is not one of inproc, stdio, http, docker"):
        serve_gateway("banking", tmp_path / "b", servers="k8s")
    with pytest.raises(shiftbox.RunPlanError, match="--transport 'sse' is not http or stdio"):
        serve_gateway("banking", tmp_path / "c", transport="sse")
    with pytest.raises(shiftbox.RunPlanError, match="--tools 'live': choose one of reexecute, transcript"):
        shiftbox.replay_fixture(REPO / "fixtures" / "banking-litellm", tmp_path / "d", "live")
    assert not any(tmp_path.iterdir())  # refused before anything was written
