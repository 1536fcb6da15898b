"""`--servers docker`: the domain server as a container over stdio, held to the run's pins.

The image (`shiftbox-<domain>:<shiftbox-servers version>`, or `$SHIFTBOX_IMAGE_<DOMAIN>`) is run by
its id with no network, a read-only root filesystem and no capabilities. Before the run, the server
must report the installed shiftbox-servers version and the sha256 of the snapshot the run uses;
anything else is refused, naming what was expected, what was found and how to fix it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from shiftbox_servers.kit import SERVER_VERSION, SnapshotManifest

from ..errors import DockerError, single_error

DOCKER_ENV = "SHIFTBOX_DOCKER"
RUN_FLAGS = ("--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges")
FIX_IMAGES = "build the images with `make images` (docs/containers.md)"
FIX_ENGINE = ("install Docker and start its engine (Debian: `apt-get install -y docker.io`, then "
              "`dockerd --bridge=none --iptables=false &`), then `make images`; see docs/containers.md")
_SHA256 = re.compile(r"sha256=([0-9a-f]{64})")


def image_env(domain: str) -> str:
    return "SHIFTBOX_IMAGE_" + re.sub(r"[^A-Za-z0-9]", "_", domain).upper()


def image_ref(domain: str) -> str:
    """`$SHIFTBOX_IMAGE_<DOMAIN>`, else the tag `make images` gives the installed servers version."""
    return os.environ.get(image_env(domain)) or f"shiftbox-{domain}:{SERVER_VERSION}"


def docker_command() -> str:
    found = os.environ.get(DOCKER_ENV) or shutil.which("docker")
    if not found:
        raise DockerError(f"--servers docker needs the docker CLI, which is not on PATH: {FIX_ENGINE}")
    return found


@dataclass(frozen=True)
class Image:
    ref: str
    id: str
    labels: dict[str, str] = field(default_factory=dict)


def inspect_image(docker: str, ref: str) -> Image:
    try:
        proc = subprocess.run([docker, "image", "inspect", "--format", "{{json .}}", ref], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DockerError(f"cannot run {docker}: {exc}; {FIX_ENGINE}") from exc
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        if "no such image" in message.lower():
            raise DockerError(f"image {ref} is not built ({message}): {FIX_IMAGES}")
        raise DockerError(f"the Docker engine is not reachable ({message}): {FIX_ENGINE}")
    data = json.loads(proc.stdout)
    return Image(ref, data["Id"], (data.get("Config") or {}).get("Labels") or {})


def find_image(domain: str) -> tuple[str, Image]:
    """The docker CLI and the domain's image, or a DockerError naming the fix."""
    docker = docker_command()
    return docker, inspect_image(docker, image_ref(domain))


def check_server(info: Any, manifest: SnapshotManifest, image: Image) -> None:
    """Refuse a server that is not the run's domain, the installed servers version and the run's snapshot."""
    name, version = getattr(info, "name", None), getattr(info, "version", None)
    found = _SHA256.search(getattr(info, "description", None) or "")
    sha = found.group(1) if found else None
    problems = []
    if name != f"shiftbox-{manifest.domain}":
        problems.append(f"server: expected shiftbox-{manifest.domain}, found {name}")
    if version != SERVER_VERSION:
        problems.append(f"shiftbox-servers version: expected {SERVER_VERSION} (installed), found {version}")
    if sha != manifest.sha256:
        problems.append(f"snapshot sha256: expected {manifest.sha256} ({manifest.snapshot_id}, the run's "
                        f"snapshot), found {sha}")
    if problems:
        raise DockerError(
            f"the server in image {image.ref} ({image.id[:19]}) does not match this run: {'; '.join(problems)}. "
            f"Rebuild the image from this checkout with `make images`, or run with the snapshot it was built from "
            f"(label io.shiftbox.snapshot.id={image.labels.get('io.shiftbox.snapshot.id', '?')}).")


@dataclass
class Container:
    """A started `docker run -i` server: the stdio transport to hand to `mcp.Client`, and its image."""

    image: Image
    name: str
    transport: Any
    log: Any
    checked: bool = False

    def check(self, info: Any, manifest: SnapshotManifest) -> None:
        check_server(info, manifest, self.image)
        self.checked = True

    def stderr_tail(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-2000:].strip()


@contextlib.asynccontextmanager
async def docker_server(domain: str, manifest: SnapshotManifest, *extra: str) -> AsyncIterator[Container]:
    """Start the domain's image over stdio for the length of a run; removed however the run ends."""
    from mcp import StdioServerParameters  # the SDK is loaded by the modes that speak MCP only
    from mcp.client.stdio import stdio_client

    docker, image = await anyio.to_thread.run_sync(find_image, domain)
    name = f"shiftbox-{domain}-{secrets.token_hex(4)}"
    params = StdioServerParameters(
        command=docker, env={k: v for k, v in os.environ.items() if k.startswith("DOCKER_")},  # DOCKER_HOST etc.
        args=["run", "-i", "--rm", "--name", name, *RUN_FLAGS, image.id, "--max-episodes", "100000", *extra])
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        container = Container(image, name, stdio_client(params, errlog=log), log)
        try:
            yield container
        except Exception as exc:  # the client's task groups wrap what is raised inside them
            leaf = single_error(exc)
            if isinstance(leaf, DockerError):
                raise leaf from None
            if container.checked:
                raise
            raise DockerError(f"the {domain} container ({image.ref}) did not start: {type(leaf).__name__}: {leaf}"
                              f"\n{container.stderr_tail() or '(no output)'}") from exc
        finally:
            # Closing stdin stops the server and --rm removes it; this covers a client that was killed.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: subprocess.run(
                    [docker, "rm", "-f", name], capture_output=True, timeout=60))
            tail = container.stderr_tail()
            if tail and container.checked:
                print(tail, file=sys.stderr)
