"""docs/adding-an-agent.md, done: its toy agent and toy user simulator installed through entry points
(a `*.dist-info` with `entry_points.txt`, as an installer writes it) and run by `shiftbox run`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from shiftbox.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "adding-an-agent.md"
SHIFTBOX = str(Path(sys.executable).with_name("shiftbox"))


def _block(language: str) -> str:
    """The first fenced block of `language` on the page."""
    found = re.search(rf"^```{language}\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    assert found, f"no {language} block in {PAGE.name}"
    return found.group(1)


def _install(site: Path) -> None:
    """The page's module and entry points, installed into `site` (a directory then put on PYTHONPATH)."""
    site.mkdir()
    (site / "toy_shiftbox.py").write_text(_block("python"))
    dist_info = site / "toy_shiftbox-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-shiftbox\nVersion: 0.1\n")
    groups = tomllib.loads(_block("toml"))["project"]["entry-points"]
    groups["shiftbox.agents"]["wrong"] = "toy_shiftbox:toy_user"  # a factory making no Agent
    (dist_info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items()) + "\n"
        for group, points in groups.items()))


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    """The toy plug-in installed, the page's task file written; `run(*args)` runs `shiftbox run` with them."""
    root = tmp_path_factory.mktemp("plugin")
    _install(root / "site")
    tasks = root / "echo-tasks.json"
    tasks.write_text(_block("json"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root / "site"),
                                                                      os.environ.get("PYTHONPATH")])))

    def run(*args: str, out: str = "toy") -> subprocess.CompletedProcess:
        return subprocess.run([SHIFTBOX, "run", "--domain", "echo", "--tasks", str(tasks),
                               "--out", str(root / out), *args], env=env, capture_output=True, text=True,
                              timeout=120)

    return {"run": run, "root": root}


def test_the_toy_plugins_run_through_their_entry_points(toy):
    res = toy["run"]("--agent", "toy:echo", "--user", "toy")
    assert res.returncode == 0, res.stderr
    lines = (toy["root"] / "toy" / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 1
    t = Trajectory.model_validate_json(lines[0])
    assert (t.agent, t.user, t.user_simulator.kind, t.domain) == ("toy:echo", "toy", "toy", "echo")
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert [(c.name, c.arguments, c.is_error) for c in t.tool_calls] == [
        ("echo", {"text": "Please repeat: hello"}, False)]
    assert t.messages[3].content == "The tool said: " + json.dumps({"text": "Please repeat: hello"})
    assert (t.termination.reason, t.termination.blame) == ("user_stop", "none")
    assert t.usage == {}  # neither toy declares model use


def test_a_plugins_factory_errors_are_usage_errors(toy):
    res = toy["run"]("--agent", "toy:echo", "--agent-arg", "loud=1", "--user", "toy", out="bad-option")
    assert res.returncode == 2
    assert "toy agents take no options (got loud)" in res.stderr


def test_a_plugins_start_failure_is_the_agents(toy):
    res = toy["run"]("--agent", "toy:shout", "--user", "toy", out="no-tool")
    assert res.returncode == 0, res.stderr
    t = Trajectory.model_validate_json((toy["root"] / "no-tool" / "trajectories.jsonl").read_text())
    assert (t.termination.reason, t.termination.blame) == ("agent_error", "agent")
    assert "the echo domain has no tool 'shout'" in t.termination.detail


def test_a_factory_that_makes_no_agent_is_refused(toy):
    res = toy["run"]("--agent", "wrong", "--user", "toy", out="wrong")
    assert res.returncode == 2
    assert "returned a OneRequest, which does not derive from shiftbox.agents.Agent" in " ".join(res.stderr.split())
