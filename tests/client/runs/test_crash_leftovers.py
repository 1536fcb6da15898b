"""What a crash (kill -9) of `shiftbox run` or `shiftbox serve` leaves behind: no live children, no lost or
reused sessions (issue 15 item 11)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from shiftbox.runs import score_run
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, alive, children
from tests.client.serve.test_serve import PHONE, SHIFTBOX, raw_http_session, serve_http, stop

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")






@linux_only
@pytest.mark.parametrize("servers", ["http", "stdio"])
def test_kill_9_of_a_run_takes_its_server_child_with_it(tmp_path, servers):
    cmd = [*SHIFTBOX, "run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--servers", servers,
           "--trials", "500", "--concurrency", "1", "--out", str(tmp_path / "r")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = tmp_path / "r" / "trajectories.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and results.read_bytes().count(b"\n") >= 2):
        time.sleep(0.05)
    found = [c for c in children(proc.pid) if b"shiftbox_servers" in Path(f"/proc/{c}/cmdline").read_bytes()]
    assert found, "the run has no server child"
    proc.send_signal(signal.SIGKILL)  # the run alone, as a crash would: not its process group
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(c) for c in found):
        time.sleep(0.05)
    leaked = [c for c in found if alive(c)]
    for c in leaked:
        os.kill(c, signal.SIGKILL)
    assert not leaked, f"the {servers} server outlived the run that started it"


def test_kill_9_of_serve_then_resume_rebuilds_cut_short_sessions_and_never_reuses_ids(tmp_path):
    out = tmp_path / "desk"
    proc, base = serve_http(out)
    raw_http_session(f"{base}/episodes/alice/mcp")
    raw_http_session(f"{base}/episodes/bob/mcp")
    proc.kill()  # kill -9: alice's and bob's sessions were still open
    proc.wait()
    assert read_trajectories(out) == []
    proc, base = serve_http(out, "--resume")
    try:
        rebuilt = {t.source_data["gateway_episode"]: t for t in read_trajectories(out)}
        assert set(rebuilt) == {"alice", "bob"}, "the sessions cut short were not rebuilt at start"
        for t in rebuilt.values():
            assert [c.name for c in t.tool_calls] == ["get_customer_by_phone"] and not t.tool_calls[0].is_error
            assert [m.role for m in t.messages] == ["assistant", "tool"]
            assert t.termination.reason == "session_closed" and "calls.jsonl" in t.termination.detail
        raw_http_session(f"{base}/episodes/alice/mcp")  # a new session, though the name is the same
    finally:
        stop(proc)
    ids = [t.simulation_id for t in read_trajectories(out)]
    assert len(ids) == len(set(ids)) == 3, ids
    assert sorted(ids) == ["open-session#0", "open-session#1", "open-session#2"]
    # rebuilt again by nobody: a third start (no flag needed) finds every session already written
    proc, _ = serve_http(out)
    stop(proc)
    assert len(read_trajectories(out)) == 3
    run, _ = score_run(out)  # a rebuilt session (final state unknown) is scored on its calls
    assert run.tue.calls == 3


def test_every_recorded_call_is_fsynced(tmp_path, monkeypatch):
    from shiftbox.serve import CALLS_FILE, GatewaySessions, open_session_task
    from shiftbox.world import open_world

    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    async def main() -> None:
        async with open_world("banking") as world:
            sessions = GatewaySessions(world, open_session_task("banking"), tmp_path)
            synced.clear()
            for _ in range(3):
                await sessions.route("e1")("get_customer_by_phone", dict(PHONE))
            assert synced.count(CALLS_FILE) >= 3, synced
            await sessions.end_all()

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/fd")
    anyio.run(main)
    assert len((tmp_path / CALLS_FILE).read_text().splitlines()) >= 3
    assert all("record" in json.loads(line) or "opened" in json.loads(line)
               for line in (tmp_path / CALLS_FILE).read_text().splitlines())
