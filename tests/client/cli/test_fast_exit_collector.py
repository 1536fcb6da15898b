"""The `shiftbox` program starts with the garbage collector's view of what is alive frozen (`gc.freeze`), and a
command that exits fast freezes it again as it starts (its own module loaded): those objects live until the program
ends, so a full collection during start-up or after a run (each scanned every module: 25-75 ms) scans only what came
later. A command invoked in-process (typer's test runner) leaves the collector as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

PROBE = '''
import gc, json
from shiftbox.cli._exit import Program
def probe():
    print(json.dumps({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold()}))
app = Program(package="collector_probe", commands={"fast": ("probe", "probe", True), "slow": ("probe", "probe", False)})
@app.callback()
def main():
    pass
'''

PROGRAM = """
import sys
from shiftbox.cli._exit import Program
from collector_probe.probe import app
sys.argv[0] = "shiftbox"
app()
"""


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "collector_probe"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "probe.py").write_text(PROBE)
    return tmp_path


def _collector_in_program(tmp_path: Path, command: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROGRAM, command], cwd=_package(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _frozen_in_program(tmp_path: Path, command: str) -> int:
    return _collector_in_program(tmp_path, command)["frozen"]


def test_a_command_run_by_the_program_starts_with_the_collector_frozen(tmp_path):
    slow, fast = _frozen_in_program(tmp_path, "slow"), _frozen_in_program(tmp_path, "fast")
    assert slow > 1000  # every module the program's start loaded, at least
    assert fast > slow  # and the fast command's own module, frozen as it starts


def test_a_command_that_exits_fast_spaces_the_young_passes_as_the_servers_do(tmp_path):
    """Regression: a run's young collections came every 700 allocations, each also walking the objects of every
    simulation in flight (promoted on to the older generations, whose passes then walked them again): 0.75 s of
    collections in a run of 520 simulations with 256 in flight against 0.30 s with 8. Spaced as the servers space
    theirs (`collect_less`), it was 0.21 against 0.12 s."""
    import gc

    servers = subprocess.run([sys.executable, "-c", "import gc, json; from shiftbox_servers.kit import collect_less; "
                              "collect_less(); print(json.dumps(gc.get_threshold()))"],
                             capture_output=True, text=True, timeout=120, check=True)
    spaced = json.loads(servers.stdout)
    assert spaced != list(gc.get_threshold())
    assert _collector_in_program(tmp_path, "fast")["threshold"] == spaced
    assert _collector_in_program(tmp_path, "slow")["threshold"] == list(gc.get_threshold())  # the default


def test_in_process_the_collector_is_left_as_it_was(tmp_path, monkeypatch):
    import gc

    monkeypatch.syspath_prepend(str(_package(tmp_path)))
    from collector_probe.probe import app

    for command in ("fast", "slow"):
        result = CliRunner().invoke(app, [command])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output.strip().splitlines()[-1]) == {"frozen": 0, "threshold": list(gc.get_threshold())}
