"""Ray, the optional extra `shiftbox[ray]`, imported and started the one way shiftbox uses it (the `ray`
executor, the Ray LLM gate, the tests and the benchmark).

Ray's workers must run this machine's interpreter and packages. Under `uv run`, Ray would otherwise copy the
driver's "uv environment" to its workers: it packs the working directory and starts each worker with `uv run`
inside an unpacked copy, where no environment is installed, so the workers never start and the run waits
forever. `import_ray` turns that off (`RAY_ENABLE_UV_RUN_RUNTIME_ENV=0`) unless it is set, even when ray was
imported before (Ray reads the variable when it is first imported), and turns off Ray's usage report (an offline
evaluation sends nothing).

A local cluster started by shiftbox (`local_ray_cluster`) is this machine's alone and ends with the process that
started it. Ray takes 127.0.0.1 as "this machine" and puts the machine's routable address in its place, its servers
listening on every interface; told that it runs no cluster of several machines (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`,
as on macOS) it keeps 127.0.0.1 and every server listens on the loopback only. Ray kills its GCS and raylet when
the driver dies, but their agents would wait a minute before they go: a watchdog (`_reaper`) kills every process of
the cluster the moment the driver is gone.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from . import _reaper
from ._extras import extra_installed, import_extra, install_command

__all__ = ["INSTALL_RAY", "LOCAL_CLUSTER_OPTIONS", "connect_ray", "import_ray", "local_ray_cluster", "ray_installed"]

INSTALL_RAY = install_command("ray")
LOCAL_CLUSTER_OPTIONS = {"include_dashboard": False, "log_to_driver": False, "_node_ip_address": "127.0.0.1"}
"""A local cluster started by shiftbox: no dashboard, workers' output not copied here, on 127.0.0.1."""


def ray_installed() -> bool:
    """Whether the extra is installed (without importing ray, which takes seconds)."""
    return extra_installed("ray")


def import_ray() -> ModuleType:
    """The ray module, imported with the settings above (raises ImportError naming `INSTALL_RAY` without it)."""
    os.environ.setdefault(_UV_RUN_RUNTIME_ENV, "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # read at each ray.init
    ray = import_extra("ray", "ray", "Ray")
    # Ray read the uv setting into a constant when it was first imported: when that was before this call (a
    # program's or a test's own `import ray`), without the default above, and its clusters' workers would never start
    constants = sys.modules["ray._private.ray_constants"]
    constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = constants.env_bool(_UV_RUN_RUNTIME_ENV, True)
    return ray


_UV_RUN_RUNTIME_ENV = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"


@contextlib.contextmanager
def local_ray_cluster(num_cpus: int) -> Iterator[ModuleType]:
    """A local Ray cluster with `num_cpus` CPUs for the block (this process's `ray.init`), on the loopback only,
    shut down after; none of its processes outlives this one, even killed."""
    ray = import_ray()
    before = set(_descendants(os.getpid()))
    with _single_machine(ray):
        ray.init(num_cpus=num_cpus, **LOCAL_CLUSTER_OPTIONS)
    reaper = _start_reaper([pid for pid in _descendants(os.getpid()) if pid not in before])
    try:
        yield ray
    finally:
        ray.shutdown()
        if reaper is not None:  # it kills what the shutdown left (an agent still on its way out)
            reaper.communicate(timeout=30)


def connect_ray(address: str) -> ModuleType:
    """This process connected to the running cluster at `address` (`ray.init`); a cluster on the loopback
    (`127.0.0.1:PORT`, `localhost:PORT`) is reached there, where Ray would put this machine's routable address."""
    ray = import_ray()
    host = address.removeprefix("ray://").rpartition(":")[0] or address
    loopback = host in ("127.0.0.1", "localhost", "::1", "[::1]")
    with _single_machine(ray) if loopback else contextlib.nullcontext():
        ray.init(address=address, log_to_driver=False)
    return ray


_SINGLE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def _single_machine(ray: ModuleType) -> Iterator[None]:
    """Ray told it runs no cluster of several machines while it starts one: in the environment its processes
    inherit, and in its constant, which this process read when it imported Ray."""
    constants = sys.modules["ray._private.ray_constants"]
    saved = os.environ.get(_SINGLE_MACHINE), constants.ENABLE_RAY_CLUSTER
    os.environ[_SINGLE_MACHINE], constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = saved[1]
        if saved[0] is None:
            os.environ.pop(_SINGLE_MACHINE, None)
        else:
            os.environ[_SINGLE_MACHINE] = saved[0]


def _start_reaper(pids: list[int]) -> subprocess.Popen | None:
    """A watchdog that kills `pids` when this process closes its stdin or dies (None without /proc to read)."""
    if not Path("/proc/self/stat").exists():
        return None
    lines = [line for pid in pids if (line := _reaper.watched_line(pid)) is not None]
    # its own session: a Ctrl-C at the terminal reaches this process, not the watchdog
    reaper = subprocess.Popen([sys.executable, "-I", _reaper.__file__], stdin=subprocess.PIPE, text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    assert reaper.stdin is not None
    reaper.stdin.write("".join(lines))
    reaper.stdin.flush()
    return reaper


def _descendants(pid: int) -> list[int]:
    """The processes below `pid` (Linux: read from /proc; none elsewhere)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            parents.setdefault(int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(
                int(entry.name))
    found, todo = [], [pid]
    while todo:
        found += (children := parents.get(todo.pop(), []))
        todo += children
    return sorted(found)
