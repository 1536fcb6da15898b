"""Container tests need a Docker engine and the images `make images` builds; without them they skip."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from shiftbox.world import DockerError, Image, docker_command, image_ref, inspect_image
from shiftbox_servers.kit import task_domains
from tests.conftest import REPO

DOMAINS = task_domains()
ENABLE = "run `make images` with a Docker engine running (.ci/run does both in CI); see docs/containers.md"


def locked_version(package: str = "shiftbox-servers") -> str:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == package)


def build_cli() -> str:
    """The client for `docker build`: Debian's docker.io 20.10 speaks BuildKit; a newer one without buildx does not."""
    return os.environ.get("DOCKER") or ("/usr/bin/docker" if Path("/usr/bin/docker").exists() else docker_command())


def docker_build(context: Path, tag: str) -> None:
    """An offline BuildKit build (`--network none`) of `context`, failing the test with the build's output."""
    proc = subprocess.run([build_cli(), "build", "--network", "none", "-q", "-t", tag, str(context)],
                          capture_output=True, text=True, timeout=300, env=os.environ | {"DOCKER_BUILDKIT": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="session")
def docker() -> str:
    try:
        cmd = docker_command()
    except DockerError:
        pytest.skip(f"no docker CLI on PATH: {ENABLE}")
    proc = subprocess.run([cmd, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"no Docker engine reachable: {ENABLE}")
    return cmd


@pytest.fixture(scope="session")
def images(docker) -> dict[str, Image]:
    found = {}
    for domain in DOMAINS:
        try:
            found[domain] = inspect_image(docker, image_ref(domain))
        except DockerError:
            pytest.skip(f"image {image_ref(domain)} is not built: {ENABLE}")
    return found


@pytest.fixture
def throwaway_images(docker):
    """Tags of images a test builds; removed afterwards."""
    tags: list[str] = []
    yield tags
    if tags:
        subprocess.run([docker, "rmi", "-f", *tags], capture_output=True, timeout=120)
