"""The server images: pins and labels, stdio and HTTP through a real MCP client, hardening, offline build."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from shiftbox.world import RUN_FLAGS, inspect_image
from shiftbox_servers.kit import SERVER_VERSION, Snapshot, free_port, get_domain, open_server
from tests.conftest import REPO
from tests.containers.conftest import DOMAINS, build_cli, locked_version
from tests.servers.conftest import domain_test_data
from tests.servers.helpers import (
    assert_custom_routes_refuse_foreign_pages,
    digest,
    fails,
    http_request,
    ok,
)

COMPOSE = REPO / "containers" / "compose.yaml"


def snapshot(domain: str) -> Snapshot:
    return Snapshot.load(get_domain(domain).default_snapshot_dir())


def tool_list(listed) -> list[dict]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]


def test_labels_pin_the_locked_version_the_revision_and_the_snapshot(images):
    version = locked_version()
    assert version == SERVER_VERSION, "the installed shiftbox-servers is not the one uv.lock pins; run `make env`"
    for domain, image in images.items():
        m = snapshot(domain).manifest
        labels = image.labels
        assert labels["org.opencontainers.image.version"] == version, f"{image.ref} is stale: run `make images`"
        assert labels["io.modelcontextprotocol.server.name"] == f"shiftbox-{domain}"
        assert labels["io.shiftbox.snapshot.sha256"] == m.sha256, f"{image.ref} bakes another snapshot: `make images`"
        assert labels["io.shiftbox.snapshot.id"] == m.snapshot_id
        assert labels.get("io.shiftbox.tool-contract") == m.tool_contracts["default"].digest, \
            f"{image.ref} was built for other tools: `make images`"
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", labels["org.opencontainers.image.revision"])
        assert labels["org.opencontainers.image.source"]


@pytest.mark.anyio
@pytest.mark.parametrize("domain", DOMAINS)
async def test_stdio_container_serves_what_the_in_process_server_does(docker, images, domain):
    tool, table, column = domain_test_data(domain).NATIVE_DETAIL_LOOKUP
    snap = snapshot(domain)
    key = snap.open_copy().execute(f"SELECT {column} FROM {table} ORDER BY {column} LIMIT 1").fetchone()[0]
    params = StdioServerParameters(command=docker, args=["run", "-i", "--rm", *RUN_FLAGS, images[domain].id])
    async with Client(stdio_client(params)) as container, Client(open_server(domain).mcp) as local:
        info = container.server_info
        assert (info.name, info.version) == (f"shiftbox-{domain}", locked_version())
        assert f"sha256={snap.manifest.sha256}" in info.description
        assert tool_list(await container.list_tools()) == tool_list(await local.list_tools())
        found = await ok(container, tool, {column: key})
        assert found == await ok(local, tool, {column: key}) and found[column] == key
        await fails(container, tool, {column: key, "verbose": True}, "invalid_arguments")


def test_compose_serves_each_domain_on_its_own_loopback_port():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert set(services) == set(DOMAINS)
    ports = []
    for domain, svc in services.items():
        assert svc["image"] == f"shiftbox-{domain}:${{SHIFTBOX_VERSION:-{locked_version()}}}"
        assert svc["network_mode"] == "host" and svc["read_only"] is True and svc["cap_drop"] == ["ALL"]
        command = svc["command"]
        assert command[command.index("--host") + 1] == "127.0.0.1"
        ports.append(command[command.index("--port") + 1])
        assert f"127.0.0.1:{ports[-1]}/healthz" in " ".join(svc["healthcheck"]["test"])
    assert len(set(ports)) == len(ports)


@pytest.mark.anyio
async def test_http_container_as_compose_runs_it_keeps_episodes_apart(docker, images):
    command = list(yaml.safe_load(COMPOSE.read_text())["services"]["banking"]["command"])
    port = free_port()
    command[command.index("--port") + 1] = str(port)
    name = f"shiftbox-test-http-{secrets.token_hex(4)}"
    started = subprocess.run([docker, "run", "-d", "--rm", "--name", name, "--network", "host", *RUN_FLAGS[2:],
                              images["banking"].id, *command], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    base = f"http://127.0.0.1:{port}"
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    health = json.loads(await anyio.to_thread.run_sync(
                        lambda: urllib.request.urlopen(base + "/healthz", timeout=1).read()))
                    break
                except OSError:
                    await anyio.sleep(0.1)
        m = snapshot("banking").manifest
        assert (health["server"], health["version"], health["sha256"]) == ("shiftbox-banking", locked_version(), m.sha256)
        card = snapshot("banking").open_copy().execute(
            "SELECT card_id FROM cards WHERE status = 'Active' ORDER BY card_id LIMIT 1").fetchone()[0]
        async with Client(f"{base}/episodes/one/mcp") as one, Client(f"{base}/episodes/two/mcp") as two, \
                Client(open_server("banking").mcp) as local:
            assert (await ok(one, "lock_card", {"card_id": card}))["status"] == "Locked"
            assert await digest(two) == await digest(local)      # two still sees the snapshot as built
            assert await digest(one) != await digest(two)
            await ok(local, "lock_card", {"card_id": card})
            assert await digest(one) == await digest(local)      # same call, same state, either side
            assert_custom_routes_refuse_foreign_pages(base, "/episodes/one")  # DNS rebinding: nothing dropped
            assert http_request(f"{base}/episodes/one", "DELETE")[0] == 200
            closed = await fails(one, "lock_card", {"card_id": card}, "not_found")
            assert "'one'" in closed["message"]  # not silently reopened empty
        health = json.loads(urllib.request.urlopen(base + "/healthz", timeout=5).read())
        assert health["episodes"] == 1
    finally:
        subprocess.run([docker, "rm", "-f", name], capture_output=True, timeout=60)


PROBE = """
import importlib.util, os, sys
print("uid", os.getuid(), os.getgid())
for path in ("/probe", "/snapshot/probe", "/opt/venv/probe", "/tmp/probe"):
    try:
        open(path, "w")
        print(path, "writable")
    except OSError as exc:
        print(path, "errno", exc.errno)
