"""An agent from the official a2a-samples repository, unmodified, evaluated by `shiftbox run --agent a2a:URL`.

docs/a2a.md's two `shell` blocks run as written: the first clones a2a-samples (here: a copy of helloworld exported
at test time from a local clone, SHIFTBOX_A2A_SAMPLES, default the read-only mirror of this machine) and starts
helloworld with shiftbox's Python, the second runs two banking tasks against it with the plain-text handover.
helloworld serves on 127.0.0.1:9999, fixed in its code and its agent card; so that port is its own, both blocks run
in a private network namespace (`unshare -rn`), or, where the kernel refuses one, on this machine's loopback when
9999 is free. helloworld echoes the message and calls no tool: the run must work end to end and score it 0.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import shiftbox
from shiftbox.tasks import load_task_file
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN
from tests.client.walkthrough import code_blocks, scratch_checkout

pytest.importorskip("a2a.server")

SAMPLES = Path(os.environ.get("SHIFTBOX_A2A_SAMPLES", "/work/.mirror/a2aproject+a2a-samples/repo"))
"""A git clone (bare or not) of https://github.com/a2aproject/a2a-samples."""
SAMPLES_URL = "https://github.com/a2aproject/a2a-samples"
HELLOWORLD = "samples/python/agents/helloworld"
PORT = 9999  # helloworld's, in its __main__.py and its agent card
PRIVATE_NET = ["unshare", "--map-root-user", "--net"]


