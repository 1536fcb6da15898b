"""Issue 33 item 5: Ray actors reserve their CPUs (and memory) and are spread across nodes; a cluster without room is
refused saying what Ray does; every node is checked before any simulation; `--record` works when the nodes have
separate disks; a node killed mid-run leaves infrastructure errors that `--resume` runs again.

The cluster tests share one local cluster of two nodes, one CPU each, on 127.0.0.1 only: a head (`ray start --head`)
and a second node (`ray start --address`, named "second") started in a mount namespace of its own where the
directory `disk` (the driver's run and fixture directories, a snapshot copy) is covered by an empty tmpfs. That is
how "separate disks" is simulated: processes on the second node see the same machine but not the driver's files
under `disk`, as a node with its own disk would. The module skips, saying why, when Ray is not installed, when
`unshare` cannot make a mount namespace (it needs root or user namespaces), or when the cluster does not start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from shiftbox import ExecutionOptions, RunPlanError, plan_run, run_evaluation
from shiftbox.cluster import connect_ray, import_ray, ray_installed
from shiftbox.errors import RunWorkerError
from shiftbox.runs._ray import no_room, workers_room
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, REPO

SNAPSHOT = REPO / "snapshots" / "banking" / "v1"
GIB = 2**30

# `ray start` for a node that joins a cluster on the loopback: Ray refuses to join when told it runs no cluster of
# several machines (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), yet without that it replaces 127.0.0.1 with the machine's
# routable address; so the joining `ray start` passes the check while its address stays the loopback
JOIN = ("import sys, ray._private.ray_constants as c, ray._private.services as s; c.ENABLE_RAY_CLUSTER = True; "
        "s.get_node_ip_address = lambda address=None: '127.0.0.1'; from ray.scripts.scripts import main; "
        "sys.argv[0] = 'ray'; main()")


def test_the_room_for_workers_counts_what_fits_on_each_node_alone():
    nodes = [{"CPU": 2.0, "memory": 3 * GIB}, {"CPU": 1.0, "memory": 8 * GIB}]
    assert workers_room(nodes, 1.0, None) == 3  # 2 + 1
    assert workers_room(nodes, 1.5, None) == 1  # 1.5 fits once in 2 CPUs, never in 1: CPUs do not add across nodes
    assert workers_room(nodes, 0.5, None) == 6  # 4 + 2
    assert workers_room(nodes, 1.0, 2 * GIB) == 2  # memory: 3 GiB holds one 2 GiB actor, 8 GiB four but 1 CPU
    message = no_room(nodes, 4, 3, 1.0, None)
    assert message.startswith("the Ray cluster has room for 3 of the --workers 4 actors: each reserves 1 CPU on one "
                               "node for the whole run")
    assert "the others would wait forever (nodes: 2 CPUs, 1 CPUs)" in message and "Lower --workers" in message


def test_the_worker_resources_are_checked_and_only_for_ray():
    if not ray_installed():
        pytest.skip("Ray is not installed (the optional extra shiftbox[ray]; `make env` installs it)")
    options = ExecutionOptions(executor="ray", workers=2, worker_cpus=0.5, worker_memory_mb=512)
    assert (options.worker_cpus, options.worker_memory_mb) == (0.5, 512)
    for bad in (0, -1, "one", True, float("nan")):
        with pytest.raises(RunPlanError, match=r"--worker-cpus \(worker_cpus\) .*: give a number above 0"):
            ExecutionOptions(executor="ray", worker_cpus=bad)  # type: ignore[arg-type]
    with pytest.raises(RunPlanError, match=r"--worker-memory-mb \(worker_memory_mb\) 0: give a whole number"):
        ExecutionOptions(executor="ray", worker_memory_mb=0)
    with pytest.raises(RunPlanError, match="--worker-cpus and --worker-memory-mb are for --executor ray"):
        ExecutionOptions(executor="processes", worker_cpus=2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen) -> None:
    """End a node: its `ray start --block` and every process of its session (never another's Ray)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)
    for entry in Path("/proc").glob("[0-9]*"):  # what left the session group (daemonized) but kept its session id
        with contextlib.suppress(OSError, ValueError, IndexError, ProcessLookupError):
            if int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[4]) == process.pid:
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    """(ray, disk, the second node's process): a two-node cluster this process is connected to, as described above."""
    if not ray_installed():  # not importorskip: Ray must first be imported as shiftbox imports it (`import_ray`)
        pytest.skip("Ray is not installed (the optional extra shiftbox[ray]; `make env` installs it)")
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("`unshare -m` cannot make a mount namespace here (needs root or user namespaces): no node with a "
                    "separate disk can be simulated")
    ray = import_ray()
    disk = tmp_path_factory.mktemp("driver-disk")
    temp = Path(tempfile.mkdtemp(prefix="sbray", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    port, python = _free_port(), sys.executable
    # no token authentication: this cluster listens on the loopback only, and this process imported Ray (which
    # reads the mode then) before it could be given a token; a node started by `ray start` would turn it on
    # by itself if it found a token file of an earlier cluster, and refuse this driver
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_agent_register_timeout_ms": "180000",  # a busy machine is slow
           "RAY_worker_register_timeout_seconds": "300"}
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--temp-dir", str(temp), "--block",
              "--disable-usage-stats"]
    logs = temp / "logs.txt"
    nodes: list[subprocess.Popen] = []
    try:
        with logs.open("ab") as log:
            nodes.append(subprocess.Popen(
                [python, "-c", JOIN.replace("c.ENABLE_RAY_CLUSTER = True", "pass"), "start", "--head", "--port",
                 str(port), "--include-dashboard", "false", "--node-name", "head", *common],
                env=env, stdout=log, stderr=log, start_new_session=True))
            deadline = time.monotonic() + 240
            while not (temp / "session_latest" / "logs" / "raylet.out").exists() or not _listening(port):
                if time.monotonic() > deadline or nodes[0].poll() is not None:
                    pytest.skip(f"the Ray head did not start: {logs.read_text()[-2000:]}")
                time.sleep(2)
            connect_ray(f"127.0.0.1:{port}")  # as `--ray-address 127.0.0.1:PORT` connects
            nodes.append(subprocess.Popen(
                ["unshare", "-m", "--propagation", "private", "sh", "-c",
                 f'mount -t tmpfs none "{disk}" && exec "$0" "$@"', python, "-c", JOIN, "start", "--address",
                 f"127.0.0.1:{port}", "--node-name", "second", *common],
                env=env, stdout=log, stderr=log, start_new_session=True))
        deadline = time.monotonic() + 240
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            if time.monotonic() > deadline or nodes[1].poll() is not None:
                pytest.skip(f"the second Ray node did not join: {logs.read_text()[-2000:]}")
            time.sleep(2)
        yield ray, disk, nodes[1]
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        for node in reversed(nodes):
            _stop(node)
        shutil.rmtree(temp, ignore_errors=True)


