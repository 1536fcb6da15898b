"""`shiftbox tasks validate | import | stats | generate`: check, convert, summarize and generate task files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from shiftbox_servers.kit import SnapshotError

from ..agentchangebench import (
    TASK_SETS,
    TaskFileCheck,
    check_task_file,
    import_agentchangebench,
    reference_task_list,
)
from ..errors import OutputPathError
from ..generation import GenerationError, generate_cross_tasks, generate_tasks
from ..tasks import (
    TaskFile,
    import_domain_tasks,
    load_task_file,
    render_stats,
    task_stats,
    type_sequence_coverage,
    write_task_file,
)
from ._common import choices, fail

TaskSetChoice = choices("TaskSetChoice", tuple(TASK_SETS))

tasks_app = typer.Typer(help="Validate, import, summarize and generate task files.", no_args_is_help=True)


def _load_or_exit(path: Path) -> TaskFile:
    try:
        return load_task_file(path)
    except ValueError as exc:
        raise fail(f"{exc}\n  fix: pass a native task file or an AgentChangeBench task list (JSON)") from None


def _write_or_exit(task_file: TaskFile, out: Path) -> None:
    try:
        write_task_file(task_file, out)
    except OutputPathError as exc:
        raise fail(str(exc)) from None


@tasks_app.command("validate")
def validate(
    file: Annotated[Path, typer.Argument(help="native task file, or an AgentChangeBench/tau2 task list")],
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory: also replay the gold calls on it")] = None,
    toolset: Annotated[str | None, typer.Option(
        help="tool set to check the calls against [default: the file's: an imported reference file's is the "
             "reference's tool set; else default]")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the findings as JSON")] = False,
) -> None:
    """Check tool names, params, goals, shift counts and communicate_info (and, with --snapshot, that the
    gold calls run with their expected outcome); warn about goals no action set or attributed
    communicate_info checks. Exit 1 when there is an error finding that is not the reference's own data.

    A reference task list (AgentChangeBench / tau2, raw or imported) has errors of its own: those found where
    shiftbox answers as the reference does (its tool set, its database) are marked "reference data" and counted
    apart; they do not fail the command. A tau2-format task list validated with --snapshot is read as `tasks
    import --snapshot` reads it: the gold calls that fail there are recorded as expected to fail and listed as
    warnings.

    Example: shiftbox tasks validate ../shared/external/agentchangebench/banking/tasks.json --snapshot snapshots/banking/acb-v1
    """
    try:
        check = check_task_file(file, snapshot, toolset)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps([f.model_dump() for f in check.findings], indent=2))
    else:
        _print_findings(check)
    if check.own_errors:
        raise typer.Exit(1)


def _print_findings(check: TaskFileCheck) -> None:
    table = Table("severity")
    for column in ("task", "field", "problem", "fix"):
        table.add_column(column, overflow="fold")
    for f in check.findings:
        color = "red" if f.severity == "error" and not f.reference_data else "yellow"
        label = f"{f.severity}{' (reference data)' if f.reference_data else ''}"
        table.add_row(f"[{color}]{label}[/]", f.task_id, f.field, f.problem, f.fix)
    out = Console()
    if check.findings:
        out.print(table)
    errors, reference = check.errors, check.reference_findings
    out.print(f"{check.task_file.source}: {len(check.task_file.tasks)} tasks on tool set {check.toolset}; "
              f"errors: {errors}, warnings: {len(check.findings) - errors}"
              + (f"; of these, {reference} ({errors - check.own_errors} errors) are the reference's own data "
                 f"errors, not shiftbox's" if reference else ""), highlight=False)


import_app = typer.Typer(help="Convert other benchmarks' task files into native task files.", no_args_is_help=True)
tasks_app.add_typer(import_app, name="import")


@import_app.command("agentchangebench")
def import_acb(
    source: Annotated[Path, typer.Argument(
        help="AgentChangeBench/tau2 tasks.json (a JSON array of tasks), or a local clone of the reference "
             "repository (with --domain: its data/tau2/domains/DOMAIN/ task list of --task-set)")],
    out: Annotated[Path, typer.Option(help="native task file to write")],
    domain: Annotated[str | None, typer.Option(help="domain, when the tasks don't name it (and to pick its "
                                                    "task list in a clone)")] = None,
    task_set: Annotated[TaskSetChoice, typer.Option(
        help="which task list of a clone: original (tasks.json) or new (AgentChangeBench's systematic "
             "tasks-new.json / tasks_new.json)")] = TaskSetChoice.original,
    snapshot: Annotated[Path | None, typer.Option(
        help="the snapshot the tasks are written for: record tau2-format tasks' gold outcomes on it (the gold "
             "calls that fail there, as expected_error; the final state digest)")] = None,
) -> None:
    """Import an AgentChangeBench/tau2 task list as a native task file (goals assigned to action sets; a
    task without goal_shifts, as in tau2's own files, is a single-goal task). The file records the tool set the
    tasks are written for (the domain's copy of the reference's tools), which `shiftbox run` then uses.

    Example: shiftbox tasks import agentchangebench ../shared/external/tau2/retail/tasks.json --snapshot snapshots/retail/acb-v1 --out tasks/retail-tau2.json
    """
    try:
        source = reference_task_list(source, domain, task_set.value)
        task_file = import_agentchangebench(source, domain, snapshot)
    except SnapshotError as exc:
        raise fail(f"cannot use snapshot {snapshot}: {exc}\n  fix: pass the snapshot directory the tasks are "
                    "written for (see `shiftbox snapshots import`)") from None
    except ValueError as exc:
        raise fail(f"{exc}\n  fix: pass an AgentChangeBench or tau2 task list (e.g. banking/tasks.json), and "
                    "with --snapshot the snapshot the tasks are written for") from None
    _write_or_exit(task_file, out)
    sets = [a for t in task_file.tasks for a in t.evaluation_criteria.action_sets]
    typer.echo(f"{task_file.source} -> {out}: {len(task_file.tasks)} {task_file.domain} tasks, {len(sets)} action "
               f"sets, snapshot {task_file.snapshot or 'none'}, tool set {task_file.toolset_for()}")
    if snapshot is not None:
        failing = Counter(s.expected_error for a in sets for s in a.allowed_tools if s.expected_error)
        recorded = sum(t.evaluation_criteria.expected_state_digest is not None for t in task_file.tasks)
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(failing.items())) or "none"
        typer.echo(f"gold outcomes recorded on {snapshot}: final state of {recorded} tasks; gold calls expected "
                   f"to fail: {kinds}")


@tasks_app.command("import-mmtb")
def import_mmtb(
    file: Annotated[Path, typer.Argument(help="Multi-Mission Tool Bench data file (JSONL, one record a line)")],
    out: Annotated[Path, typer.Option(help="native task file to write")],
    snapshot: Annotated[Path, typer.Option(help="snapshot directory to write: the records' tools and annotated "
                                                "observations, served by the mmtb domain")],
) -> None:
    """Import MMTB records as native tasks of the mmtb domain (one goal per mission, MMTB's mission type and gold
    calls on each) and write the snapshot that serves their tools, answering each call with the annotated
    observation of the matching gold call. Run them with `shiftbox run --domain mmtb --snapshot DIR`.

    Example: shiftbox tasks import-mmtb Multi-Mission-Tool-Bench.jsonl --snapshot snapshots/mmtb/data --out tasks/mmtb.json
    """
    try:
        task_file = import_domain_tasks("mmtb", "mmtb", file, snapshot)
    except ValueError as exc:
        raise fail(str(exc)) from None
    _write_or_exit(task_file, out)
    goals = Counter(kind for t in task_file.tasks for kind in t.action_types.values())
    typer.echo(f"{task_file.source} -> {out}: {len(task_file.tasks)} mmtb tasks, missions by type: "
               f"{', '.join(f'{k} {n}' for k, n in sorted(goals.items()))}; snapshot {task_file.snapshot} in {snapshot}")


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
    n: Annotated[int | None, typer.Option("--n", help="how many tasks [default: 150; with --cover types, one per "
                                                      "four-type sequence the domain's missions can make]")] = None,
    seed: Annotated[int, typer.Option(help="generator seed (same seed -> identical file)")] = 7,
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory (default: the domain's own)")] = None,
    cover: Annotated[str, typer.Option(
        help="what the set covers: pairs (every ordered goal pair, 1-4 goals per task) or types (every MMTB "
             "mission type sequence single/multi/clarify/chat up to 4 goals, as prefixes of four-goal tasks)")]
        = "pairs",
) -> None:
    """Generate a seeded native task set from a snapshot: every ordered goal pair (or, --cover types, every MMTB
    mission type sequence), every catalog persona in turn, gold calls replayed for communicate_info and the expected
    state digest.

    Example: shiftbox tasks generate banking --n 150 --seed 7 --out snapshots/banking/v1/tasks.json
    """
    from shiftbox_servers.kit import get_domain

    try:
        dom = get_domain(domain)
    except KeyError as exc:
        raise fail(f"{exc.args[0]}\n  fix: pass an installed domain name") from None
    if not dom.missions:
        raise fail(f"domain {domain!r} has no task missions\n  fix: give its Domain(...) a `missions` MissionSet "
                    "(goal label -> builder; docs/adding-a-domain.md)")
    snapshot_dir = snapshot or dom.default_snapshot_dir()
    try:
        task_file = generate_tasks(domain, snapshot_dir, n=n, seed=seed, cover=cover)
    except SnapshotError as exc:
        raise fail(f"cannot use snapshot {snapshot_dir}: {exc}\n  fix: pass a snapshot directory of the {domain} "
                    "domain (see `shiftbox snapshots build`)") from None
    except (GenerationError, ValueError) as exc:
        raise fail(str(exc)) from None
    _write_or_exit(task_file, out)
    pairs = task_stats(task_file)["goal_pair_coverage"]
    types = "".join(f", {c}/{p}" for c, p in type_sequence_coverage(task_file.tasks).values())[2:]
    typer.echo(f"{task_file.source} -> {out}: {len(task_file.tasks)} {domain} tasks on {task_file.snapshot}; "
               f"ordered goal pairs covered: {pairs['covered']}/{pairs['possible']}"
               + (f"; MMTB type sequences of 1-4 goals covered: {types}" if cover == "types" else ""))


@tasks_app.command("generate-cross")
def generate_cross(
    domains: Annotated[str, typer.Argument(help="installed domains with task missions, comma-separated, e.g. "
                                                "banking,retail,airline")],
    out: Annotated[Path, typer.Option(help="native task file to write")],
    per_pair: Annotated[int, typer.Option(help="tasks per ordered pair of domains")] = 11,
    seed: Annotated[int, typer.Option(help="generator seed (same seed -> identical file)")] = 7,
    independent: Annotated[bool, typer.Option(help="goals independent of each other (generator v1), the baseline "
                                                   "to compare the default dependent tasks against")] = False,
) -> None:
    """Generate a seeded cross-domain task set: for every ordered pair of DOMAINS, tasks whose goals alternate
    between the two (one customer, tools and goals namespaced), gold calls replayed on each domain's snapshot;
    in every task a later goal needs a value read in the other domain (unless --independent).

    Example: shiftbox tasks generate-cross banking,retail,airline --per-pair 11 --seed 7 --out tasks/cross-domain.json
    """
    from shiftbox_servers.kit import domain_list

    try:
        task_file = generate_cross_tasks(domain_list(domains), per_pair=per_pair, seed=seed, independent=independent)
    except KeyError as exc:
        raise fail(f"{exc.args[0]}\n  fix: pass installed domain names") from None
    except (GenerationError, ValueError) as exc:
        raise fail(str(exc)) from None
    _write_or_exit(task_file, out)
    pairs = sorted({t.domain for t in task_file.tasks})
    typer.echo(f"{task_file.source} -> {out}: {len(task_file.tasks)} cross-domain tasks over {len(pairs)} ordered "
               f"domain pairs ({', '.join(pairs)}) on {task_file.snapshot}")
