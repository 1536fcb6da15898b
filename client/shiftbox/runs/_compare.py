"""Two runs scored each on its own agent and paired by (task, trial), with what may make them incomparable."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..metrics import AgentScores, Comparison, compare, score_by_agent
from ..trajectory import Trajectory
from ._files import read_run


@dataclass
class ComparedRuns:
    """Both runs scored (each on its own agent) and their paired comparison."""

    comparison: Comparison
    scores: dict[str, AgentScores]
    trajectories: list[Trajectory]


def _one_agent(path: Path, trajectories: list[Trajectory]) -> str:
    agents = sorted({t.agent for t in trajectories})
    if len(agents) != 1:
        found = ", ".join(agents) or "none (no simulations yet)"
        raise ValueError(f"{path} must hold the simulations of exactly one agent (found: {found}); "
                         "compare one agent's run with another's")
    return agents[0]


def _identities(trajectories: list[Trajectory]) -> tuple[set[str], set[str]]:
    """The user simulators and the tool contracts (per domain) a run's simulations used, as text."""
    users, contracts = set(), set()
    for t in trajectories:
        sim = t.user_simulator
        users.add(json.dumps(sim.model_dump(mode="json", exclude_none=True), sort_keys=True) if sim else t.user)
        contracts |= {f"{d}:{info.tool_contract or 'unrecorded'}" for d, info in t.servers.items()}
    return users, contracts


def comparability_warnings(traj_a: list[Trajectory], traj_b: list[Trajectory]) -> list[str]:
    """Why A and B may not be comparable: their simulations used other user simulators or tool contracts."""
    (users_a, contracts_a), (users_b, contracts_b) = _identities(traj_a), _identities(traj_b)
    warnings = []
    if users_a != users_b:
        warnings.append(f"the runs used different user simulators (A: {'; '.join(sorted(users_a))} | "
                        f"B: {'; '.join(sorted(users_b))}); differences may come from the simulated user")
    if contracts_a != contracts_b:
        warnings.append(f"the runs used different tool contracts (A: {', '.join(sorted(contracts_a))} | "
                        f"B: {', '.join(sorted(contracts_b))}); the agents did not see the same tools")
    return warnings


def compare_run_dirs(run_a: Path, run_b: Path, success_threshold: float = 1.0) -> ComparedRuns:
    """Score two runs (run directories or folders of them), each of one agent, and pair them by (task, trial)."""
    (traj_a, tasks_a), (traj_b, tasks_b) = read_run(run_a), read_run(run_b)
    agent_a, agent_b = _one_agent(run_a, traj_a), _one_agent(run_b, traj_b)
    label_a, label_b = agent_a, agent_b
    if agent_a == agent_b:  # two runs of one agent: tell them apart by their folders
        label_a, label_b = f"{agent_a} ({run_a})", f"{agent_b} ({run_b})"
        traj_a = [t.model_copy(update={"agent": label_a}) for t in traj_a]
        traj_b = [t.model_copy(update={"agent": label_b}) for t in traj_b]
    for task_id in tasks_a.keys() & tasks_b.keys():
        if tasks_a[task_id] != tasks_b[task_id]:
            raise ValueError(f"task {task_id!r} differs between {run_a} and {run_b}: a paired comparison needs "
                             "the same tasks")
    tasks = {**tasks_a, **tasks_b}
    scores = {**score_by_agent(traj_a, tasks, success_threshold=success_threshold),
              **score_by_agent(traj_b, tasks, success_threshold=success_threshold)}
    comparison = compare(scores[label_a].simulations, scores[label_b].simulations, label_a, label_b)
    comparison.warnings = comparability_warnings(traj_a, traj_b)
    return ComparedRuns(comparison, scores, traj_a + traj_b)
