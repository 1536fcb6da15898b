"""`shiftbox run --servers docker`: same trajectories as in-process, image id recorded, pins enforced."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.trajectory import read_trajectories
from shiftbox.world import DockerError, Image, check_server, inspect_image
from shiftbox_servers.kit import SERVER_VERSION, SnapshotManifest, get_domain
from tests.client.harness import HANDWRITTEN
from tests.client.world.test_server_faults import TRIALS, run_with_a_kill
from tests.containers.conftest import docker_build

runner = CliRunner()
TASKS = ("hw_banking_001", "hw_banking_004")


def run_cli(out: Path, *extra: str):
    picked = [arg for task in TASKS for arg in ("--task-id", task)]
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                               "--agent", "scripted:oracle", "--user", "scripted", *picked, *extra])


def without_servers(run_dir: Path) -> dict[str, str]:
    out = {}
    for t in read_trajectories(run_dir):
        data = t.canonical()
        data.pop("servers")
        out[t.simulation_id] = json.dumps(data, sort_keys=True)
    return out


def banking_manifest() -> SnapshotManifest:
    return SnapshotManifest.model_validate_json(
        (get_domain("banking").default_snapshot_dir() / "manifest.json").read_text())


def test_check_server_names_what_was_expected_what_was_found_and_the_fix():
    m = banking_manifest()
    image = Image("shiftbox-banking:x", "sha256:" + "ab" * 32, {"io.shiftbox.snapshot.id": "banking/v0"})
    good = SimpleNamespace(name="shiftbox-banking", version=SERVER_VERSION, description=f"snapshot x sha256={m.sha256}")
    check_server(good, m, image)
    other = "0" * 64
    bad = SimpleNamespace(name="shiftbox-retail", version="0.0.9", description=f"snapshot x sha256={other}")
    with pytest.raises(DockerError) as err:
        check_server(bad, m, image)
    message = str(err.value)
    for part in (f"expected {SERVER_VERSION} (installed), found 0.0.9", f"expected {m.sha256}", f"found {other}",
                 "expected shiftbox-banking, found shiftbox-retail", "make images", "banking/v0"):
        assert part in message


def test_no_docker_cli_is_a_usage_error_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTBOX_DOCKER", str(tmp_path / "no-docker-here"))
    res = run_cli(tmp_path / "r", "--servers", "docker")
    assert res.exit_code == 2, res.output
    assert "docker.io" in res.output and "docs/containers.md" in res.output
    assert not (tmp_path / "r").exists()


def test_missing_image_is_a_usage_error_naming_the_fix(docker, tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTBOX_IMAGE_BANKING", "shiftbox-no-such-image:0")
    res = run_cli(tmp_path / "r", "--servers", "docker")
    assert res.exit_code == 2, res.output
    assert "shiftbox-no-such-image:0 is not built" in res.output and "make images" in res.output


def test_docker_servers_give_the_in_process_trajectories_and_record_the_image(docker, images, tmp_path):
    assert run_cli(tmp_path / "inproc").exit_code == 0
    res = run_cli(tmp_path / "docker", "--servers", "docker")
    assert res.exit_code == 0, res.output
    docker_run, inproc_run = without_servers(tmp_path / "docker"), without_servers(tmp_path / "inproc")
    assert sorted(docker_run) == [f"{t}#0" for t in TASKS]
    assert docker_run == inproc_run
    image_id = images["banking"].id
    for t in read_trajectories(tmp_path / "docker"):
        assert t.servers["banking"].image_id == image_id
    for t in read_trajectories(tmp_path / "inproc"):
        assert t.servers["banking"].image_id is None
    meta = json.loads((tmp_path / "docker" / "run.json").read_text())
    assert meta["config"]["servers"] == "docker"
    assert meta["server"]["banking"]["image_id"] == image_id
    assert meta["server"]["banking"]["snapshot_sha256"] == banking_manifest().sha256
    names = [name for name in subprocess.run([docker, "ps", "-a", "--format", "{{.Names}}"], capture_output=True,
                                             text=True, timeout=60).stdout.split()
             if name.startswith("shiftbox-banking-")]
    assert names == [], f"containers left behind: {names}"


def test_harness_refuses_a_server_whose_snapshot_differs_from_the_runs(docker, images, tmp_path, monkeypatch,
                                                                        throwaway_images):
    # A well-formed snapshot (the server starts) with one row changed, baked over the real image's:
    # its labels still claim the original sha256; what the server reports is what is checked.
    source = get_domain("banking").default_snapshot_dir()
    context = tmp_path / "ctx"
    (context / "snapshot").mkdir(parents=True)
    db = sqlite3.connect(":memory:")
    db.deserialize((source / "db.sqlite").read_bytes())
    db.execute("UPDATE accounts SET current_balance = current_balance + 1 WHERE rowid = 1")
    db.commit()
    (context / "snapshot" / "db.sqlite").write_bytes(db.serialize())
    other_sha = hashlib.sha256((context / "snapshot" / "db.sqlite").read_bytes()).hexdigest()
    manifest = banking_manifest().model_copy(update={"sha256": other_sha})
    (context / "snapshot" / "manifest.json").write_text(manifest.model_dump_json(indent=2))
    (context / "Dockerfile").write_text(f"FROM {images['banking'].ref}\nCOPY snapshot/ /snapshot/\n")
    tag = "shiftbox-test-other-snapshot:0"
    throwaway_images.append(tag)
    docker_build(context, tag)
    assert inspect_image(docker, tag).labels["io.shiftbox.snapshot.sha256"] == banking_manifest().sha256

    monkeypatch.setenv("SHIFTBOX_IMAGE_BANKING", tag)
    res = run_cli(tmp_path / "r", "--servers", "docker")
    assert res.exit_code == 2, res.output
    assert f"expected {banking_manifest().sha256}" in res.output and f"found {other_sha}" in res.output
    assert "make images" in res.output
    assert read_trajectories(tmp_path / "r") == []


def test_a_killed_container_is_replaced_under_retry_infra_and_every_simulation_completes(docker, images, tmp_path):
    def kill_containers() -> list[str]:
        names = subprocess.run([docker, "ps", "--format", "{{.Names}}", "--filter", "name=shiftbox-banking-"],
                               capture_output=True, text=True, timeout=60).stdout.split()
        for name in names:
            subprocess.run([docker, "kill", name], capture_output=True, timeout=60)
        return names

    trajectories, hooks = run_with_a_kill(tmp_path / "r", "docker", retry_infra=2, kill=kill_containers)
    assert hooks.killed, "no container was found to kill"
    assert len({t.simulation_id for t in trajectories}) == len(trajectories) == 5 * TRIALS
    assert [t.termination.reason for t in trajectories] == ["user_stop"] * len(trajectories)
    # the kill is recovered from by rerunning the simulation or, when the call in flight was read-only
    # (readOnlyHint), by resending that call to the replacement container
    assert any(t.timing.get("attempts", 1) > 1 or any(c.timing.get("attempts", 1) > 1 for c in t.tool_calls)
               for t in trajectories), "the kill did not hit any simulation"
    assert {t.servers["banking"].image_id for t in trajectories} == {images["banking"].id}
