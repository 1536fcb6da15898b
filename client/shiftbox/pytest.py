"""A pytest plugin for putting your agent's recorded evaluations into your CI.

    def test_my_agent_still_scores(shiftbox_replay):
        metrics = shiftbox_replay("fixtures/my-agent", min_tsr=0.8, max_tcrr=0.1, min_recovery=0.9)

The fixture directory is replayed offline (`shiftbox replay`): the test fails when the replay
diverges from the recording (cassette miss, tool drift, different trajectory) or a threshold is not
met; it returns the run metrics for further checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pytest loads this plugin in every run of a project that installs shiftbox: import lazily
    from .metrics import RunMetrics

THRESHOLDS = {
    "min_tsr": ("TSR", lambda m: m.tsr.mean, min),
    "min_tue": ("TUE", lambda m: m.tue.tue, min),
    "max_tcrr": ("TCRR", lambda m: m.tcrr.pooled, max),
    "min_recovery": ("GSRT recovery rate", lambda m: m.gsrt.recovery_rate, min),
    "max_median_ack": ("GSRT median ack", lambda m: m.gsrt.median_ack, max),
}


class ReplayFailed(AssertionError):
    """The fixture did not replay identically, or a metric missed its threshold."""


def check_thresholds(metrics: RunMetrics, **thresholds: float) -> None:
    failures = []
    for key, bound in thresholds.items():
        if key not in THRESHOLDS:
            raise ValueError(f"unknown threshold {key!r}; use: {', '.join(THRESHOLDS)}")
        label, read, kind = THRESHOLDS[key]
        value = read(metrics)
        if value == "never":  # a GSRT median that lands on never-reached stages is later than any bound
            value = float("inf")
        if value is None or (kind is min and value < bound) or (kind is max and value > bound):
            failures.append(f"{label} = {value} ({'at least' if kind is min else 'at most'} {bound} required)")
    if failures:
        raise ReplayFailed("; ".join(failures))


def replay_and_check(fixture: Path | str, out: Path | str, tools: str = "reexecute", **thresholds: float) -> RunMetrics:
    """Replay `fixture` into `out`, check it repeats and meets the thresholds; returns its metrics."""
    from .replay import replay_fixture
    from .runs import RunDirError, RunPlanError, score_run
    from .trajectory import RunFileError

    try:
        result = replay_fixture(fixture, out, tools)  # type: ignore[arg-type]
    except (RunPlanError, RunDirError, RunFileError) as exc:
        raise ReplayFailed(f"replay of {fixture} failed: {exc}") from None
    if not result.identical:
        lines = ([f"replay failed: {result.failed}"] if result.failed else []) + [
            f"replay mismatch: {p}" for p in result.problems]
        raise ReplayFailed(f"replay of {fixture} failed:\n" + "\n".join(lines))
    metrics, _ = score_run(Path(out))
    check_thresholds(metrics, **thresholds)
    return metrics


@pytest.fixture
def shiftbox_replay(tmp_path):
    """`shiftbox_replay(fixture_dir, **thresholds) -> RunMetrics` (see the module docstring)."""
    counter = iter(range(10**6))

    def run(fixture: Path | str, tools: str = "reexecute", **thresholds: float) -> RunMetrics:
        return replay_and_check(fixture, tmp_path / f"replay-{next(counter)}", tools, **thresholds)

    return run
