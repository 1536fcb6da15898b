"""`shiftbox run --executor local|processes|ray`: the same run gives byte-identical trajectories and metrics on each;
a Ray actor that dies fails only its in-flight simulations (retried under --retry-infra); a killed driver resumes.

The Ray tests share one local cluster (`ray.init(num_cpus=2)`, on 127.0.0.1), started once for the module and
stopped after it; they skip, saying so, when Ray (the optional extra shiftbox[ray]) is not installed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox import ExecutionOptions, RunPlanError, plan_run, run_evaluation
from shiftbox.cli import app
from shiftbox.cluster import ray_installed
from shiftbox.runs import metrics_document, score_run
from shiftbox.testing import Reply, fake_openai
from shiftbox_servers.kit import SnapshotError
from tests.client.harness import (
    HANDWRITTEN,
    REPO,
    alive,
    changed_snapshot,
    children,
    descendants,
    written_once,
)

GENERATED = REPO / "snapshots" / "banking" / "v1" / "tasks.json"
runner = CliRunner()




EXECUTION = {f.name for f in dataclasses.fields(ExecutionOptions)}


def run(out: Path, tasks: Path = HANDWRITTEN, **options) -> Path:
    """A banking run; the options `ExecutionOptions` holds go there, the rest to `plan_run`."""
    options = {"trials": 2, "concurrency": 4, **options}
    execution = ExecutionOptions(**{k: options.pop(k) for k in sorted(EXECUTION & options.keys())})
    run_evaluation(plan_run(tasks, out, domain="banking", options=execution, **options))
    return out




def test_the_three_executors_give_byte_identical_trajectories_and_metrics(tmp_path, ray_cluster):
    local = run(tmp_path / "local", executor="local")
    processes = run(tmp_path / "processes", executor="processes", workers=2)
    on_ray = run(tmp_path / "ray", executor="ray", workers=2)
    expected = written_once(local)
    assert len(expected) == 10
    for other in (processes, on_ray):
        assert written_once(other) == expected
        assert metrics_document(*score_run(other)) == metrics_document(*score_run(local))
        recorded = [json.loads((d / "run.json").read_text()) for d in (local, other)]
        assert recorded[1]["server"] == recorded[0]["server"] and recorded[1]["server"]["banking"]["version"]
        assert recorded[1]["user_simulator"] == recorded[0]["user_simulator"]


def test_an_actor_that_cannot_open_its_servers_fails_the_run_as_one_process_would(tmp_path, ray_cluster):
    changed = changed_snapshot(tmp_path)  # its manifest passes the plan; the servers refuse it
    errors = []
    for options in ({"executor": "local"}, {"executor": "ray", "workers": 2}):
        with pytest.raises(SnapshotError) as caught:
            run(tmp_path / options["executor"], snapshot=changed, **options)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


def actor_pids() -> list[int]:
    """This test session's simulation actors (Ray names an actor's process after its class): below this process,
    which started the cluster, so another session's Ray cluster on the machine is never counted."""
    found = []
    for pid in descendants(os.getpid()):
        if alive(pid):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::SimulationActor"):
                    found.append(pid)
            except OSError:
                continue
    return sorted(found)


