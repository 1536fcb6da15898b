"""A watchdog that kills the processes it is told of once the process that started it is gone, run as a script of
its own (`python -I _reaper.py`, standard library only, so it starts in milliseconds).

It reads `PID START_TIME` lines on stdin, a pipe only its starter writes to, until the end of that pipe: the starter
closed it, or died (even by `kill -9`). Then it kills each process still alive with the same start time (a pid
taken since by another process is left alone). `cluster.local_ray_cluster` starts one for the Ray processes it
starts: a killed driver's cluster does not outlive it (Ray's agents would otherwise wait a minute to report the
death of their raylet to a GCS that died with it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path


def start_time(pid: int) -> str | None:
    """When the process started (clock ticks since boot: /proc/PID/stat's 22nd field), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def watched_line(pid: int) -> str | None:
    """The line that tells a reaper to kill `pid` (None when it is already gone)."""
    started = start_time(pid)
    return None if started is None else f"{pid} {started}\n"


def main() -> None:
    watched = [line.split() for line in sys.stdin]  # blocks until the pipe's end: the starter closed it or died
    for pid, started in (fields for fields in watched if len(fields) == 2):
        if start_time(int(pid)) == started:
            with contextlib.suppress(OSError):  # gone in the meantime
                os.kill(int(pid), signal.SIGKILL)


if __name__ == "__main__":
    main()
