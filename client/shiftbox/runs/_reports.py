"""HTML reports of run directories: one run (or a folder of them), or two runs with their comparison on top."""

from __future__ import annotations

from pathlib import Path

from shiftbox_servers.kit import load_json_file

from ..metrics import AgentScores, score_by_agent
from ..report import comparison_section, render_html, save_html
from ..trajectory import Trajectory
from ._compare import ComparedRuns
from ._files import RUN_FILE, read_run


def read_report_inputs(run_dir: Path, allow_empty: bool = True) -> tuple[dict[str, AgentScores], list[Trajectory],
                                                                        dict | None]:
    """What `render_html` takes for a run directory (or a folder of them): scores per agent, trajectories, run.json.
    A run without simulations renders as such; `allow_empty=False` makes it a NoSimulationsError."""
    trajectories, tasks = read_run(run_dir, allow_empty=allow_empty)
    run_file = run_dir / RUN_FILE
    metadata = load_json_file(run_file) if run_file.exists() else None
    return score_by_agent(trajectories, tasks), trajectories, metadata


def write_html_report(run_dir: Path, out: Path) -> Path:
    """Score `run_dir` (a run directory or a folder of them) per agent and write its HTML report to `out`; a run
    without simulations is a NoSimulationsError (`shiftbox report` exits 1)."""
    return save_html(render_html(*read_report_inputs(run_dir, allow_empty=False)), out)


def write_comparison_report(compared: ComparedRuns, out: Path) -> Path:
    """The HTML report of both runs with the comparison on top (one self-contained file)."""
    return save_html(render_html(compared.scores, compared.trajectories, None,
                                 comparison_section(compared.comparison)), out)
