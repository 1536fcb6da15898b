"""Issue 34: the end of a run on a Ray cluster that outlives it (`--ray-address`). Leaving the cluster
(`ray.shutdown`) does nothing the run's results need (they are written and fsynced before), yet it waited in the
driver, often about 0.25 s (Ray's core worker joins its RPC threads, which poll every 250 ms). The run now leaves the
cluster in a thread of its own and returns: the process's remaining work (the summary) goes on meanwhile, and the
disconnection is finished before anything else connects (the next run in the process) and before the process exits
(Python's own exit, and `shiftbox`'s fast exit, join it).

Ray is stood in for by a module that records what is done to it, and whose `shutdown` waits until the test lets it
end: so "it did not wait" is seen without timing anything."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

from shiftbox.runs import _ray


class Cluster:
    """A stand-in for the `ray` module a run connects with: records what is done to it in order; `shutdown` does not
    end until `release` is set."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.release = threading.Event()
        self.initialized = False

    def connect(self, address: str) -> None:
        self.log.append(f"connect {address}")
        self.initialized = True

    def is_initialized(self) -> bool:
        return self.initialized

    def nodes(self) -> list[dict]:
        return [{"Alive": True, "Resources": {"CPU": 4.0}}]

    def shutdown(self) -> None:
        self.log.append("shutdown starts")
        self.release.wait(10)
        self.initialized = False
        self.log.append("shutdown ends")


def stand_in(monkeypatch) -> Cluster:
    cluster = Cluster()
    monkeypatch.setattr(_ray, "connect_ray", cluster.connect)
    return cluster


def test_leaving_the_cluster_does_not_hold_up_the_end_of_the_run(monkeypatch):
    cluster = stand_in(monkeypatch)
    ray = SimpleNamespace(is_initialized=cluster.is_initialized, nodes=cluster.nodes, shutdown=cluster.shutdown)
    try:
        with _ray.connected(ray, "127.0.0.1:6379", 2, background=True) as lasting:
            assert lasting
        # the block is left while the disconnection still goes on (it waits for `release`)
        assert cluster.log == ["connect 127.0.0.1:6379", "shutdown starts"]
    finally:
        cluster.release.set()
    _ray.disconnected()
    assert cluster.log[-1] == "shutdown ends"


def test_by_default_the_run_returns_only_once_it_has_left_the_cluster(monkeypatch):
    """A library caller may go on with Ray in its process (its own `ray.init`): a disconnection still going on in a
    thread could end the connection it makes next. Only a caller that exits next asks for the thread."""
    cluster = stand_in(monkeypatch)
    threading.Timer(0.2, cluster.release.set).start()  # the shutdown ends only after the block would have been left
    ray = SimpleNamespace(is_initialized=cluster.is_initialized, nodes=cluster.nodes, shutdown=cluster.shutdown)
    with _ray.connected(ray, "127.0.0.1:6379", 2):
        pass
    assert cluster.log == ["connect 127.0.0.1:6379", "shutdown starts", "shutdown ends"]
    assert not _ray._leaving


def test_only_shiftbox_run_asks_for_the_background(monkeypatch, tmp_path):
    """`shiftbox run` exits next (and its exit joins the thread); a library caller's options keep the default."""
    from typer.testing import CliRunner

    from shiftbox.cli import app
    from shiftbox.cli import run as cli_run
    from shiftbox.runs import ExecutionOptions, RunPlanError

    planned = []

    def plan_run(*args, options, **kwargs):
        planned.append(options)
        raise RunPlanError("planned")

    monkeypatch.setattr(cli_run, "plan_run", plan_run)
    done = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(tmp_path / "t.json"), "--out",
                                    str(tmp_path / "out"), "--executor", "ray", "--ray-address", "127.0.0.1:6379"])
    assert "planned" in done.output, done.output
    assert [o.leave_cluster_in_background for o in planned] == [True]
    assert ExecutionOptions().leave_cluster_in_background is False


def test_the_next_connection_waits_for_the_last_disconnection(monkeypatch):
    cluster = stand_in(monkeypatch)
    ray = SimpleNamespace(is_initialized=cluster.is_initialized, nodes=cluster.nodes, shutdown=cluster.shutdown)
    with _ray.connected(ray, "127.0.0.1:6379", 2, background=True):
        pass
    # let the first disconnection end only once the next run is already connecting; it must not find the first
    # run's connection (still initialized) and use it, nor connect before that one is gone
    threading.Timer(0.2, cluster.release.set).start()
    with _ray.connected(ray, "127.0.0.1:6379", 2, background=True):
        assert cluster.log == ["connect 127.0.0.1:6379", "shutdown starts", "shutdown ends", "connect 127.0.0.1:6379"]
    _ray.disconnected()
    assert cluster.log[-2:] == ["shutdown starts", "shutdown ends"]


EXITING = """
    import sys, threading, time
    from types import SimpleNamespace
    from shiftbox.cli._exit import exit_now
    from shiftbox.runs import _ray

    def shutdown():
        time.sleep(0.5)  # longer than the rest of this program takes to reach its exit
        print("disconnected", flush=True)

    _ray.connect_ray = lambda address: None
    ray = SimpleNamespace(is_initialized=lambda: False, nodes=lambda: [], shutdown=shutdown)
    with _ray.connected(ray, "127.0.0.1:6379", 0, background=True):
        pass
    print("run ended", flush=True)
    if sys.argv[1] == "fast":
        exit_now(0)
"""


def test_the_process_does_not_exit_before_it_has_left_the_cluster():
    for how in ("python", "fast"):  # the interpreter's own exit, and the CLI's fast exit (`exit_now`)
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(EXITING), how], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["run", "ended", "disconnected"], (how, done.stdout, done.stderr)