def export_sample(path: str, dest: Path) -> Path:
    """`path` of the a2a-samples clone's HEAD, as its files (no git history), under dest/path."""
    if not (SAMPLES.exists() and shutil.which("git")):
        pytest.skip(f"no clone of a2a-samples at {SAMPLES} (or no git): clone {SAMPLES_URL} and point "
                    f"SHIFTBOX_A2A_SAMPLES at it to run an a2a-samples agent under shiftbox")
    archive = subprocess.run(["git", "-C", str(SAMPLES), "archive", "--format=tar", f"HEAD:{path}"],
                             capture_output=True, timeout=60)
    if archive.returncode != 0:
        pytest.skip(f"the a2a-samples clone at {SAMPLES} has no {path}: {archive.stderr.decode()[-500:]}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest / path, filter="data")
    return dest / path


def require_its_a2a_sdk(sample: Path) -> None:
    """Skip unless the a2a-sdk installed here is of the major version the sample is written for (the 1.x server API
    is not 0.3's); helloworld pins an exact 1.x release and runs on any."""
    from importlib.metadata import version

    [pin] = [Requirement(line) for line in (sample / "requirements.txt").read_text().splitlines()
             if line.strip().startswith("a2a-sdk")]
    wanted = Version(next(iter(pin.specifier)).version)
    have = Version(version("a2a-sdk"))
    if wanted.major != have.major:
        pytest.skip(f"{sample.name} is written for {pin} and shiftbox's environment has a2a-sdk {have}: another "
                    f"major version, whose server API differs, so it cannot run unmodified here")


def isolation() -> tuple[list[str], str]:
    """How to give the blocks a loopback of their own: a private network namespace (its loopback brought up first),
    else this machine's when the port is free; skip when neither."""
    if shutil.which("unshare") and shutil.which("ip"):
        tried = subprocess.run([*PRIVATE_NET, "true"], capture_output=True, timeout=30)
        if tried.returncode == 0:
            return PRIVATE_NET, "ip link set lo up\n"
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", PORT))
        except OSError:
            pytest.skip(f"helloworld serves on 127.0.0.1:{PORT} (fixed in its code), which is taken here, and no "
                        f"private network namespace can be made (unshare --map-root-user --net) to give it its own")
    return [], ""


def beside_the_agent(serve: str, run: str, cwd: Path, env: dict[str, str],
                     scratch: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """The block `run` once the block `serve` answers on PORT, both on a loopback of their own (`isolation`); the
    agent is stopped afterwards however the run ends. Returns the run's outcome and the agent's output."""
    prefix, setup = isolation()
    log, pid = scratch / "agent.log", scratch / "agent.pid"
    # the agent's block in the background, as a process group of its own (set -m) whose id is written down
    script = (f"{setup}set -m\n( {serve.strip()} ) > {log} 2>&1 &\necho $! > {pid}\n"
              f"for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/{PORT}) 2>/dev/null && break\n"
              f"  kill -0 $! 2>/dev/null || {{ echo 'the agent block exited' >&2; exit 3; }}; sleep 0.2; done\n"
              f"set -ex\n{run}")
    proc = subprocess.Popen([*prefix, "bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=500)
    finally:
        proc.kill()
        if pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid.read_text()), signal.SIGTERM)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), log.read_text()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a2a_samples_helloworld_runs_unmodified_and_scores_what_it_does(tmp_path):
    require_its_a2a_sdk(export_sample(HELLOWORLD, tmp_path / "export"))
    checkout, env = scratch_checkout(tmp_path, clones={SAMPLES_URL: tmp_path / "export"})
    serve, run = code_blocks("a2a.md", "shell")
    done, log = beside_the_agent(serve, run, checkout, env, tmp_path)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\nagent:\n{log[-3000:]}"
    assert f"Uvicorn running on http://127.0.0.1:{PORT}" in log  # it is the sample that answered, where it says

    out = checkout / "runs" / "helloworld"
    trajectories = sorted(read_trajectories(out), key=lambda t: t.task_id)
    assert [t.task_id for t in trajectories] == ["hw_banking_001", "hw_banking_002"]  # --limit 2 of the file
    episodes = []
    for t in trajectories:
        assert t.agent == f"a2a:http://127.0.0.1:{PORT}" and t.termination.reason == "user_stop"
        replies = [m.content for m in t.messages if m.role == "assistant"]
        users = [m.content for m in t.messages if m.role == "user"]
        assert len(replies) == len(users) - 1  # one reply per customer message but the last (###STOP###)
        # the protocol end to end: its working status, its artifact echoing what it was sent (the text handover:
        # the tools' URL, the policy in the first message only, the customer's words), its completed status
        for k, reply in enumerate(replies):
            assert reply.startswith("Processing request...\nHello, World! I have received your request (")
            assert reply.endswith(f"\n\nCustomer: {users[k]})\nRequest is completed!")
            assert ("\nPolicy:\n<policy>\n" in reply) == (k == 0)
        urls = {u for r in replies for u in re.findall(r"MCP tools: (http://127\.0\.0\.1:\d+/episodes/[^/]+/mcp)\n", r)}
        assert len(urls) == 1  # every message says where this simulation's tools are
        episodes.append(urls.pop())
        assert t.tool_calls == []
    assert episodes[0] != episodes[1]  # each simulation its own episode

    metrics, sims = shiftbox.score_run(out)
    # scored as the agent's failure, not the infrastructure's: both simulations scored, none excluded. Worked by hand
    # from the two tasks: no call, so each action set scores 0; the facts to communicate (tx_000422, stmt_00018) are
    # never said (the customer never says them, so the echo does not either); the nl assertions are not judged
    # without a judge, and TSR renormalizes over the two measured channels: (0.25 * 0 + 0.45 * 0) / 0.70 = 0.
    tasks = {task.id: task for task in load_task_file(HANDWRITTEN).tasks}
    for t in trajectories:
        said = " ".join(m.content or "" for m in t.messages if m.role == "assistant")
        assert not any(fact in said for fact in tasks[t.task_id].evaluation_criteria.communicate_info)
    assert (metrics.simulations, metrics.scored_simulations, metrics.excluded) == (2, 2, {})
    assert all(s.tsr.action == 0.0 and s.tsr.communicate_info == 0.0 and s.tsr.score == 0.0 for s in sims)
    assert metrics.tsr.mean == 0.0 and metrics.tue.tue is None  # no call: no tool-use efficiency to measure
    # and an echo acknowledges no goal shift: the customer's words quoted back are not the agent's (docs/metrics.md)
    shifts = [r for s in sims for r in s.gsrt]
    assert shifts and all(r.ack is None and not r.recovered for r in shifts)
