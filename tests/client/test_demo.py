"""`shiftbox demo` runs the offline evaluation end to end."""

from __future__ import annotations

from shiftbox._demo import DEMO_AGENTS, demo
from shiftbox._run import read_trajectories


def test_demo_runs_every_agent_and_writes_trajectories(tmp_path, capsys):
    demo(tmp_path)
    out = capsys.readouterr().out
    for agent in DEMO_AGENTS:
        variant = agent.split(":")[1]
        trajectories = read_trajectories(tmp_path / variant)
        assert len(trajectories) == 10 and {t.agent for t in trajectories} == {agent}
        assert agent in out
    assert "hw_banking_005#1" in out
    assert "by agent" in out and "scripted:late_ack" in out          # the metrics table compares them
    report = tmp_path / "report.html"
    assert report.exists() and f"HTML report: {report.resolve()}" in out.replace("\n", "")
