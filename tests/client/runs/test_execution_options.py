"""Issue 31 item 3: one execution-options object (`ExecutionOptions`) is what every caller builds and `execute_run`
takes, checked when made; a caller that brings its own agent (Inspect, an RL environment) plans with an
`ExternalAgent`, never a stand-in spec."""

from __future__ import annotations

import anyio
import pytest

import shiftbox
from shiftbox import ExecutionOptions, ExternalAgent, RunPlanError, plan_run
from shiftbox.runs import execute_run
from tests.client.harness import HANDWRITTEN


def test_the_options_resolve_the_executor_and_refuse_a_bad_value_naming_the_option():
    assert (ExecutionOptions().executor, ExecutionOptions().workers, ExecutionOptions().concurrency) == ("local", 1, 4)
    assert ExecutionOptions(workers=3).executor == "processes" and ExecutionOptions(workers=3).workers == 3
    with pytest.raises(RunPlanError, match=r"--concurrency \(concurrency\) 0: give a whole number, at least 1"):
        ExecutionOptions(concurrency=0)
    with pytest.raises(RunPlanError, match=r"--retry-infra \(retry_infra\) 'two': give a whole number"):
        ExecutionOptions(retry_infra="two")  # type: ignore[arg-type]  # what Inspect's -T (YAML) may hand over
    with pytest.raises(RunPlanError, match="--executor 'threads' is not one of local, processes, ray"):
        ExecutionOptions(executor="threads")  # type: ignore[arg-type]


def test_the_plan_carries_the_options_it_was_given_and_execute_run_takes_them(tmp_path):
    options = ExecutionOptions(concurrency=2, retry_infra=1)
    plan = plan_run(HANDWRITTEN, tmp_path / "run", task_ids=["hw_banking_001"], options=options)
    assert plan.options is options
    (tmp_path / "run").mkdir()
    written = anyio.run(lambda: execute_run(plan.config, plan.tasks, plan.out, plan.options,
                                            make_agent=plan.make_agent, make_user=plan.make_user, finished=set()))
    assert [t.simulation_id for t in written] == ["hw_banking_001#0"]


def test_an_external_agent_is_recorded_as_what_it_is_and_no_spec_is_made_for_it(tmp_path):
    plan = plan_run(HANDWRITTEN, tmp_path / "run", agent=ExternalAgent("my-policy"))
    assert plan.config.agent == "external:my-policy" and plan.external_agent and plan.agent_spec is None
    assert not plan_run(HANDWRITTEN, tmp_path / "run").external_agent  # the CLI's default, scripted:oracle
    with pytest.raises(RunPlanError, match="external:my-policy is brought by the plan's caller"):
        plan.make_agent()
    with pytest.raises(RunPlanError, match="external:my-policy is brought by the plan's caller"):
        shiftbox.run_evaluation(plan)
    assert not (tmp_path / "run").exists()


def test_an_external_agent_is_not_a_spec_the_command_line_can_name(tmp_path):
    with pytest.raises(RunPlanError, match="external"):
        plan_run(HANDWRITTEN, tmp_path / "run", agent="external:my-policy")