@pytest.mark.skipif(not Path("/proc").exists(), reason="finds the actors' processes through /proc")
@pytest.mark.parametrize("retry_infra", [0, 1])
def test_a_killed_actor_fails_only_its_simulations_in_flight_retried_under_retry_infra(tmp_path, ray_cluster,
                                                                                       retry_infra):
    """Killed once 20 simulations are written and both actors run (each then has 2 in flight): with --retry-infra 1 the run
    equals a local one; without, what it had in flight is an infrastructure error naming it, the rest equal."""
    killed: list[int] = []
    earlier = set(actor_pids())  # an earlier run's actors may take a moment to go

    def kill_one_actor(trajectory) -> None:
        written = (tmp_path / "ray" / "trajectories.jsonl").read_bytes().count(b"\n")
        pids = [pid for pid in actor_pids() if pid not in earlier]
        if written >= 20 and not killed and len(pids) == 2:  # the second actor may still be starting (slow imports)
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    plan = plan_run(GENERATED, tmp_path / "ray", domain="banking",
                    options=ExecutionOptions(concurrency=4, executor="ray", workers=2, retry_infra=retry_infra),
                    task_ids=[t["id"] for t in json.loads(GENERATED.read_text())["tasks"]][:60])
    run_evaluation(plan, on_done=kill_one_actor)
    assert killed, "both actors never ran at once"
    reference = run(tmp_path / "local", GENERATED, trials=1, task_ids=plan.config.task_ids)
    expected, got = written_once(reference), written_once(tmp_path / "ray")
    assert len(expected) == 60 and got.keys() == expected.keys()
    lost = {sim for sim, line in got.items() if json.loads(line)["termination"]["blame"] == "infrastructure"}
    if retry_infra:
        assert not lost and got == expected
        return
    assert 1 <= len(lost) <= 2
    for sim in lost:
        trajectory = json.loads(got[sim])
        assert trajectory["termination"]["reason"] == "infrastructure_error" and not trajectory["messages"]
        assert trajectory["termination"]["detail"].startswith(f"Ray actor ended unexpectedly while running {sim}")
    assert {s: line for s, line in got.items() if s not in lost} == {s: line for s, line in expected.items()
                                                                       if s not in lost}




@pytest.mark.skipif(not Path("/proc").exists(), reason="finds the actor's process through /proc")
def test_an_actor_killed_during_an_empty_resume_is_a_named_error(tmp_path, ray_cluster):
    """Regression (issue 30): a resume with nothing left still has an actor open its servers (for run.json); killed
    then (here once its stdio server has started), the run ended in a raw RayActorError traceback. Now exit 2 with
    an error naming the lost actor and saying to run the command again."""
    out = tmp_path / "run"
    command = ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out), "--servers", "stdio",
               "--task-id", "hw_banking_001"]
    assert runner.invoke(app, command).exit_code == 0
    earlier, killed = set(actor_pids()), []

    def kill_the_actor_once_its_server_starts() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for pid in actor_pids():
                if pid not in earlier and children(pid):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_actor_once_its_server_starts)
    killer.start()
    try:
        resumed = runner.invoke(app, command + ["--resume", "--executor", "ray", "--workers", "1"])
    finally:
        killed.append(0)  # stops the killer if it never found the actor
        killer.join()
    assert killed[0], "the actor never started its server"
    assert resumed.exit_code == 2, (resumed.output, resumed.exception)
    output = " ".join(resumed.output.split())
    assert "error: the Ray actor ended unexpectedly while opening its servers" in output, output
    assert "--resume" in output and "Traceback" not in output


