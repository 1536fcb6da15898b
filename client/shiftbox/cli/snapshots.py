"""`shiftbox snapshots build | list | verify | import`: make and check the frozen databases servers run on."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from shiftbox_servers.kit import (
    Snapshot,
    SnapshotError,
    SnapshotManifest,
    content_hash,
    get_domain,
    registered_domains,
    snapshots_root,
    stamp_tool_contracts,
    task_domains,
)

from ..errors import OutputPathError, make_output_folder
from ._common import fail

snapshots_app = typer.Typer(help="Build, verify and import domain snapshots.", no_args_is_help=True)


def _domain_or_exit(name: str):
    try:
        return get_domain(name)
    except KeyError as exc:
        raise fail(str(exc.args[0])) from None


def _print_manifest(manifest: SnapshotManifest, directory: Path, seconds: float | None = None) -> None:
    rows = ", ".join(f"{t} {n}" for t, n in manifest.row_counts.items())
    took = f" in {seconds:.2f}s" if seconds is not None else ""
    size = (directory / "db.sqlite").stat().st_size
    typer.echo(f"{manifest.snapshot_id} -> {directory}{took}: {size / 1e6:.2f} MB, sha256 {manifest.sha256[:12]}…")
    typer.echo(f"  rows: {rows}")


@snapshots_app.command("build")
def build(
    domain: Annotated[str | None, typer.Argument(help="domain to build (default: every installed domain)")] = None,
    out: Annotated[Path | None, typer.Option(help="write this one snapshot directory (for --snapshot DIR)")] = None,
    root: Annotated[Path | None, typer.Option(help="write ROOT/<domain>/<version>, the layout SHIFTBOX_SNAPSHOTS=ROOT "
                                                   "reads (default: the snapshots root in use)")] = None,
) -> None:
    """Rebuild native snapshots with their seeded, deterministic builders.

    By default they go where shiftbox looks for them: $SHIFTBOX_SNAPSHOTS, the checkout's snapshots/, or
    (installed) ~/.local/share/shiftbox/snapshots, as <root>/<domain>/<version>.

    Example: shiftbox snapshots build banking
    """
    names = [domain] if domain else sorted(registered_domains())
    if out is not None and (len(names) != 1 or root is not None):
        raise fail("--out needs exactly one DOMAIN and no --root (use --root DIR for several)")
    for name in names:
        d = _domain_or_exit(name)
        directory = out or ((root / d.name / d.snapshot_version) if root is not None else d.default_snapshot_dir())
        start = time.perf_counter()
        try:  # its folder first, so a path that cannot be one is named (building then only writes into it)
            make_output_folder(directory, "--out" if out is not None else "--root")
        except OutputPathError as exc:
            raise fail(str(exc)) from None
        d.build_snapshot(directory)
        manifest = stamp_tool_contracts(d, directory)
        _print_manifest(manifest, directory, time.perf_counter() - start)


@snapshots_app.command("list")
def list_domains(
    tasks: Annotated[bool, typer.Option("--tasks", help="only the domains with task missions (not test fixtures "
                                                        "such as echo)")] = False,
) -> None:
    """Print the installed domains, one a line (what `make` and the container scripts iterate over).

    Example: shiftbox snapshots list --tasks
    """
    for name in task_domains() if tasks else sorted(registered_domains()):
        typer.echo(name)


@snapshots_app.command("verify")
def verify(
    directory: Annotated[Path | None, typer.Argument(help="a snapshot directory, or a folder holding several")] = None,
) -> None:
    """Check that snapshots match their manifests (file sha256 and content hash). Exit 1 on a mismatch.

    Example: shiftbox snapshots verify snapshots/banking/v1
    """
    root = directory or snapshots_root()
    found = sorted(p.parent for p in root.rglob("manifest.json")) if root.is_dir() else []
    if not found:
        raise fail(f"no snapshot (manifest.json) under {root}; build one with `shiftbox snapshots build`")
    table = Table("snapshot", "sha256", "content", "rows")
    failed = False
    for path in found:
        try:
            snap = Snapshot.load(path)
        except SnapshotError as exc:
            table.add_row(str(path), "[red]MISMATCH[/]", "-", str(exc))
            failed = True
            continue
        db = snap.open_copy()
        ok = content_hash(db) == snap.manifest.content_sha256
        failed |= not ok
        table.add_row(snap.manifest.snapshot_id, "ok", "ok" if ok else "[red]MISMATCH[/]",
                      str(sum(snap.manifest.row_counts.values())))
    Console().print(table)
    if failed:
        raise typer.Exit(1)


import_app = typer.Typer(help="Turn other benchmarks' databases into shiftbox snapshots.", no_args_is_help=True)
snapshots_app.add_typer(import_app, name="import")


@import_app.command("agentchangebench")
def import_agentchangebench(
    domain: Annotated[str, typer.Argument(help="domain of the source database (banking, retail, airline)")],
    source: Annotated[Path, typer.Argument(
        help="the database file (db.toml / db.json), or a local clone of the reference repository (its "
             "data/tau2/domains/DOMAIN/ holds it)")],
    out: Annotated[Path, typer.Option(help="snapshot directory to write")],
) -> None:
    """Import an AgentChangeBench / tau2 database as a snapshot of the same schema (ids are kept). Airline:
    AgentChangeBench's clone lacks the file; use tau2-bench's (github.com/sierra-research/tau2-bench).

    Example: shiftbox snapshots import agentchangebench banking ../shared/external/agentchangebench/banking/db.toml --out snapshots/banking/acb-v1
    """
    from ..agentchangebench import reference_db_file

    d = _domain_or_exit(domain)
    importer = d.importers.get("agentchangebench")
    if importer is None:
        raise fail(f"domain {domain!r} has no AgentChangeBench importer")
    try:
        source = reference_db_file(source, domain)
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        importer(source, out)
        manifest = stamp_tool_contracts(d, out)
    except (ValueError, sqlite3.IntegrityError) as exc:
        raise fail(f"cannot import {source}: {exc}") from None
    _print_manifest(manifest, out)
