"""Ray, the optional extra `shiftbox[ray]`, imported and started the one way shiftbox uses it (the `ray`
executor, the Ray LLM gate, the tests and the benchmark).

Ray's workers must run this machine's interpreter and packages. Under `uv run`, Ray would otherwise copy the
driver's "uv environment" to its workers: it packs the working directory and starts each worker with `uv run`
inside an unpacked copy, where no environment is installed, so the workers never start and the run waits
forever. `import_ray` turns that off (`RAY_ENABLE_UV_RUN_RUNTIME_ENV=0`, read when ray is first imported)
unless it is set, and turns off Ray's usage report (an offline evaluation sends nothing).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

from ._extras import extra_installed, import_extra, install_command

__all__ = ["INSTALL_RAY", "LOCAL_CLUSTER_OPTIONS", "import_ray", "local_ray_cluster", "ray_installed"]

INSTALL_RAY = install_command("ray")
LOCAL_CLUSTER_OPTIONS = {"include_dashboard": False, "log_to_driver": False, "_node_ip_address": "127.0.0.1"}
"""A local cluster started by shiftbox: no dashboard, workers' output not copied here, on 127.0.0.1."""


def ray_installed() -> bool:
    """Whether the extra is installed (without importing ray, which takes seconds)."""
    return extra_installed("ray")


def import_ray() -> ModuleType:
    """The ray module, imported with the settings above (raises ImportError naming `INSTALL_RAY` without it)."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return import_extra("ray", "ray", "Ray")


@contextlib.contextmanager
def local_ray_cluster(num_cpus: int) -> Iterator[ModuleType]:
    """A local Ray cluster with `num_cpus` CPUs for the block (this process's `ray.init`), shut down after."""
    ray = import_ray()
    ray.init(num_cpus=num_cpus, **LOCAL_CLUSTER_OPTIONS)
    try:
        yield ray
    finally:
        ray.shutdown()