def _plan(out: Path, **options):
    execution = {k: options.pop(k) for k in ("workers", "concurrency", "retry_infra", "worker_cpus") if k in options}
    return plan_run(HANDWRITTEN, out, domain="banking", trials=2,
                    options=ExecutionOptions(executor="ray", **{"workers": 2, "concurrency": 2, **execution}),
                    **options)


CLUSTER_TIMEOUT = pytest.mark.timeout(480)  # the first one starts the cluster: minutes on the busy 2-core machine


@CLUSTER_TIMEOUT
def test_more_workers_than_the_nodes_hold_are_refused_saying_what_ray_does(two_nodes, tmp_path):
    with pytest.raises(RunWorkerError) as refused:
        run_evaluation(_plan(tmp_path / "r", workers=3, concurrency=3))
    assert str(refused.value).startswith("the Ray cluster has room for 2 of the --workers 3 actors: each reserves "
                                         "1 CPU on one node"), refused.value
    assert "(nodes: 1 CPUs, 1 CPUs)" in str(refused.value)


@CLUSTER_TIMEOUT
def test_a_snapshot_missing_on_one_node_stops_the_run_naming_that_node(two_nodes, tmp_path):
    _, disk, _ = two_nodes
    snapshot = disk / "only-here"  # on the driver's disk; the second node does not have it
    shutil.copytree(SNAPSHOT, snapshot)
    out = disk / "missing-snapshot"
    with pytest.raises(RunWorkerError) as refused:
        run_evaluation(_plan(out, snapshot=snapshot))
    message = str(refused.value)
    assert message.startswith("the Ray nodes are not ready for this run (nothing ran):\nnode second (id ")
    assert f"{snapshot} is not a snapshot" in message and "shiftbox snapshots build" in message
    assert "node head" not in message  # the head has it
    assert not (out / "trajectories.jsonl").exists() or not read_trajectories(out)


@CLUSTER_TIMEOUT
def test_record_on_nodes_with_separate_disks_ships_the_fixture_to_the_driver(two_nodes):
    """Regression: the actors wrote the fixture's files on their own node, where the fixture directory does not
    exist: FileNotFoundError on the second node, nothing written. Both workers run here, one on each node (each
    reserves the one CPU of a node)."""
    _, disk, _ = two_nodes
    out, fixture = disk / "recorded", disk / "fixture"
    result = run_evaluation(_plan(out, record=fixture))
    ids = sorted(t.simulation_id for t in result.trajectories)
    assert len(ids) == 10 and result.fixture == fixture, result.fixture_refused
    assert sorted(p.name for p in (fixture / "transcripts").iterdir()) == sorted(
        f"{i.replace('#', '_')}.jsonl" for i in ids)
    assert (fixture / "fixture.json").exists()
