"""bench/workers.py's CPU accounting: the ceiling arithmetic from measured CPU, and the CPU of processes the run
leaves behind (its fork server and the workers it reaped) counted, not lost. Figures are never asserted: they are
measured by the bench."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO

BENCH = REPO / "bench"


@pytest.fixture
def workers_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import workers

    return workers


def test_the_ceilings_are_one_process_cpu_over_the_two_workers_cpu_spread_on_the_cores(workers_bench, monkeypatch):
    monkeypatch.setattr(workers_bench.os, "cpu_count", lambda: 2)
    rows = [{"workers": 1, "run_cpu_s": 8.0, "fake_server_cpu_s": 3.0},
            {"workers": 1, "run_cpu_s": 9.0, "fake_server_cpu_s": 3.0},
            {"workers": 1, "run_cpu_s": 10.0, "fake_server_cpu_s": 3.0},
            {"workers": 2, "run_cpu_s": 11.0, "fake_server_cpu_s": 4.0},
            {"workers": 2, "run_cpu_s": 12.0, "fake_server_cpu_s": 5.0},
            {"workers": 2, "run_cpu_s": 13.0, "fake_server_cpu_s": 6.0}]
    # medians: one process 9.0 s; two workers 12.0 s, the fake server 5.0 s beside them; two cores
    assert workers_bench.ceilings(rows) == {"workers_2_ceiling": round(9.0 / ((12.0 + 5.0) / 2), 2),  # 1.06
                                            "workers_2_ceiling_model_elsewhere": round(9.0 / (12.0 / 2), 2)}  # 1.5


@pytest.mark.skipif(not Path("/proc/self/task").exists() or sys.platform != "linux", reason="Linux prctl and /proc")
def test_a_grandchild_left_behind_is_reaped_with_its_cpu_time(tmp_path):
    """As a run leaves its fork server to end on its own: the child exits at once, its child burns CPU after."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(f"""
        import os, subprocess, sys, time
        sys.path.insert(0, {str(BENCH)!r})
        import workers
        assert workers.become_subreaper()
        burner = "import time\\nend = time.process_time() + 0.4\\nwhile time.process_time() < end: pass"
        child = subprocess.Popen([sys.executable, "-c",
                                  "import subprocess, sys; subprocess.Popen([sys.executable, '-c', sys.argv[1]])",
                                  burner])
        _, _, usage = os.wait4(child.pid, 0)
        print(usage.ru_utime + usage.ru_stime < 0.4, workers.orphans_cpu_s(keep=-1) >= 0.4)
    """))
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]  # not in the child's own figure; counted once reaped here