@pytest.mark.skipif(not Path("/proc").exists(), reason="follows the driver's processes through /proc")
def test_resume_after_killing_the_driver_loses_and_duplicates_nothing(tmp_path, ray_cluster):
    """The driver, with a local Ray cluster of its own, killed (-9) once 20 simulations are written; the run
    resumed on Ray gives exactly the local run's trajectories."""
    out = tmp_path / "run"
    command = ["run", "--domain", "banking", "--tasks", str(GENERATED), "--out", str(out), "--trials", "2",
               "--concurrency", "4", "--executor", "ray", "--workers", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "shiftbox.cli", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    path, deadline = out / "trajectories.jsonl", time.monotonic() + 240
    while time.monotonic() < deadline and not (path.exists() and path.read_bytes().count(b"\n") >= 20):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    cluster = children(proc.pid)
    proc.kill()
    proc.communicate()
    partial = written_once(out)
    assert 20 <= len(partial) < 300
    resumed = runner.invoke(app, command + ["--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming: {len(partial)} simulations already finished" in " ".join(resumed.output.split())
    reference = run(tmp_path / "local", GENERATED, executor="local")
    assert written_once(out) == written_once(reference)
    deadline = time.monotonic() + 60  # the killed driver's own cluster goes with it
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in cluster):
        time.sleep(0.2)
    assert not [pid for pid in cluster if Path(f"/proc/{pid}").exists()], "the killed driver's Ray cluster lives on"


def listening(pids: list[int]) -> set[tuple[str, int]]:
    """The (address, port) each of `pids` listens on over TCP (Linux: /proc/net/tcp{,6} matched to their fds)."""
    inodes: set[str] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    if (target := os.readlink(fd)).startswith("socket:["):
                        inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                raw, port = fields[1].split(":")
                if table == "tcp":
                    address = str(ipaddress.IPv4Address(int(raw, 16).to_bytes(4, "little")))
                else:
                    address = str(ipaddress.IPv6Address(b"".join(int(raw[i:i + 8], 16).to_bytes(4, "little")
                                                                 for i in range(0, 32, 8))))
                found.add((address, int(port, 16)))
    return found


def loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or (isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None
                              and ip.ipv4_mapped.is_loopback)


@pytest.mark.timeout(300)
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="follows the driver's processes and sockets through /proc")
def test_a_killed_ray_run_leaves_no_process_behind_and_its_cluster_listened_on_loopback_only(tmp_path):
    """Regression (issue 30, item 7): a run that started its own local cluster, killed (-9) once its actors
    run, left two of the cluster's agents alive for 60 s (they report the raylet's death to the GCS, which
    died with it, and wait); the cluster's servers listened on every interface, one agent on the machine's
    address. Now every process of the run is gone within 10 s, and all listened on the loopback only."""
    if not ray_installed():  # not importorskip: Ray must first be imported as shiftbox imports it (`import_ray`)
        pytest.skip("Ray is the optional extra shiftbox[ray]; `make env` installs it")
    out = tmp_path / "run"
    command = [sys.executable, "-m", "shiftbox.cli", "run", "--domain", "banking", "--tasks", str(GENERATED),
               "--out", str(out), "--concurrency", "2", "--executor", "ray", "--workers", "1"]
    with (tmp_path / "stderr").open("w") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    path, deadline = out / "trajectories.jsonl", time.monotonic() + 240
    try:
        while time.monotonic() < deadline and not (path.exists() and path.read_bytes().count(b"\n") >= 5):
            assert proc.poll() is None, (tmp_path / "stderr").read_text()
            time.sleep(0.05)
        processes = descendants(proc.pid)
        addresses = listening([proc.pid, *processes])
    finally:
        proc.kill()
        proc.wait()
    assert len(processes) >= 4 and addresses  # the GCS, the raylet, their agents, the actor
    exposed = {(a, port) for a, port in addresses if not loopback(a)}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(pid) for pid in processes):
        time.sleep(0.2)
    left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:60].rstrip(b"\0") for pid in processes if alive(pid)}
    for pid in left:  # not to leave them to the next tests
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not exposed and not left, f"listening beyond the loopback: {sorted(exposed)}; alive 10 s after: {left}"


@pytest.mark.timeout(300)
def test_a_ray_run_started_with_uv_run_starts_its_actors(tmp_path):
    """Regression: under `uv run`, Ray copied the "uv environment" to its workers (the working directory packed,
    each worker started by `uv run` in an unpacked copy with no environment), so the actors never started and
    the run waited forever. A run from `uv run --no-sync shiftbox run --executor ray` finishes."""
    if not ray_installed():  # not importorskip: Ray must first be imported as shiftbox imports it (`import_ray`)
        pytest.skip("Ray is the optional extra shiftbox[ray]; `make env` installs it")
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("no uv on PATH to start the run with (`make env` installs it with pip)")
    out = tmp_path / "run"
    command = [uv, "run", "--no-sync", "--project", str(REPO), "shiftbox", "run", "--domain", "banking", "--tasks",
               str(HANDWRITTEN), "--out", str(out), "--executor", "ray", "--workers", "1", "--concurrency", "2"]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # as a user's shell has it
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=240, env=environment, cwd=REPO)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the run did not finish in 240 s (its Ray actors never started?): {exc.stderr}")
    assert finished.returncode == 0, finished.stderr
    assert written_once(out) == written_once(run(tmp_path / "local", trials=1))


RAY_FIRST = """
import ray  # before shiftbox: Ray reads its environment variables now, without shiftbox's settings
from shiftbox.cluster import local_ray_cluster
with local_ray_cluster(1) as ray:
    print(ray.get(ray.remote(lambda: 6 * 7).remote(), timeout=40))
"""


