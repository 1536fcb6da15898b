"""Issue 33 item 5: Ray actors reserve their CPUs (and memory) and are spread across nodes; a cluster without room is
refused saying what Ray does; every node is checked before any simulation; `--record` works when the nodes have
separate disks; a node killed mid-run leaves infrastructure errors that `--resume` runs again.

The cluster tests share one local cluster of two nodes, one CPU each, on 127.0.0.1 only: a head (`ray start --head`)
and a second node (`ray start --address`, named "second") started in a mount namespace of its own where the
directory `disk` (the driver's run and fixture directories, a snapshot copy) is covered by an empty tmpfs. That is
how "separate disks" is simulated: processes on the second node see the same machine but not the driver's files
under `disk`, as a node with its own disk would. Each run is a `shiftbox run --ray-address` of its own process, as a
user starts one (see `two_nodes` for why not this process); the node-killing test comes last. The module skips,
saying why, when Ray is not installed, when `unshare` cannot make a mount namespace (it needs root or user
namespaces), or when the cluster does not start.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from shiftbox import ExecutionOptions, RunPlanError
from shiftbox.cluster import ray_installed
from shiftbox.runs._ray import no_room, workers_room
from shiftbox.testing import Reply, fake_openai
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, REPO, descendants

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
    for pid in _in_session(process.pid):  # what left the session group (daemonized) but kept its session id
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclasses.dataclass(frozen=True)
class TwoNodes:
    """The cluster: its address, the environment a user's shell for it has, the driver's `disk`, the second node."""

    address: str
    env: dict[str, str]
    disk: Path
    second: subprocess.Popen


def _shiftbox(cluster: TwoNodes, out: Path, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    """`shiftbox run` of the handwritten banking tasks (2 trials) on the cluster, from a fresh process."""
    return subprocess.run([sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks",
                           str(HANDWRITTEN), "--out", str(out), "--trials", "2", "--executor", "ray", "--ray-address",
                           cluster.address, "--workers", "2", "--concurrency", "2", *args],
                          env=cluster.env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    """The two-node cluster described above, which the tests drive from fresh processes (`_shiftbox`), as a user
    does: this process may hold Ray state of an earlier test's cluster (after a local `ray.init`, Ray keeps token
    authentication on in the process, which no `ray.shutdown` undoes, and a driver in that mode kills the actors of
    a cluster without it). This process never joins the cluster."""
    if not ray_installed():
        pytest.skip("Ray is not installed (the optional extra shiftbox[ray]; `make env` installs it)")
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("`unshare -m` cannot make a mount namespace here (needs root or user namespaces): no node with a "
                    "separate disk can be simulated")
    disk = tmp_path_factory.mktemp("driver-disk")
    temp = Path(tempfile.mkdtemp(prefix="sbray", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    port, python = _free_port(), sys.executable
    # no token authentication, said outright: this process's environment may carry the RAY_AUTH_MODE an earlier
    # local cluster set in it, and a node started by `ray start` would turn it on by itself if it found a token file
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_agent_register_timeout_ms": "180000",  # a busy machine is slow
           "RAY_worker_register_timeout_seconds": "300", "PYTHONUNBUFFERED": "1",  # `ray start` says what it did
           "COLUMNS": "1000"}  # errors on one line
    env.pop("PYTHONBREAKPOINT", None)  # set by an earlier local cluster to its debugger
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
        with (temp / "second.txt").open("ab") as log:
            nodes.append(subprocess.Popen(
                ["unshare", "-m", "--propagation", "private", "sh", "-c",
                 f'mount -t tmpfs none "{disk}" && exec "$0" "$@"', python, "-c", JOIN, "start", "--address",
                 f"127.0.0.1:{port}", "--node-name", "second", *common],
                env=env, stdout=log, stderr=log, start_new_session=True))
        deadline = time.monotonic() + 240
        # `ray start` says so once its node is registered in the cluster (no client connects here: see above)
        while b"Ray runtime started" not in (temp / "second.txt").read_bytes():
            if time.monotonic() > deadline or nodes[1].poll() is not None:
                pytest.skip(f"the second Ray node did not join: {(temp / 'second.txt').read_text()[-2000:]}")
            time.sleep(2)
        yield TwoNodes(f"127.0.0.1:{port}", env, disk, nodes[1])
    finally:
        for node in reversed(nodes):
            _stop(node)
        shutil.rmtree(temp, ignore_errors=True)


CLUSTER_TIMEOUT = pytest.mark.timeout(600)  # the first one starts the cluster: minutes on the busy 2-core machine


@CLUSTER_TIMEOUT
def test_more_workers_than_the_nodes_hold_are_refused_saying_what_ray_does(two_nodes, tmp_path):
    refused = _shiftbox(two_nodes, tmp_path / "r", "--workers", "3", "--concurrency", "3")
    assert refused.returncode == 2, refused.stderr
    assert ("error: the Ray cluster has room for 2 of the --workers 3 actors: each reserves 1 CPU on one node"
            in refused.stderr), refused.stderr
    assert "(nodes: 1 CPUs, 1 CPUs)" in refused.stderr


@CLUSTER_TIMEOUT
def test_a_snapshot_missing_on_one_node_stops_the_run_naming_that_node(two_nodes, tmp_path):
    snapshot = two_nodes.disk / "only-here"  # on the driver's disk; the second node does not have it
    shutil.copytree(SNAPSHOT, snapshot)
    out = two_nodes.disk / "missing-snapshot"
    refused = _shiftbox(two_nodes, out, "--snapshot", str(snapshot))
    assert refused.returncode == 2, refused.stderr
    message = refused.stderr[refused.stderr.index("error: "):]
    assert message.startswith("error: the Ray nodes are not ready for this run (nothing ran):\nnode second (id "), (
        refused.stderr)
    assert f"{snapshot} is not a snapshot" in message and "shiftbox snapshots build" in message
    assert "node head" not in message  # the head has it
    assert not (out / "trajectories.jsonl").exists() or not read_trajectories(out)


@CLUSTER_TIMEOUT
def test_record_on_nodes_with_separate_disks_ships_the_fixture_to_the_driver(two_nodes):
    """Regression: the actors wrote the fixture's files on their own node, where the fixture directory does not
    exist: FileNotFoundError on the second node, nothing written. Both workers run here, one on each node (each
    reserves the one CPU of a node)."""
    out, fixture = two_nodes.disk / "recorded", two_nodes.disk / "fixture"
    done = _shiftbox(two_nodes, out, "--record", str(fixture))
    assert done.returncode == 0, done.stderr
    ids = sorted(t.simulation_id for t in read_trajectories(out))
    assert len(ids) == 10
    assert sorted(p.name for p in (fixture / "transcripts").iterdir()) == sorted(
        f"{i.replace('#', '_')}.jsonl" for i in ids)
    assert (fixture / "fixture.json").exists()


def _actors_on(node: subprocess.Popen) -> list[int]:
    """The simulation actors running on `node`: below its `ray start`, or in its session (Ray may start a worker in
    a process group of its own)."""
    found = []
    for pid in sorted({*descendants(node.pid), *_in_session(node.pid)}):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::SimulationActor"):
                found.append(pid)
    return found


def _in_session(session: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[3]) == session:
                found.append(int(entry.name))
    return found


@CLUSTER_TIMEOUT
def test_a_node_killed_mid_run_leaves_infrastructure_errors_that_resume_runs_again(two_nodes, monkeypatch):
    """The second node (raylet, agents, actor) killed while its actor runs a simulation: that simulation is an
    infrastructure error naming it (not the agent's failure), the run finishes on the head, and `--resume` runs
    exactly the infrastructure errors again. Last in the module: the cluster has one node after it. The agent is
    an LLM agent whose fake provider answers after 1 s, so each simulation lasts seconds."""
    out = two_nodes.disk / "killed"
    with fake_openai(lambda body: Reply.text("Let me look into that.", delay_s=1.0)) as server:
        llm = ["--agent", "litellm:openai/fake-model", "--agent-arg", f"api_base={server.base_url}", "--agent-arg",
               "retry_backoff=0", "--max-steps", "8"]
        env = {**two_nodes.env, "OPENAI_API_KEY": "sk-test"}
        command = [sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks", str(HANDWRITTEN),
                   "--out", str(out), "--trials", "2", "--executor", "ray", "--ray-address", two_nodes.address,
                   "--concurrency", "2", *llm]
        run = subprocess.Popen([*command, "--workers", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        try:
            deadline = time.monotonic() + 400
            # once a simulation is written, each actor holds one (10 to run, 2 at a time, seconds each)
            while not (_actors_on(two_nodes.second) and (out / "trajectories.jsonl").exists()
                       and (out / "trajectories.jsonl").read_bytes().count(b"\n") >= 1):
                assert run.poll() is None, run.communicate()
                assert time.monotonic() < deadline, "the second node's actor never ran a simulation"
                time.sleep(0.2)
            _stop(two_nodes.second)
            stdout, stderr = run.communicate(timeout=400)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode in (0, 1), stderr  # finished: written and summed up, not an error
        first = {t.simulation_id: t for t in read_trajectories(out)}
        assert len(first) == 10, stderr
        lost = sorted(sim for sim, t in first.items() if t.termination.blame == "infrastructure")
        assert lost, "no simulation was in flight on the killed node"
        for sim in lost:
            assert first[sim].termination.detail.startswith(f"Ray actor ended unexpectedly while running {sim}")
        kept = {sim: t.canonical_json() for sim, t in first.items() if sim not in lost}
        resumed = subprocess.run([*command, "--workers", "1", "--resume"], env=env, capture_output=True, text=True,
                                 timeout=400)
    assert resumed.returncode == 0, resumed.stderr
    said = resumed.stdout + resumed.stderr  # the progress notes go to stderr, the summary to stdout
    assert f"resuming: running {len(lost)} again that ended in an agent program or infrastructure failure" in said, (
        said)
    assert f"({10 - len(lost)} finished before this resume)" in said, said
    after = {t.simulation_id: t for t in read_trajectories(out)}
    assert sorted(after) == sorted(first)
    assert not [sim for sim, t in after.items() if t.termination.blame == "infrastructure"]
    assert {sim: t.canonical_json() for sim, t in after.items() if sim not in lost} == kept  # not run again
