"""`shiftbox snapshots …`: output, exit codes and error messages."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from shiftbox.cli import app
from tests.conftest import require_acb

runner = CliRunner()


def test_build_then_verify_ok(tmp_path):
    out = tmp_path / "echo"
    res = runner.invoke(app, ["snapshots", "build", "echo", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "echo/v1" in res.output and (out / "manifest.json").exists()
    res = runner.invoke(app, ["snapshots", "verify", str(tmp_path)])
    assert res.exit_code == 0 and "ok" in res.output


def test_verify_detects_tampering(tmp_path):
    out = tmp_path / "echo"
    runner.invoke(app, ["snapshots", "build", "echo", "--out", str(out)])
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["content_sha256"] = "0" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    res = runner.invoke(app, ["snapshots", "verify", str(out)])
    assert res.exit_code == 1 and "MISMATCH" in res.output
    (out / "db.sqlite").write_bytes(b"not a database")
    res = runner.invoke(app, ["snapshots", "verify", str(out)])
    assert res.exit_code == 1


def test_unknown_domain_is_a_usage_error():
    res = runner.invoke(app, ["snapshots", "build", "bankng"])
    assert res.exit_code == 2 and "unknown domain 'bankng'" in res.output


def test_verify_without_snapshots_says_how_to_build(tmp_path):
    res = runner.invoke(app, ["snapshots", "verify", str(tmp_path)])
    assert res.exit_code == 2 and "shiftbox snapshots build" in res.output


def test_import_agentchangebench_banking(tmp_path):
    source = require_acb("banking", "db.toml")
    res = runner.invoke(app, ["snapshots", "import", "agentchangebench", "banking", str(source),
                              "--out", str(tmp_path / "acb")])
    assert res.exit_code == 0, res.output
    assert "customers 6" in res.output


def test_import_missing_file_and_domain_without_importer(tmp_path):
    res = runner.invoke(app, ["snapshots", "import", "agentchangebench", "banking", str(tmp_path / "nope.toml"),
                              "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "does not exist" in res.output
    res = runner.invoke(app, ["snapshots", "import", "agentchangebench", "echo", str(tmp_path),
                              "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "no AgentChangeBench importer" in res.output


def test_help_has_examples():
    for cmd in (["snapshots", "build", "--help"], ["snapshots", "verify", "--help"],
                ["snapshots", "import", "agentchangebench", "--help"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0 and "Example" in res.output, cmd
