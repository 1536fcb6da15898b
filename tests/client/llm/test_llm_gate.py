"""`--max-llm-concurrency`'s gates: at most `limit` live LLM calls in flight, counted where they arrive (the fake
server), across worker processes (forkserver) and across Ray actors; a replay from a cassette takes no slot, and
neither a cancelled waiter nor a killed worker loses a slot."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import signal
import threading
import time

import anyio
import pytest

from shiftbox.llm import (
    Cassette,
    LLMConnection,
    LLMRequest,
    LocalLlmGate,
    ProcessLlmGate,
    RayLlmGate,
    complete,
    use_cassette,
    use_llm_gate,
)
from shiftbox.testing import Reply, fake_openai

pytestmark = pytest.mark.anyio
HOLD_S = 0.2  # the fake server's answer time: long enough for every call of a batch to have been sent
FORKSERVER = multiprocessing.get_context("forkserver")


def llm_request(n: int) -> LLMRequest:
    return LLMRequest(role="agent", model="openai/fake-model", messages=[{"role": "user", "content": f"call {n}"}])


async def most_in_flight_at_the_server(gate: LocalLlmGate | None, calls: int = 8) -> int:
    """`calls` concurrent completions; the most requests the server was answering at once. A request is in flight
    from its arrival until its answer (each waits HOLD_S), so at an arrival the earlier ones that arrived less
    than HOLD_S before are still in flight: this can undercount, never overcount."""
    arrivals: list[float] = []
    most = 0

    def answer(body: dict) -> Reply:
        nonlocal most
        now = time.monotonic()
        arrivals.append(now)
        most = max(most, sum(1 for t in arrivals if now - t < HOLD_S))
        return Reply.text("ok", delay_s=HOLD_S)

    with fake_openai(answer) as server, use_llm_gate(gate):
        connection = LLMConnection(api_base=server.base_url)
        async with anyio.create_task_group() as tasks:
            for n in range(calls):
                tasks.start_soon(complete, llm_request(n), connection)
    assert len(server.requests) == calls and not server.errors
    return most


async def test_a_local_gate_keeps_the_calls_at_the_server_within_its_limit(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert await most_in_flight_at_the_server(None) > 2  # the measure sees more when nothing holds them back
    assert await most_in_flight_at_the_server(LocalLlmGate(2)) == 2


async def test_a_replay_takes_no_slot(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = tmp_path / "sim.jsonl"
    with fake_openai(["recorded"]) as server:
        with use_cassette(Cassette("sim", path, "record")):
            await complete(llm_request(0), LLMConnection(api_base=server.base_url))
        gate = LocalLlmGate(1)
        await gate.acquire()  # every slot taken
        with use_llm_gate(gate):
            with use_cassette(Cassette("sim", path, "replay")), anyio.fail_after(5):
                replayed = await complete(llm_request(0), LLMConnection(api_base=server.base_url))
            with anyio.move_on_after(0.3) as waited:  # a live call waits for the slot
                await complete(llm_request(1), LLMConnection(api_base=server.base_url))
    assert replayed["choices"][0]["message"]["content"] == "recorded"
    assert waited.cancelled_caught and len(server.requests) == 1


async def test_the_local_gate_serves_callers_from_another_event_loop():
    """The judge's calls run on a loop of their own thread, with the run's context (and gate)."""
    gate, order = LocalLlmGate(1), []
    await gate.acquire()

    def other_loop() -> None:
        async def take() -> None:
            async with gate.slot():
                order.append("other loop")
        asyncio.run(take())

    thread = threading.Thread(target=other_loop)
    thread.start()
    await anyio.sleep(0.05)
    order.append("released")
    await gate.release()
    await anyio.to_thread.run_sync(thread.join, 5)
    assert order == ["released", "other loop"]
    with anyio.fail_after(5):
        await gate.acquire()  # the other loop gave its slot back


@pytest.mark.parametrize("kind", ["local", "process", "ray"])
async def test_a_cancelled_waiter_loses_no_slot(kind, request):
    gate = LocalLlmGate(1) if kind == "local" else ProcessLlmGate(1) if kind == "process" else None
    if gate is None:
        request.getfixturevalue("ray_cluster")
        gate = RayLlmGate(1)
    await gate.acquire()
    with anyio.move_on_after(0.2) as waited:
        await gate.acquire()
    assert waited.cancelled_caught
    await gate.release()
    with anyio.fail_after(10):
        async with gate.slot():
            pass
        await gate.acquire()


# -- worker processes ------------------------------------------------------------------------------------------


def hold_slots(gates: list[ProcessLlmGate], holders, most, lock, concurrent: int = 4, cycles: int = 3) -> None:
    """A worker: for each gate in turn, `concurrent` tasks each take a slot `cycles` times; `holders[i]` counts the
    holders of gate i in every process, `most[i]` the most at once."""

    async def cycle(i: int) -> None:
        for _ in range(cycles):
            async with gates[i].slot():
                with lock:
                    holders[i] += 1
                    most[i] = max(most[i], holders[i])
                await anyio.sleep(0.03)
                with lock:
                    holders[i] -= 1

    async def main() -> None:
        for i in range(len(gates)):
            async with anyio.create_task_group() as tasks:
                for _ in range(concurrent):
                    tasks.start_soon(cycle, i)

    anyio.run(main)


def test_a_process_gate_holds_two_worker_processes_to_its_limit():
    gates = [ProcessLlmGate(8), ProcessLlmGate(3)]
    lock = FORKSERVER.Lock()
    holders, most = FORKSERVER.Array("i", len(gates), lock=False), FORKSERVER.Array("i", len(gates), lock=False)
    workers = [FORKSERVER.Process(target=hold_slots, args=(gates, holders, most, lock)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert most[0] > 3  # the count sees more than a limit of 3 when the gate allows it …
    assert most[1] == 3  # … and never more than 3 under a gate of 3


def take_slot_and_wait(gate: ProcessLlmGate, taken) -> None:
    async def main() -> None:
        await gate.acquire()
        taken.set()
        await anyio.sleep(60)

    anyio.run(main)


async def test_a_killed_worker_frees_its_slot():
    gate, taken = ProcessLlmGate(1), FORKSERVER.Event()
    worker = FORKSERVER.Process(target=take_slot_and_wait, args=(gate, taken))
    worker.start()
    try:
        assert await anyio.to_thread.run_sync(taken.wait, 30)
        with anyio.move_on_after(0.2) as waited:
            await gate.acquire()
        assert waited.cancelled_caught  # the worker holds the only slot
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        await anyio.to_thread.run_sync(worker.join, 10)
    with anyio.fail_after(5):
        await gate.acquire()


def test_a_process_gate_pickles_to_its_slot_files():
    gate = ProcessLlmGate(2)
    copy = pickle.loads(pickle.dumps(gate))
    assert (copy.limit, copy.directory) == (2, gate.directory)


def test_a_limit_is_at_least_one():
    for limit in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="whole number >= 1"):
            LocalLlmGate(limit)


# -- Ray --------------------------------------------------------------------------------------------------------




def test_a_ray_gate_holds_two_actors_to_its_limit(ray_cluster):
    """Two Ray actors, each with 4 tasks taking a slot 3 times; a third actor counts the holders. (The classes
    are made here so that Ray sends them by value: Ray's workers cannot import the tests.)"""
    ray = ray_cluster

    class Meter:
        def __init__(self) -> None:
            self.holders = self.most = 0

        def enter(self) -> None:
            self.holders += 1
            self.most = max(self.most, self.holders)

        def leave(self) -> None:
            self.holders -= 1

        def most_then_reset(self) -> int:
            most, self.most = self.most, 0
            return most

    class Holder:
        async def run(self, gate: RayLlmGate, meter, concurrent: int = 4, cycles: int = 3) -> None:
            async def cycle() -> None:
                for _ in range(cycles):
                    async with gate.slot():
                        await meter.enter.remote()
                        await asyncio.sleep(0.05)
                        await meter.leave.remote()

            await asyncio.gather(*(cycle() for _ in range(concurrent)))

    meter = ray.remote(num_cpus=0)(Meter).remote()
    holders = [ray.remote(num_cpus=0)(Holder).remote() for _ in range(2)]

    def most_holders(gate: RayLlmGate) -> int:
        ray.get([holder.run.remote(gate, meter) for holder in holders], timeout=120)
        return ray.get(meter.most_then_reset.remote())

    assert most_holders(RayLlmGate(8)) > 3  # the count sees more than a limit of 3 when the gate allows it …
    assert most_holders(RayLlmGate(3)) == 3  # … and never more than 3 under a gate of 3


async def test_the_slots_of_a_dead_ray_actor_can_be_freed(ray_cluster):
    ray = ray_cluster

    class Taker:
        async def take(self, gate: RayLlmGate) -> str:
            await gate.acquire()
            return ray.get_runtime_context().get_actor_id()

    gate = RayLlmGate(1)
    taker = ray.remote(num_cpus=0)(Taker).remote()
    actor_id = await taker.take.remote(gate)
    ray.kill(taker)
    with anyio.move_on_after(0.3) as waited:
        await gate.acquire()
    assert waited.cancelled_caught  # the dead actor still holds the only slot …
    assert await gate.release_slots_of(actor_id) == 1
    with anyio.fail_after(10):
        await gate.acquire()  # … until it is freed