import shiftbox_servers.kit._server as server
print("pyc", os.path.exists(importlib.util.cache_from_source(server.__file__)))
print("dont_write_bytecode", sys.flags.dont_write_bytecode)
print("litellm", importlib.util.find_spec("litellm"))
"""


def test_runs_as_non_root_on_a_read_only_root_with_bytecode_compiled(docker, images):
    for domain, image in images.items():
        user = subprocess.run([docker, "image", "inspect", "-f", "{{.Config.User}}", image.id],
                              capture_output=True, text=True, timeout=60).stdout.strip()
        assert user == "10001:10001", domain
        proc = subprocess.run([docker, "run", "--rm", *RUN_FLAGS, "--entrypoint", "python", image.id, "-c", PROBE],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == "uid 10001 10001"
        assert lines[1:5] == [f"{p} errno 30" for p in ("/probe", "/snapshot/probe", "/opt/venv/probe", "/tmp/probe")]
        assert lines[5:] == ["pyc True", "dont_write_bytecode 1", "litellm None"]


def test_server_refuses_a_tampered_snapshot_at_start(docker, images, tmp_path):
    source = get_domain("banking").default_snapshot_dir()
    tampered = tmp_path / "snapshot"
    tampered.mkdir(mode=0o755)
    for name in ("db.sqlite", "manifest.json"):
        (tampered / name).write_bytes((source / name).read_bytes())
    data = bytearray((tampered / "db.sqlite").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tampered / "db.sqlite").write_bytes(bytes(data))
    for f in tampered.iterdir():
        f.chmod(0o644)
    proc = subprocess.run([docker, "run", "-i", "--rm", *RUN_FLAGS, "-v", f"{tampered}:/snapshot:ro",
                           images["banking"].id], input="", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    m = snapshot("banking").manifest
    assert "the file was changed after it was built" in proc.stderr
    assert f"its manifest says {m.sha256[:12]}" in proc.stderr


@pytest.mark.slow
def test_build_script_builds_with_no_network_at_all(docker, images, throwaway_images):
    script = REPO / "containers" / "build-images.sh"
    assert "build --network none" in script.read_text()
    tag = f"shiftbox-offline-test-banking:{locked_version()}"
    throwaway_images.append(tag)
    # As `make images` runs it: from outside the project's .venv (whose python has neither uv nor pip).
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {
        "PATH": path, "IMAGE_PREFIX": "shiftbox-offline-test-", "UV_OFFLINE": "1", "PIP_NO_INDEX": "1",
        "DOCKER": build_cli()}
    proc = subprocess.run([str(script), "banking"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    built = inspect_image(docker, tag)
    assert re.search(rf"^{re.escape(tag)}\s+{re.escape(built.id)}\s+\d+\.\d MB$", proc.stdout, re.M), proc.stdout
    keep = ("org.opencontainers.image.version", "io.modelcontextprotocol.server.name", "io.shiftbox.snapshot.sha256")
    assert {k: built.labels[k] for k in keep} == {k: images["banking"].labels[k] for k in keep}
