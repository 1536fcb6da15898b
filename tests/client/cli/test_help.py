"""What `--help`, `--version` and the input errors of `metrics` and `replay` tell a user (issue 29, item 12)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from shiftbox.cli import COMMANDS, app
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}  # one help line per option: no wrapping inside a phrase


def help_text(*command: str) -> str:
    res = runner.invoke(app, [*command, "--help"], env=WIDE)
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())  # wrapped lines joined: phrases are searched whole


def test_help_keeps_bracketed_text():
    text = help_text("run")
    assert "needs shiftbox[ray]" in text and "needs shiftbox[vcr]" in text
    assert "[default: local, or processes when --workers > 1]" in text


def test_agent_help_lists_every_agent_kind():
    text = help_text("run")
    agent = re.search(r"--agent <\w+>(.*?)--user <", text).group(1)  # the option's own help, not the example
    for kind in ("scripted:", "litellm:", "cmd:", "a2a:"):
        assert kind in agent, (kind, agent)


def test_version_prints_both_distributions_versions():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.split("\n")[:2] == [f"shiftbox {version('shiftbox')}",
                                          f"shiftbox-servers {version('shiftbox-servers')}"]


@pytest.mark.parametrize("width", [40, 80, 400])
def test_help_lists_each_command_as_the_loaded_command_would(width):
    """`shiftbox --help` lists the commands from their help text read in their source, none loaded: byte for byte
    the list the loaded commands give, at any terminal width (the short help is cut to fit it)."""
    group = typer.main.get_command(app)
    listed = group.get_help(group.context_class(group, info_name="shiftbox", terminal_width=width))
    assert not any(group.commands.loaded(name) for name in COMMANDS)
    for name in COMMANDS:
        group.commands[name]  # noqa: B018  # loads the command
    assert group.get_help(group.context_class(group, info_name="shiftbox", terminal_width=width)) == listed


def test_help_loads_no_command_nor_the_library_behind_them():
    """`shiftbox --help` (the program, in a fresh process) imports no command's module: each used to load with its
    library (MCP's SDK for `serve`, the metrics for `metrics`...), over a second of CPU to print 25 lines."""
    probe = ("import sys; sys.argv = ['shiftbox', '--help']\nfrom shiftbox.cli import app\ntry:\n    app()\n"
             "except SystemExit:\n    pass\nprint('MODULES', *sorted(sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Commands:" in done.stdout, done.stderr[-2000:]
    modules = set(done.stdout.split("MODULES", 1)[1].split())
    commands = {f"shiftbox.cli.{module}" for module, _, _ in COMMANDS.values()}
    assert modules & (commands | {"mcp", "mcp_types", "litellm", "shiftbox.metrics", "shiftbox.runs"}) == set()


def make_run(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                              "--task-id", "hw_banking_001"])
    assert res.exit_code == 0, res.output
    return out


def test_metrics_refuses_a_corrupt_run_json_with_exit_2(tmp_path):
    out = make_run(tmp_path)
    (out / "run.json").write_text('{"config": {"domain": ')
    res = runner.invoke(app, ["metrics", str(out)])
    assert res.exit_code == 2, res.output
    assert "run.json" in res.output and "does not parse" in res.output


def test_replay_of_a_run_directory_names_the_missing_fixture_json(tmp_path):
    out = make_run(tmp_path)
    res = runner.invoke(app, ["replay", str(out), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "no run.json" not in text
    assert "fixture.json" in text and "--record" in text


def test_replay_into_an_existing_run_does_not_suggest_a_resume_it_lacks(tmp_path):
    fixture = tmp_path / "fixture"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                              str(tmp_path / "recorded"), "--task-id", "hw_banking_001", "--record", str(fixture)])
    assert res.exit_code == 0, res.output
    out = make_run(tmp_path)
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(out)])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "--resume" not in text and "already holds a run" in text and "--out" in text


def test_shipped_task_files_name_no_internal_issue_number(tmp_path):
    res = runner.invoke(app, ["tasks", "validate", str(HANDWRITTEN)])
    assert res.exit_code == 0, res.output
    assert not re.search(r"(?i)\bissue \d", res.output), res.output
    root = HANDWRITTEN.parents[2]  # snapshots/
    sources = {p: json.loads(p.read_text()).get("source", "") for p in root.rglob("tasks*.json")}
    assert sources and not [p for p, s in sources.items() if re.search(r"(?i)\bissue \d", s or "")]


def _cli_md_sections() -> dict[str, str]:
    """docs/cli.md's text under each `## <command>` heading."""
    text = (Path(__file__).parents[3] / "docs" / "cli.md").read_text()
    return {m.group(1).strip(): m.group(2) for m in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.S | re.M)}


def _leaf_commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(command, TyperGroup):
        for name in command.commands:
            yield from _leaf_commands(command.commands[name], (*path, name))
    else:
        yield path, command


def test_every_option_of_every_command_is_in_its_cli_md_section():
    """A user reading docs/cli.md's section of a command finds every option its --help offers (demo's --out,
    tasks validate's --toolset, generate-cross's --independent and tasks import's --task-set were missing)."""
    sections = _cli_md_sections()
    missing = []
    for path, command in _leaf_commands(typer.main.get_command(app), ()):
        section = sections[f"shiftbox {path[0]}"]
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden and param.opts[0] != "--help":
                names = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
                if not any(re.search(rf"{re.escape(o)}(?![\w-])", section) for o in names):  # --x or --no-x
                    missing.append(f"shiftbox {' '.join(path)} {names[0]}")
    assert missing == []
