"""A pytest plugin for putting your agent's recorded evaluations into your CI.

    def test_my_agent_still_scores(shiftbox_replay):
        metrics = shiftbox_replay("fixtures/my-agent", min_tsr=0.8, max_tcrr=0.1, min_recovery=0.9)

The fixture directory is replayed offline (`shiftbox replay`): the test fails when the replay
diverges from the recording (cassette miss, tool drift, different trajectory) or a threshold is not
met; it returns the run metrics for further checks.

    def test_my_agent_answers(shiftbox_vcr):      # needs the vcr extra: pip install 'shiftbox[vcr]'
        assert "refund" in my_agent.ask("I want my money back")

`shiftbox_vcr` runs the test under a vcrpy cassette (`cassettes/<module>/<test>.yaml` next to the test file, or
`@pytest.mark.shiftbox_vcr(path=…, record_mode=…)`), so the agent's own LLM calls are recorded once and replayed
offline; `--shiftbox-record=none|once|new_episodes|all` (default `SHIFTBOX_RECORD_MODE`, else `none` under CI and
`once` elsewhere). An agent program runs under it as `shiftbox_vcr.command(program, …)` with `shiftbox_vcr.env()`
(docs/vcr.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pytest loads this plugin in every run of a project that installs shiftbox: import lazily
    from .metrics import RunMetrics
    from .vcr import AgentCassette



def thresholds() -> dict[str, tuple[str, Callable[[RunMetrics], object], Callable]]:
    """Threshold name -> (label, the run's value, min or max): `min_`/`max_` each headline metric (`max_` when lower
    is better: min_tsr, min_tue, max_tcrr, min_recovery, ...), and max_median_ack."""
    from .metrics import headline_metrics

    return {**{m.threshold: (m.label, m.run_value, max if m.lower_is_better else min) for m in headline_metrics()},
            "max_median_ack": ("GSRT median ack", lambda m: m.gsrt.median_ack, max)}


class ReplayFailed(AssertionError):
    """The fixture did not replay identically, or a metric missed its threshold."""


def check_thresholds(metrics: RunMetrics, **bounds: float) -> None:
    failures = []
    known = thresholds()
    for key, bound in bounds.items():
        if key not in known:
            raise ValueError(f"unknown threshold {key!r}; use: {', '.join(known)}")
        label, read, kind = known[key]
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


RECORD_OPTION = "--shiftbox-record"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("shiftbox").addoption(
        RECORD_OPTION, choices=("none", "once", "new_episodes", "all"), default=None,
        help="vcrpy record mode of the shiftbox_vcr fixture's cassettes (default: $SHIFTBOX_RECORD_MODE, else none "
             "under CI and once elsewhere)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "shiftbox_vcr(path=None, record_mode=None): the shiftbox_vcr fixture's "
                                       "cassette file and record mode for this test")


@pytest.fixture
def shiftbox_vcr(request: pytest.FixtureRequest) -> Iterator[AgentCassette]:
    """The test under a vcrpy cassette (see the module docstring); fails naming the extra when vcrpy is missing."""
    from .vcr import INSTALL_VCR, default_record_mode, vcr_installed
    from .vcr._pytest import agent_cassette, replay_problem

    if not vcr_installed():
        pytest.fail(f"the shiftbox_vcr fixture needs vcrpy: {INSTALL_VCR}", pytrace=False)
    marker = request.node.get_closest_marker("shiftbox_vcr")
    options = dict(marker.kwargs) if marker else {}
    test_file = Path(request.node.path)
    path = Path(options.get("path") or test_file.parent / "cassettes" / test_file.stem / f"{request.node.name}.yaml")
    if not path.is_absolute():
        path = test_file.parent / path
    mode = options.get("record_mode") or request.config.getoption(RECORD_OPTION) or default_record_mode()
    problem = replay_problem(path, mode)
    if problem:
        pytest.fail(problem, pytrace=False)
    with agent_cassette(path, mode) as cassette:
        yield cassette
