"""Isolation against a hostile `cmd:` agent: it tries every way it can think of to act inside the
other simulations of its run (hostile_agent.py); none of its calls may land anywhere but its own episode."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.trajectory import read_trajectories
from shiftbox_servers.kit import DomainServer, Snapshot, get_domain
from tests.client.harness import HANDWRITTEN

AGENT = Path(__file__).with_name("hostile_agent.py")
TASK = "hw_banking_003"
TRIALS = 5


def replayed_digest(server: DomainServer, episode: str, trajectory) -> str:
    """The state the trajectory's recorded calls produce on a fresh episode (what it should have ended in)."""
    for record in [*trajectory.setup_calls, *trajectory.tool_calls]:
        server.run_tool(server.domain.tools.get(record.name), episode, dict(record.arguments))
    return server.episodes.get(episode).digest()


def hostile_run(out: Path, servers: str, trials: int = TRIALS, env: dict[str, str] | None = None):
    """`trials` concurrent simulations of the hostile agent written to `out`: the CLI's result, the trajectories
    and every intrusion found (a call of another simulation recorded, a final state holding writes the
    simulation never made, the agent's own call missing). Also `make attacks`' hostile round."""
    agent = "cmd:" + shlex.join([sys.executable, str(AGENT)])
    env = {"HOSTILE_RUN_DIR": str(out), "HOSTILE_TASK": TASK, **(env or {})}
    res = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", TASK,
                                   "--out", str(out), "--agent", agent, "--user", "scripted", "--servers", servers,
                                   "--trials", str(trials), "--concurrency", str(trials), "--max-steps", "6"], env=env)
    trajectories = read_trajectories(out) if (out / "trajectories.jsonl").exists() else []
    intrusions = []
    for t in trajectories:
        mine = {f"own-{t.seed}", f"probe-{t.seed}"}
        foreign = [c.arguments.get("current_task_id") for c in t.tool_calls
                   if c.arguments.get("current_task_id") not in mine]
        if foreign:
            intrusions.append(f"{t.simulation_id} (seed {t.seed}) recorded calls of others: {foreign}")
        if not any(c.arguments.get("current_task_id") == f"own-{t.seed}" and not c.is_error for c in t.tool_calls):
            intrusions.append(f"{t.simulation_id}: the agent's own call is missing ({t.termination})")
    # nothing reached an episode behind the recorder's back either: each final state is exactly what
    # the simulation's own recorded calls produce
    server = DomainServer(get_domain("banking"), Snapshot.load(get_domain("banking").default_snapshot_dir()))
    for t in trajectories:
        if t.final_state["banking"] != replayed_digest(server, f"check-{t.trial}", t):
            intrusions.append(f"{t.simulation_id} (seed {t.seed}): its final state holds writes it never made")
    return res, trajectories, intrusions


@pytest.mark.parametrize("servers", ["inproc", "http"])
def test_a_hostile_agent_cannot_act_inside_other_simulations(tmp_path, servers):
    res, trajectories, intrusions = hostile_run(tmp_path / "run", servers)
    assert res.exit_code == 0, res.output
    assert len(trajectories) == TRIALS
    assert not intrusions, "\n".join(intrusions)
