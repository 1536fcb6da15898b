"""One (task, trial) of a plan, with an agent its caller makes: how Inspect's solver and the RL environments run a
simulation, on the run's own path (`_simulations`), without assembling a job themselves."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from ..agents import Agent
from ..tasks import Task
from ..trajectory import Trajectory
from ..world import CrossWorld, World
from ._plan import RunPlan
from ._simulations import RunHooks, SimulationJob, open_simulations


async def simulate_one(plan: RunPlan, task: Task, trial: int, make_agent: Callable[[], Agent], *,
                       world: World | CrossWorld | None = None, hooks: RunHooks | None = None,
                       run_tag: str | None = None) -> Trajectory:
    """Run `task`'s trial `trial` as `plan` says (its limits, seed, user, policy and infrastructure retries) with the
    agent `make_agent` makes, and return the trajectory; nothing is written. The simulation runs on `world` when
    given (a world its caller keeps open across simulations, opened with `RunHooks().world(plan.config)`), else on
    one `hooks` (default `RunHooks()`) open for it. `run_tag` begins its episode ids (default: a random tag, so no
    other program can name them)."""
    job = SimulationJob(plan.config, [(task, trial)], make_agent, plan.make_user, hooks or RunHooks(),
                        plan.options.retry_infra, run_tag=run_tag or "s" + secrets.token_hex(8))
    async with open_simulations(job, None, world=world) as simulate:
        return await simulate(task, trial)
