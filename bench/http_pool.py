"""The fast path's HTTP transport under concurrency: CPU per LLM completion of the harness against raw httpx, and
simulations per second, at each concurrency, against the fake server of `llm_throughput.py` (its own process).

    uv run --no-sync python bench/http_pool.py [--concurrency 1 8 64 256] [--simulations 256] [--repeat 2]
                                              [--pools stack httpx]

Per repeat, concurrency c and pool (interleaved, so a busy spell on the shared machine falls on every row):
- harness: `llm_throughput.run_once` (the real `execute_run`, fast path, c simulations at a time); this process's
  CPU per completion and sims/s; with the fast path's pool (`stack`, the default) or, to compare, httpx's own
  pool with the limits the fast path had before it (`httpx`), chosen with `SHIFTBOX_HTTP_POOL`; and the fake
  server's CPU per completion in its own process (when it nears a core, it, not the harness, sets sims/s);
- raw httpx: c tasks posting an agent-sized body (the banking policy and tools) through one `httpx.AsyncClient`
  with the harness's limits and parsing each reply, `--completions` in all; this process's CPU per completion.
The load average is printed beside each row: the machine is shared, so read figures next to it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from llm_throughput import (  # noqa: E402  (bench/ is not a package)
    ASK,
    CUSTOMERS,
    KEY_ENV,
    LLM_CALLS_PER_SIM,
    MODEL,
    bench_tasks,
    fake_server_process,
    run_once,
)


async def agent_body() -> bytes:
    """An agent-sized request body: the banking policy as system prompt, its tools, one user message."""
    from shiftbox.agents import tool_schema
    from shiftbox.world import open_world
    from shiftbox_servers.kit import get_domain

    async with open_world("banking") as world:
        tools = [tool_schema(t) for t in world.tools]
    messages = [{"role": "system", "content": get_domain("banking").policy},
                {"role": "user", "content": ASK.format(customer=CUSTOMERS[0])}]
    return json.dumps({"model": MODEL.partition("/")[2], "messages": messages, "tools": tools},
                      ensure_ascii=False, separators=(",", ":")).encode()


async def raw_httpx(base_url: str, body: bytes, concurrency: int, completions: int) -> dict[str, float]:
    """CPU ms per completion of `concurrency` tasks sharing one `httpx.AsyncClient` (the harness's former limits)."""
    import httpx

    headers = {"Authorization": f"Bearer {os.environ[KEY_ENV]}", "Content-Type": "application/json"}
    url = f"{base_url}/chat/completions"
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
    async with httpx.AsyncClient(limits=limits) as client:
        async def worker(n: int) -> None:
            for _ in range(n):
                (await client.post(url, content=body, headers=headers)).json()

        async def burst(total: int) -> tuple[float, float]:
            start, cpu = time.perf_counter(), time.process_time()
            share, extra = divmod(total, concurrency)
            await asyncio.gather(*(worker(share + (i < extra)) for i in range(concurrency)))
            return time.perf_counter() - start, time.process_time() - cpu

        await burst(max(2 * concurrency, 20))  # connections opened, code warm
        seconds, cpu_s = await burst(completions)
    return {"raw_cpu_ms": round(1000 * cpu_s / completions, 3), "raw_per_s": round(completions / seconds, 1)}


async def harness(base_url: str, task_file, trials: int, concurrency: int, run_dir: Path,
                  pool: str) -> dict[str, float]:
    """This process's CPU ms per completion and sims/s of one fast-path run at `concurrency` over `pool`: run on an
    event loop of its own (in a thread), so the fast path makes its client for it with `SHIFTBOX_HTTP_POOL=pool`."""
    os.environ["SHIFTBOX_HTTP_POOL"] = pool
    start, cpu = time.perf_counter(), time.process_time()  # this process's every thread: the run's is the busy one
    try:
        run = await anyio.to_thread.run_sync(
            lambda: anyio.run(run_once, base_url, task_file, trials, concurrency, run_dir, True))
    finally:
        del os.environ["SHIFTBOX_HTTP_POOL"]
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    n = len(run["trajectories"])
    return {"harness_cpu_ms": round(1000 * cpu_s / (n * LLM_CALLS_PER_SIM), 3),
            "sims_per_s": round(n / seconds, 1), "simulations": n}


async def bench(concurrencies: tuple[int, ...], simulations: int, repeat: int, completions: int,
                pools: tuple[str, ...]) -> list[dict]:
    from shiftbox.llm import import_litellm

    os.environ.setdefault(KEY_ENV, "sk-fake-bench-key")
    import_litellm()
    task_file = bench_tasks()
    body = await agent_body()
    rows = []
    with fake_server_process() as server, tempfile.TemporaryDirectory() as tmp:
        await run_once(server.base_url, task_file.model_copy(update={"tasks": task_file.tasks[:2]}), 1, 1,
                       Path(tmp) / "warmup", True)
        for r in range(repeat):
            for c in concurrencies:
                raw = await raw_httpx(server.base_url, body, c, completions)
                trials = -(-max(simulations, c) // len(task_file.tasks))  # at least c simulations: all c in flight
                for pool in pools:
                    load = os.getloadavg()[0]
                    server_cpu_s = server.cpu_s()
                    row = {"repeat": r + 1, "concurrency": c, "pool": pool,
                           **await harness(server.base_url, task_file, trials, c, Path(tmp) / f"r{r}-c{c}-{pool}", pool),
                           **raw, "load_avg_1m": round(load, 2)}
                    row["server_cpu_ms"] = round(1000 * (server.cpu_s() - server_cpu_s)
                                                 / (row["simulations"] * LLM_CALLS_PER_SIM), 3)
                    row["harness_over_raw"] = round(row["harness_cpu_ms"] / row["raw_cpu_ms"], 2)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--simulations", type=int, default=100,
                        help="per harness row (10 tasks x trials; at least the concurrency)")
    parser.add_argument("--completions", type=int, default=2000, help="per raw httpx row")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pools", nargs="+", choices=["stack", "httpx"], default=["stack", "httpx"])
    args = parser.parse_args()
    anyio.run(bench, tuple(args.concurrency), args.simulations, args.repeat, args.completions, tuple(args.pools))
    return 0


if __name__ == "__main__":
    sys.exit(main())
