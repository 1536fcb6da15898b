"""The seed-7 task sets the generator tests check, generated once per test session per domain."""

from __future__ import annotations

import functools
from pathlib import Path

from shiftbox.generation import generate_tasks
from shiftbox.tasks import TaskFile
from shiftbox_servers.kit import task_domains
from tests.client.harness import REPO

DOMAINS = task_domains()
N = 150


def snapshot_dir(domain: str) -> Path:
    return REPO / "snapshots" / domain / "v1"


@functools.cache
def seed7(domain: str) -> TaskFile:
    return generate_tasks(domain, snapshot_dir(domain), n=N, seed=7)
