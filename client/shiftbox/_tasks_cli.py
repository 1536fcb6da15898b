"""`shiftbox tasks validate | import | stats | generate`: check, convert, summarize and generate task files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from shiftbox_servers.kit import SnapshotError

from .tasks import (
    GenerationError,
    TaskFile,
    generate_tasks,
    import_agentchangebench,
    load_task_file,
    render_stats,
    task_stats,
    validate_tasks,
)

tasks_app = typer.Typer(help="Validate, import, summarize and generate task files.", no_args_is_help=True)
console = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> typer.Exit:
    console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def _load_or_exit(path: Path) -> TaskFile:
    try:
        return load_task_file(path)
    except ValueError as exc:
        raise _fail(f"{exc}\n  fix: pass a native task file or an AgentChangeBench task list (JSON)") from None


@tasks_app.command("validate")
def validate(
    file: Annotated[Path, typer.Argument(help="native task file, or an AgentChangeBench/tau2 task list")],
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory: also replay the gold calls on it")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the findings as JSON")] = False,
) -> None:
    """Check tool names, params, goals, shift counts and communicate_info (and, with --snapshot, that the
    gold calls run); warn about goals no action set or attributed communicate_info checks. Exit 1 when
    there is an error finding.

    Example: shiftbox tasks validate ../shared/external/agentchangebench/banking/tasks.json --snapshot snapshots/banking/acb-v1
    """
    task_file = _load_or_exit(file)
    try:
        findings = validate_tasks(task_file, snapshot)
    except (SnapshotError, ValueError) as exc:
        raise _fail(f"cannot use snapshot {snapshot}: {exc}\n  fix: pass a snapshot directory of the "
                    f"{task_file.domain} domain (see `shiftbox snapshots import` / `build`)") from None
    errors = sum(f.severity == "error" for f in findings)
    if as_json:
        typer.echo(json.dumps([f.model_dump() for f in findings], indent=2))
    else:
        table = Table("severity")
        for column in ("task", "field", "problem", "fix"):
            table.add_column(column, overflow="fold")
        for f in findings:
            color = "red" if f.severity == "error" else "yellow"
            table.add_row(f"[{color}]{f.severity}[/]", f.task_id, f.field, f.problem, f.fix)
        out = Console()
        if findings:
            out.print(table)
        out.print(f"{task_file.source}: {len(task_file.tasks)} tasks; errors: {errors}, "
                  f"warnings: {len(findings) - errors}", highlight=False)
    if errors:
        raise typer.Exit(1)


import_app = typer.Typer(help="Convert other benchmarks' task files into native task files.", no_args_is_help=True)
tasks_app.add_typer(import_app, name="import")


@import_app.command("agentchangebench")
def import_acb(
    source: Annotated[Path, typer.Argument(help="AgentChangeBench/tau2 tasks.json (a JSON array of tasks)")],
    out: Annotated[Path, typer.Option(help="native task file to write")],
    domain: Annotated[str | None, typer.Option(help="domain, when the tasks don't name it")] = None,
) -> None:
    """Import an AgentChangeBench/tau2 task list as a native task file (goals assigned to action sets).

    Example: shiftbox tasks import agentchangebench ../shared/external/agentchangebench/banking/tasks.json --out tasks/banking-acb.json
    """
    try:
        task_file = import_agentchangebench(source, domain)
    except ValueError as exc:
        raise _fail(f"{exc}\n  fix: pass an AgentChangeBench task list (e.g. banking/tasks.json)") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(task_file.model_dump_json(indent=2) + "\n", encoding="utf-8")
    sets = [a for t in task_file.tasks for a in t.evaluation_criteria.action_sets]
    typer.echo(f"{task_file.source} -> {out}: {len(task_file.tasks)} {task_file.domain} tasks, {len(sets)} action "
               f"sets, snapshot {task_file.snapshot or 'none'}")


@tasks_app.command("stats")
def stats(
    file: Annotated[Path, typer.Argument(help="native task file, or an AgentChangeBench/tau2 task list")],
    as_json: Annotated[bool, typer.Option("--json", help="print the stats as JSON")] = False,
) -> None:
    """Summarize a task set: goals per task, personas, ordered goal-pair coverage, action sets.

    Example: shiftbox tasks stats ../shared/external/agentchangebench/banking/tasks.json
    """
    result = task_stats(_load_or_exit(file))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        Console().print(render_stats(result))


@tasks_app.command("generate")
def generate(
    domain: Annotated[str, typer.Argument(help="installed domain with task missions, e.g. banking")],
    out: Annotated[Path, typer.Option(help="native task file to write")],
    n: Annotated[int, typer.Option("--n", help="how many tasks")] = 150,
    seed: Annotated[int, typer.Option(help="generator seed (same seed -> identical file)")] = 7,
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory (default: the domain's own)")] = None,
) -> None:
    """Generate a seeded native task set from a snapshot: every ordered goal pair, 1-4 goals per task,
    every catalog persona in turn, gold calls replayed for communicate_info and the expected state digest.

    Example: shiftbox tasks generate banking --n 150 --seed 7 --out snapshots/banking/v1/tasks.json
    """
    from shiftbox_servers.kit import get_domain

    try:
        dom = get_domain(domain)
    except KeyError as exc:
        raise _fail(f"{exc.args[0]}\n  fix: pass an installed domain name") from None
    if not dom.missions:
        raise _fail(f"domain {domain!r} has no task missions\n  fix: give its Domain(...) a `missions` mapping "
                    "(goal label -> builder), as shiftbox_servers.banking._missions does")
    snapshot_dir = snapshot or dom.default_snapshot_dir()
    try:
        task_file = generate_tasks(domain, snapshot_dir, n=n, seed=seed)
    except SnapshotError as exc:
        raise _fail(f"cannot use snapshot {snapshot_dir}: {exc}\n  fix: pass a snapshot directory of the {domain} "
                    "domain (see `shiftbox snapshots build`)") from None
    except (GenerationError, ValueError) as exc:
        raise _fail(str(exc)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(task_file.model_dump_json(indent=2) + "\n", encoding="utf-8")
    cover = task_stats(task_file)["goal_pair_coverage"]
    typer.echo(f"{task_file.source} -> {out}: {len(task_file.tasks)} {domain} tasks on {task_file.snapshot}; "
               f"ordered goal pairs covered: {cover['covered']}/{cover['possible']}")
