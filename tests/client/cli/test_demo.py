"""`shiftbox demo` runs the offline evaluation end to end."""

from __future__ import annotations

from shiftbox.cli.demo import DEMO_AGENTS, demo, demo_sample
from shiftbox.tasks import load_task_file
from shiftbox.trajectory import read_trajectories
from shiftbox_servers.kit import get_domain, task_domains


def test_demo_sample_has_every_persona_and_length_of_the_task_file():
    for domain in task_domains():
        tasks = load_task_file(get_domain(domain).default_snapshot_dir() / "tasks.json").tasks
        chosen = set(demo_sample(tasks))
        picked = [t for t in tasks if t.id in chosen]
        assert {t.user_scenario.persona for t in picked} == {t.user_scenario.persona for t in tasks}
        assert {len(t.goals) for t in picked} == {len(t.goals) for t in tasks}
        assert {(t.user_scenario.persona, len(t.goals)) for t in picked} == {
            (t.user_scenario.persona, len(t.goals)) for t in tasks}


def test_demo_runs_every_agent_and_writes_trajectories(tmp_path, capsys):
    demo(tmp_path)
    out = capsys.readouterr().out
    for domain in task_domains():
        for agent in DEMO_AGENTS:
            trajectories = read_trajectories(tmp_path / agent.split(":")[1] / domain)
            tasks = load_task_file(get_domain(domain).default_snapshot_dir() / "tasks.json").tasks
            assert len(trajectories) == len(demo_sample(tasks)) and {t.agent for t in trajectories} == {agent}
            assert {t.domain for t in trajectories} == {domain}
            assert {t.persona for t in trajectories} == {t.user_scenario.persona for t in tasks}
    assert "by agent" in out and "scripted:late_ack" in out and "95% CI" in out
    assert "by persona · scripted:late_ack" in out and "by persona · scripted:oracle" in out
    assert "compare · A = scripted:oracle · B = scripted:late_ack" in out
    for agent in DEMO_AGENTS:  # MMTB path evaluation, for each agent
        assert f"path accuracy by mission type x position (MMTB) · {agent}" in out
        assert f"path accuracy by type prefix (MMTB) · {agent}" in out
    report = tmp_path / "report.html"
    assert report.exists() and f"HTML report: {report.resolve()}" in out.replace("\n", "")
    html = report.read_text()
    assert html.count('class="data mission-table"') == html.count('class="data prefix-table"') == len(DEMO_AGENTS)
