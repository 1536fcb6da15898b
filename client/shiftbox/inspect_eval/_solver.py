"""The solver: one shiftbox simulation per Inspect sample, run by shiftbox's own run path."""

from __future__ import annotations

import secrets

from inspect_ai.model import ChatMessageSystem, ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ..runs import RunPlan, simulate_one
from ..tasks import Task
from ..trajectory import Trajectory
from ._agent import InspectModelAgent
from ._convert import chat_messages

TASK_KEY = "shiftbox_task"
"""Sample metadata: the shiftbox task (JSON), so the log alone can be scored again (`inspect score`)."""
TRAJECTORY_KEY = "shiftbox_trajectory"
"""Sample store: the simulation's shiftbox trajectory (JSON), exactly as `trajectories.jsonl` would hold it."""


def sample_trajectory(state: TaskState) -> Trajectory:
    """The trajectory the solver stored in the sample (KeyError when the solver did not run)."""
    return Trajectory.model_validate(state.store.get(TRAJECTORY_KEY) or state.metadata[TRAJECTORY_KEY])


@solver
def simulation(plan: RunPlan) -> Solver:
    """Run the sample's task as one shiftbox simulation: a fresh episode on the domain's server, shiftbox's user
    simulator playing the customer and the eval's model as the agent (`InspectModelAgent`). Epoch e is trial
    e - 1, so seeds and episode ids are those `shiftbox run --trials` gives. The trajectory goes to the sample's
    store and metadata; the conversation becomes the sample's messages. An Inspect limit the model hit ends the
    simulation (an agent error, as shiftbox's `max_steps` is the agent's) and is raised once the trajectory is
    stored, so Inspect records the limit and scores the sample as usual."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = Task.model_validate(state.metadata[TASK_KEY])
        trial = state.epoch - 1
        model = get_model()
        agents: list[InspectModelAgent] = []

        def make_agent() -> InspectModelAgent:
            agents.append(InspectModelAgent(model))
            return agents[-1]

        trajectory = await simulate_one(plan, task, trial, make_agent, run_tag="inspect" + secrets.token_hex(6))
        agents[-1].note_goal_shifts(trajectory.messages)
        recorded = trajectory.model_dump(mode="json")
        state.store.set(TRAJECTORY_KEY, recorded)
        state.metadata[TRAJECTORY_KEY] = recorded
        state.messages = [ChatMessageSystem(content=agents[-1].system_prompt), *chat_messages(trajectory.messages)]
        last = next((m.content for m in reversed(trajectory.messages) if m.role == "assistant" and m.content), "")
        state.output = ModelOutput.from_content(str(model), last)
        if agents[-1].limit is not None:
            raise agents[-1].limit
        return state

    return solve