@pytest.mark.timeout(120)
def test_a_local_cluster_started_after_ray_was_imported_starts_its_workers():
    """Regression: Ray reads `RAY_ENABLE_UV_RUN_RUNTIME_ENV` when it is first imported; a process that imported it
    before shiftbox set the variable (a test module's `pytest.importorskip("ray")`) copied its `uv run`
    environment to the workers of the cluster shiftbox started, which died at start (never registered), and the
    first call waited forever (a CI rehearsal hung). Now the cluster's workers start."""
    if not ray_installed():  # not importorskip: this process must not import Ray (the child does)
        pytest.skip("Ray is the optional extra shiftbox[ray]; `make env` installs it")
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("no uv on PATH to start the process with (Ray copies only a `uv run` driver's environment; "
                    "`make env` installs it with pip)")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # as a user's shell has it
    command = [uv, "run", "--no-sync", "python", "-c", RAY_FIRST]  # in the checkout, as `uv run pytest` runs
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=70, env=environment,
                                  cwd=REPO)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the cluster's first call did not finish in 70 s: {exc.stderr}")
    assert finished.returncode == 0 and finished.stdout.split() == ["42"], finished.stderr[-3000:]


HOLD_S = 0.2  # the fake provider's answer time: long enough for calls sent together to overlap there


@pytest.mark.parametrize("executor", ["local", "processes", "ray"])
def test_max_llm_concurrency_caps_the_calls_at_the_provider_across_all_workers(tmp_path, request, monkeypatch,
                                                                               executor):
    """An LLM agent on 4 simulations at once (2 workers where there are workers): with --max-llm-concurrency 1
    the fake provider never answers two requests at once; without it, it does (so the measure can see it)."""
    if executor == "ray":
        request.getfixturevalue("ray_cluster")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # set after the cluster started: the actors get it from the run
    arrivals: list[float] = []
    most = [0]

    def answer(body: dict) -> Reply:
        """At an arrival, the requests that arrived less than HOLD_S before are still being answered (the fake
        calls this under its lock, so arrivals are in order): this can undercount the calls in flight, never
        overcount them."""
        now = time.monotonic()
        arrivals.append(now)
        most[0] = max(most[0], sum(1 for t in arrivals if now - t < HOLD_S))
        return Reply.text("Let me look into that.", delay_s=HOLD_S)

    workers = {} if executor == "local" else {"workers": 2}
    for cap in (None, 1):
        most[0] = 0
        with fake_openai(answer) as server:
            run(tmp_path / f"{executor}-{cap}", trials=1, executor=executor, max_llm_concurrency=cap, max_steps=6,
                agent="litellm:openai/fake-model", agent_args={"api_base": server.base_url, "retry_backoff": "0"},
                task_ids=[t["id"] for t in json.loads(HANDWRITTEN.read_text())["tasks"]][:4], **workers)
            assert server.requests and not server.errors
        assert most[0] == (1 if cap else most[0]) and (cap or most[0] > 1), (cap, most[0])


def test_executor_options_that_do_not_fit_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    with pytest.raises(RunPlanError, match="--executor local runs every simulation in this process"):
        ExecutionOptions(executor="local", workers=2)
    with pytest.raises(RunPlanError, match="--max-llm-concurrency"):
        ExecutionOptions(max_llm_concurrency=0)
    with pytest.raises(RunPlanError, match="--ray-address is for --executor ray"):
        ExecutionOptions(executor="processes", ray_address="auto")
    assert ExecutionOptions(workers=2).executor == "processes"
    assert plan_run(HANDWRITTEN, tmp_path / "c", options=ExecutionOptions(workers=2)).options.executor == "processes"
    assert plan_run(HANDWRITTEN, tmp_path / "c").options.executor == "local"
    result = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                                 str(tmp_path / "d"), "--executor", "threads"])
    assert result.exit_code == 2 and "threads" in result.output
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    result = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                                 str(tmp_path / "e"), "--executor", "ray"])
    assert result.exit_code == 2, result.output
    assert "pip install 'shiftbox[ray]'" in " ".join(result.output.split())
    assert not any((tmp_path / name).exists() for name in "abcde")
