"""The seed-7 task sets the generator tests check, generated once per test session per domain."""

from __future__ import annotations

import functools
from pathlib import Path

from shiftbox.generation import generate_tasks
from shiftbox.tasks import Task, TaskFile
from shiftbox_servers.kit import task_domains
from tests.client.harness import REPO

DOMAINS = task_domains()
N = 150


def snapshot_dir(domain: str) -> Path:
    return REPO / "snapshots" / domain / "v1"


@functools.cache
def seed7(domain: str) -> TaskFile:
    return generate_tasks(domain, snapshot_dir(domain), n=N, seed=7)


def rubric_gaps(task: Task) -> list[str]:
    """What a generated task's rubric leaves out of its goals: a goal with no item, a final gold call (none of the
    goal's other calls depends on it) whose tool no item of the goal names, a value to tell the user no item of
    the goal quotes. Items of goal k start "Request k ("."""
    gaps = []
    rubric = task.evaluation_criteria.rubric
    for k, goal in enumerate(task.goals, start=1):
        mine = [item for item in rubric if item.startswith(f"Request {k} (")]
        if not mine:
            gaps.append(f"{task.id}: goal {goal} has no rubric item")
        actions = task.action_sets_for(goal)
        needed = {d for a in actions for d in a.depends_on}
        for action in actions:
            tool = action.allowed_tools[0].function_name
            if action.action_id not in needed and not any(f'calls "{tool}"' in item for item in mine):
                gaps.append(f"{task.id}: goal {goal}'s final call {tool} is in no rubric item")
        for value in task.evaluation_criteria.communicate_info_by_goal.get(goal, []):
            if not any(f'tells the user "{value}"' in item for item in mine):
                gaps.append(f"{task.id}: goal {goal}'s {value!r} is in no rubric item")
    return gaps
