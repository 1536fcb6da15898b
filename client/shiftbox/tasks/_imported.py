"""Tasks a domain imports from another benchmark's file (`Domain.task_importers`, e.g. mmtb): the domain writes
the snapshot they run on and hands back plain missions; here they become a native TaskFile."""

from __future__ import annotations

from pathlib import Path

from shiftbox_servers.kit import ImportedTask, get_domain

from ._model import (
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    Instructions,
    Task,
    TaskDescription,
    TaskFile,
    ToolCallSpec,
    UserScenario,
)


def import_domain_tasks(domain: str, source_format: str, source: Path, snapshot_dir: Path) -> TaskFile:
    """Import `source` with domain `domain`'s `source_format` task importer: its snapshot is written to
    `snapshot_dir`, its tasks returned as a native TaskFile on that snapshot. ValueError naming the problem and the
    fix (an unknown domain or format; input the importer refuses, by record and field)."""
    try:
        importer = get_domain(domain).task_importers[source_format]
    except KeyError:
        raise ValueError(f"domain {domain!r} has no {source_format!r} task importer; fix: install the domain "
                         "that declares it (Domain.task_importers)") from None
    manifest, imported = importer(Path(source), Path(snapshot_dir))
    return TaskFile(domain=domain, snapshot=manifest.snapshot_id, source=f"{source_format} {Path(source).name}",
                    tasks=[imported_task(domain, t) for t in imported])


def imported_task(domain: str, imported: ImportedTask) -> Task:
    """One imported task: a goal per mission with its action type, the mission texts as the user's instructions,
    each gold call an action set (its dependencies kept) and the missions' NL assertions."""
    missions = imported.missions
    goals = [m.goal for m in missions]
    actions = [ActionSet(action_id=c.key, goal=m.goal, allowed_tools=[ToolCallSpec(function_name=c.tool,
                                                                                    params=dict(c.params))],
                         depends_on=list(c.after), required_parameters=c.required)
               for m in missions for c in m.calls]
    steps = [f"{k + 1}. {m.reason}" for k, m in enumerate(missions)]
    known = [*imported.known, *(fact for m in missions for fact in m.known)]
    return Task(
        id=imported.id, domain=domain,
        description=TaskDescription(purpose=f"{len(missions)} missions", notes=imported.notes or None),
        user_scenario=UserScenario(
            instructions=Instructions(reason_for_call=missions[0].reason, known_info=" ".join(known),
                                      task_instructions="Give one mission at a time, in this order:\n"
                                                        + "\n".join(steps)),
            goal_shifts=GoalShifts(required_shifts=len(goals) - 1, goals=goals,
                                   action_types={m.goal: m.action_type for m in missions},
                                   mission_types=dict(imported.mission_types))),
        evaluation_criteria=EvaluationCriteria(action_sets=actions,
                                               nl_assertions=[a for m in missions for a in m.nl_assertions]),
    )
