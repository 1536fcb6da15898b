"""The task both RL environment test modules play, and its run with `scripted:oracle` by shiftbox's normal path."""

from __future__ import annotations

import pytest

import shiftbox
from tests.client.harness import HANDWRITTEN

TASK_ID = "hw_banking_001"


@pytest.fixture(scope="package")
def oracle_run(tmp_path_factory) -> tuple[shiftbox.Trajectory, shiftbox.SimulationMetrics]:
    """The task run with `scripted:oracle` through `shiftbox.run_evaluation`, and its score by `score_run`."""
    out = tmp_path_factory.mktemp("rl") / "oracle"
    result = shiftbox.run_evaluation(shiftbox.plan_run(HANDWRITTEN, out, agent="scripted:oracle", task_ids=[TASK_ID]))
    _, per_simulation = shiftbox.score_run(out)
    return result.trajectories[0], per_simulation[0]
