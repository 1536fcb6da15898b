"""`measure_run` is told whether the judge records or replays (`judge_cassettes`) rather than guessing it from the
judge's attributes: cassettes are kept per simulation of one agent's run, so a folder of several agents' runs is
refused with them, and only with them."""

from __future__ import annotations

import pytest

from shiftbox.metrics import Judge
from shiftbox.runs import measure_run, plan_run, run_evaluation
from tests.client.harness import HANDWRITTEN


class CassetteNamedJudge(Judge):
    """A judge of its own whose attribute happens to be called `cassettes`: it neither records nor replays."""

    name = "own"
    cassettes = ("a tape collection",)


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory):
    folder = tmp_path_factory.mktemp("two-agents")
    for agent in ("scripted:oracle", "scripted:late_ack"):
        run_evaluation(plan_run(HANDWRITTEN, folder / agent.split(":")[1], agent=agent, task_ids=["hw_banking_001"]))
    return folder


def test_a_folder_of_several_agents_is_scored_per_agent_with_a_judge_of_its_own(two_agents):
    scores = measure_run(two_agents, judge=CassetteNamedJudge())
    assert sorted(scores.agents) == ["scripted:late_ack", "scripted:oracle"]


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_judge_cassettes_take_one_agents_runs(two_agents, mode):
    with pytest.raises(ValueError, match="take one agent's runs"):
        measure_run(two_agents, judge=CassetteNamedJudge(), judge_cassettes=mode)
