"""Issue 34: Ray actors kept for the next runs (`shiftbox run --ray-keep-actors SECONDS`). A second run on the same
cluster gets the first run's actors (the same processes), gives the same trajectories, and finds none of another
version's; a run's environment variables and working directory leave the actors with it; a driver killed mid-run
lets its lease lapse and the actors serve the next run; idle actors exit; `shiftbox ray-actors stop` ends them.

The cluster tests share one local cluster of 2 CPUs (`ray_cluster`, started by this process and stopped after the
module, with every detached actor on it); each actor reserves 0.5 CPU, so the runs here never wait for room. They
run in file order: the actors the first run keeps serve the later tests, and the stop command comes last.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox import ExecutionOptions, RunPlanError, RunWorkerError, plan_run, run_evaluation
from shiftbox.cli import app
from shiftbox.cluster import ray_installed
from shiftbox.runs import _ray
from shiftbox.testing import Reply, fake_openai
from tests.client.harness import HANDWRITTEN, alive, written_once

runner = CliRunner()
KEEP = {"executor": "ray", "workers": 2, "worker_cpus": 0.5, "ray_keep_actors": 600}


def run(out: Path, **options) -> Path:
    """The handwritten banking tasks, 2 trials, with these execution options."""
    run_evaluation(plan_run(HANDWRITTEN, out, domain="banking", trials=2,
                            options=ExecutionOptions(concurrency=4, **options)))
    return out


def kept(ray) -> dict[str, tuple[int, int, str | None]]:
    """Each kept actor on the cluster: its process id, the runs it served, the run holding it (None: idle)."""
    return {name: ray.get(ray.get_actor(name, namespace=_ray.KEPT_NAMESPACE).__ray_call__.remote(
        lambda actor: (os.getpid(), actor.runs, actor._holder))) for name in _ray.kept_actor_names(ray)}


def surroundings(ray, name: str) -> tuple[str | None, str]:
    """The kept actor's SHIFTBOX_KEPT_SECRET variable and working directory."""
    return ray.get(ray.get_actor(name, namespace=_ray.KEPT_NAMESPACE).__ray_call__.remote(
        lambda actor: (os.environ.get("SHIFTBOX_KEPT_SECRET"), os.getcwd())))


def wait_until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_keeping_actors_needs_ray_and_a_cluster_that_outlives_the_run(monkeypatch):
    if not ray_installed():
        pytest.skip("Ray is not installed (the optional extra shiftbox[ray]; `make env` installs it)")
    with pytest.raises(RunPlanError, match="--ray-keep-actors is for --executor ray"):
        ExecutionOptions(executor="processes", ray_keep_actors=60)
    with pytest.raises(RunPlanError, match=r"--ray-keep-actors \(ray_keep_actors\) 0: give a whole number, at least 1"):
        ExecutionOptions(executor="ray", ray_keep_actors=0, ray_address="auto")
    monkeypatch.delitem(sys.modules, "ray", raising=False)  # no Ray joined in this process
    with pytest.raises(RunPlanError, match="--ray-keep-actors needs --ray-address"):
        ExecutionOptions(executor="ray", ray_keep_actors=60)
    assert ExecutionOptions(executor="ray", ray_keep_actors=60, ray_address="auto").ray_keep_actors == 60
    assert ExecutionOptions(executor="ray").ray_keep_actors is None  # by default each run ends its actors


def test_a_kept_actors_name_says_version_code_and_resources():
    assert _ray.kept_name("1.2.0", "ab" * 32, 0.5, None, 3) == f"shiftbox-1.2.0-{'ab' * 8}-cpu0.5-mem0-3"
    assert _ray.kept_name("1.2.0", "ab" * 32, 1.0, 2**30, 0) == f"shiftbox-1.2.0-{'ab' * 8}-cpu1-mem{2**30}-0"


@pytest.mark.timeout(600)
def test_a_second_run_on_the_cluster_reuses_the_first_runs_actors(tmp_path, ray_cluster):
    first = run(tmp_path / "first", **KEEP)
    after_first = kept(ray_cluster)
    assert len(after_first) == 2, after_first
    assert all(runs == 1 and holder is None for _, runs, holder in after_first.values())  # idle, kept
    second = run(tmp_path / "second", **KEEP)
    after_second = kept(ray_cluster)
    assert sorted(after_second) == sorted(after_first)
    assert {name: pid for name, (pid, _, _) in after_second.items()} == {
        name: pid for name, (pid, _, _) in after_first.items()}  # the same processes
    assert all(runs == 2 and holder is None for _, runs, holder in after_second.values())
    local = written_once(run(tmp_path / "local", executor="local"))
    assert len(local) == 10
    assert written_once(first) == local and written_once(second) == local


@pytest.mark.timeout(600)
def test_a_runs_variables_and_directory_leave_the_kept_actors_with_it(tmp_path, ray_cluster, monkeypatch):
    names = _ray.kept_actor_names(ray_cluster)
    before = {name: surroundings(ray_cluster, name) for name in names}
    assert all(secret is None for secret, _ in before.values())
    monkeypatch.setenv("SHIFTBOX_KEPT_SECRET", "sk-this-run-only")  # the cluster started without it
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    run(tmp_path / "run", **KEEP)
    assert all(runs == 3 for _, runs, _ in kept(ray_cluster).values())  # they served it
    assert {name: surroundings(ray_cluster, name) for name in names} == before


