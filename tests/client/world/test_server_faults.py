"""A domain server killed mid-run: infrastructure errors, `--retry-infra`, and nothing finished lost."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from shiftbox import agent_from_spec, user_from_spec
from shiftbox.runs import ExecutionOptions, RunConfig, RunHooks, execute_run
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, handwritten

TRIALS = 4  # 5 hand-written tasks x 4 trials = 20 simulations


def server_processes() -> list[int]:
    """This process's children running a shiftbox domain server (stdio or HTTP)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"shiftbox_servers" in cmdline:
            found.append(int(entry.name))
    return found


def kill_server_processes() -> list[int]:
    killed = server_processes()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    return killed


class KillServerAfter(RunHooks):
    """Kills the domain server once (with `kill`, which returns what it killed), when `after`
    simulations have finished."""

    def __init__(self, after: int, kill: Callable[[], list] = kill_server_processes):
        self.after, self.kill, self.seen, self.killed = after, kill, 0, []

    def finished(self, trajectory, world) -> None:
        self.seen += 1
        if self.seen == self.after:
            self.killed = self.kill()


def run_with_a_kill(out: Path, servers: str, retry_infra: int,
                    kill: Callable[[], list] = kill_server_processes) -> tuple[list, KillServerAfter]:
    tasks = handwritten().tasks
    config = RunConfig(domain="banking", tasks_sha256="-", agent="scripted:oracle", user="scripted",
                       trials=TRIALS, servers=servers, snapshot=str(HANDWRITTEN.parent))
    out.mkdir()
    hooks = KillServerAfter(after=3, kill=kill)
    options = ExecutionOptions(concurrency=2, retry_infra=retry_infra)
    anyio.run(lambda: execute_run(config, tasks, out, options, make_agent=lambda: agent_from_spec("scripted:oracle"),
                                  make_user=lambda: user_from_spec("scripted"), finished=set(), hooks=hooks))
    return read_trajectories(out), hooks


@pytest.mark.parametrize("servers", ["stdio", "http"])
def test_without_retries_the_affected_simulations_are_infrastructure_errors_and_the_run_finishes(tmp_path, servers):
    trajectories, hooks = run_with_a_kill(tmp_path / "r", servers, retry_infra=0)
    assert hooks.killed, "no server process was found to kill"
    ids = [t.simulation_id for t in trajectories]
    assert len(ids) == len(set(ids)) == 5 * TRIALS  # nothing lost, nothing duplicated
    infra = [t for t in trajectories if t.termination.reason == "infrastructure_error"]
    assert infra and all(t.termination.blame == "infrastructure" for t in infra)
    assert all(t.termination.reason == "user_stop" for t in trajectories[:3])  # finished before the kill


@pytest.mark.parametrize("servers", ["stdio", "http"])
def test_with_retry_infra_the_server_is_restarted_and_every_simulation_completes(tmp_path, servers):
    trajectories, hooks = run_with_a_kill(tmp_path / "r", servers, retry_infra=2)
    assert hooks.killed
    ids = [t.simulation_id for t in trajectories]
    assert len(ids) == len(set(ids)) == 5 * TRIALS
    assert [t.termination.reason for t in trajectories] == ["user_stop"] * len(trajectories)
    # the kill is recovered from either by rerunning the simulation or, when the call in flight was
    # read-only (readOnlyHint), by resending that call after the restart
    retried = [t for t in trajectories if t.timing.get("attempts", 1) > 1
               or any(c.timing.get("attempts", 1) > 1 for c in t.tool_calls)]
    assert retried, "the kill did not hit any simulation"
    # a retried simulation is indistinguishable from one that never failed (timings aside)
    clean, _ = run_with_a_kill(tmp_path / "clean", "inproc", retry_infra=0)
    expected = {t.simulation_id: t.canonical_json() for t in clean}
    assert all(t.canonical_json() == expected[t.simulation_id] for t in trajectories)
