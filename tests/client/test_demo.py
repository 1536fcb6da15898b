"""`shiftbox demo` runs the offline evaluation end to end."""

from __future__ import annotations

from shiftbox._demo import DEMO_AGENTS, DEMO_DOMAINS, demo
from shiftbox._run import read_trajectories


def test_demo_runs_every_agent_and_writes_trajectories(tmp_path, capsys):
    demo(tmp_path)
    out = capsys.readouterr().out
    for domain in DEMO_DOMAINS:
        for agent in DEMO_AGENTS:
            trajectories = read_trajectories(tmp_path / f"{domain}-{agent.split(':')[1]}")
            assert len(trajectories) == 15 and {t.agent for t in trajectories} == {agent}
            assert {t.domain for t in trajectories} == {domain}
    assert "by domain" in out and "late_ack" in out
    assert "by agent" in out and "scripted:late_ack" in out          # the metrics table compares them
    report = tmp_path / "report.html"
    assert report.exists() and f"HTML report: {report.resolve()}" in out.replace("\n", "")