@pytest.mark.timeout(600)
def test_another_version_gets_actors_of_its_own_which_exit_when_idle(tmp_path, ray_cluster, monkeypatch):
    ours = kept(ray_cluster)
    monkeypatch.setattr(_ray, "distribution_version", lambda name: "0.0.0-other")
    out = run(tmp_path / "other", **{**KEEP, "ray_keep_actors": 3})
    assert len(written_once(out)) == 10
    now = kept(ray_cluster)
    theirs = {name: state for name, state in now.items() if name not in ours}
    assert len(theirs) == 2 and all(name.startswith("shiftbox-0.0.0-other-") for name in theirs), now
    assert {pid for pid, _, _ in theirs.values()}.isdisjoint(pid for pid, _, _ in ours.values())
    assert {name: now[name] for name in ours} == ours  # not used by the other version's run
    wait_until(lambda: sorted(_ray.kept_actor_names(ray_cluster)) == sorted(ours), 60,
               "the other version's kept actors did not exit after 3 s idle")
    wait_until(lambda: not any(alive(pid) for pid, _, _ in theirs.values()), 30, "their processes live on")


@pytest.mark.timeout(600)
def test_a_killed_drivers_lease_lapses_restoring_the_actors_for_the_next_run(tmp_path, ray_cluster):
    """The driver (a `shiftbox run` process with a 3 s lease, its LLM agent's replies 3 s slow) holds the kept
    actors: a run started meanwhile gets kept actors of its own beside them, and leaves the held ones alone. The
    driver killed (-9), its lease lapses: its variable and directory leave the actors, and the next run gets them."""
    ours = kept(ray_cluster)
    before = {name: surroundings(ray_cluster, name) for name in ours}
    out, cwd = tmp_path / "killed", tmp_path / "cwd"
    cwd.mkdir()
    with fake_openai(lambda body: Reply.text("Let me look into that.", delay_s=3.0)) as server:
        env = {**os.environ, "SHIFTBOX_KEPT_SECRET": "sk-killed-run", "OPENAI_API_KEY": "sk-test",
               "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # the cluster is on the loopback only
        driver = subprocess.Popen(
            [sys.executable, "-c", "import sys; import shiftbox.runs._ray as r; r.LEASE_S = 3.0; "
             "from shiftbox.cli import app; sys.argv[0] = 'shiftbox'; app()",
             "run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out), "--trials", "2",
             "--concurrency", "4", "--executor", "ray", "--workers", "2", "--worker-cpus", "0.5",
             "--ray-keep-actors", "600", "--ray-address", ray_cluster.get_runtime_context().gcs_address,
             "--agent", "litellm:openai/fake-model", "--agent-arg", f"api_base={server.base_url}",
             "--agent-arg", "retry_backoff=0", "--max-steps", "8"],
            env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            def running() -> bool:
                assert driver.poll() is None, driver.communicate()
                return all(holder is not None for _, _, holder in kept(ray_cluster).values())
            wait_until(running, 300, "the driver never leased the kept actors")
            assert {name: surroundings(ray_cluster, name) for name in ours} == dict.fromkeys(
                ours, ("sk-killed-run", str(cwd)))  # the run's, while it holds them
            held = kept(ray_cluster)
            beside = run(tmp_path / "beside", **KEEP)  # one run at a time per actor
            assert len(written_once(beside)) == 10
            now = kept(ray_cluster)
            assert {name: now[name] for name in ours} == held, now  # still the driver's, untouched
            assert sorted(set(now) - set(ours)) == sorted(name[:-1] + str(int(name[-1]) + 2) for name in ours)
            assert driver.poll() is None, "the driver finished before it was killed"
            driver.kill()
            driver.communicate()
        finally:
            if driver.poll() is None:
                driver.kill()
    wait_until(lambda: all(holder is None for _, _, holder in kept(ray_cluster).values()), 30,
               "the killed driver's lease did not lapse")
    assert {name: surroundings(ray_cluster, name) for name in ours} == before
    assert len(written_once(run(tmp_path / "next", **KEEP))) == 10
    after = kept(ray_cluster)
    assert {name: after[name][0] for name in ours} == {name: pid for name, (pid, _, _) in ours.items()}
    assert all(after[name][1] == runs + 2 for name, (_, runs, _) in ours.items())  # the killed run's and the next


@pytest.mark.timeout(300)
def test_a_kept_actor_refuses_a_driver_with_other_code(ray_cluster):
    name = _ray.kept_actor_names(ray_cluster)[0]
    actor = ray_cluster.get_actor(name, namespace=_ray.KEPT_NAMESPACE)
    with pytest.raises(Exception, match="install the same shiftbox on every node") as refused:
        ray_cluster.get(actor.lease.remote("some-run", "0" * 64, None, None, 30.0, 600))
    assert isinstance(refused.value, RunWorkerError)
    with pytest.raises(Exception, match="lease for this run lapsed") as lost:
        ray_cluster.get(actor.simulate.remote(0, 0, run="some-run"))  # it holds no lease for that run
    assert isinstance(lost.value, _ray.LeaseLost)


@pytest.mark.timeout(300)
def test_ray_actors_stop_ends_every_kept_actor(ray_cluster):
    ours = kept(ray_cluster)
    assert ours
    stopped = runner.invoke(app, ["ray-actors", "stop"])  # this process has joined the cluster: that one
    assert stopped.exit_code == 0, stopped.output
    assert stopped.output.split("\n")[0] == f"stopped {len(ours)} kept Ray actors"
    assert sorted(line.strip() for line in stopped.output.split("\n")[1:] if line.strip()) == sorted(ours)
    wait_until(lambda: not _ray.kept_actor_names(ray_cluster), 30, "kept actors still named on the cluster")
    wait_until(lambda: not any(alive(pid) for pid, _, _ in ours.values()), 30, "their processes live on")
    again = runner.invoke(app, ["ray-actors", "stop"])
    assert again.exit_code == 0 and again.output.strip() == "stopped 0 kept Ray actors", again.output
