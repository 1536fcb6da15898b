"""A kept Ray actor ending a run (released, or its lease lapsed) forgets the values holding that run's API key."""

from __future__ import annotations

import asyncio

from shiftbox.runs import _ray

# No Ray import here (shiftbox.runs._ray imports none): a Ray imported by a test before the cluster fixtures set its
# environment broke their clusters' workers (a CI rehearsal hung on test_executors.py when this test imported it).


def test_a_kept_actor_ending_a_run_forgets_its_keys(monkeypatch):
    forgotten: list[bool] = []
    monkeypatch.setattr(_ray, "forget_api_keys", lambda: forgotten.append(True))

    async def no_world(self) -> None:  # the run's world is closed by SimulationActor.close: none was opened here
        return None

    monkeypatch.setattr(_ray.SimulationActor, "close", no_world)
    actor = _ray.KeptActor(idle_s=60)
    asyncio.run(actor._end())
    assert forgotten == [True]
