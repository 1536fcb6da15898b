"""`make bench` section: end-to-end simulations per second, LLM agent + LLM user through the LLM boundary,
on its fast path for OpenAI-compatible endpoints and on the litellm path (`fast_path=false`), side by side.

    uv run python bench/llm_throughput.py [--simulations 100] [--concurrency 1 8 64] [--profile 20]

Both roles are `litellm:openai/fake-model`, run by the real harness path (`execute_run`, the
function behind `shiftbox run`, with the registry's agent and user factories and `api_base=` /
`api_key_env=` options, in-process banking server, results appended to trajectories.jsonl) against
the project's fake OpenAI-compatible server playing the scripted conversation of
shared/spec/performance.md. The fake server runs in its own process (`--serve`), like a remote
model: its work does not compete with the harness for this process's interpreter lock.

The scripted conversation (`Conversation`, a deterministic function of each request body):
the user asks for help (giving its customer id); the agent greets, calls get_customer_by_id for
that customer and, on the tool result, answers "Done. Is there anything else I can help with?";
after the user has spoken 5 times it sends ###STOP###. 16 LLM calls (6 user, 10 agent) and 5 tool
calls per simulation, as in the reference harness. shiftbox's user opens the conversation, so the
reference harness's first message, a fixed greeting that costs no LLM call, has no counterpart: the
agent's greeting goes with its first reply, and a simulation has 21 messages where the reference's
has 22 (the same LLM and tool work). Every trajectory's shape is checked before a figure counts.

Where the time goes, per simulation: `Trajectory.timing` holds `llm_s` (inside the LLM boundary,
`shiftbox.llm.complete`) and `mcp_s` (tool calls and the closing state read) next to `wall_s`; the
time spent appending the result (`ResultWriter.append`) is measured here around the writer. The
harness's share is the rest. litellm's import is done (and timed, in a fresh interpreter) before
any simulation, so it is reported but not part of any rate.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from shiftbox_servers.kit import get_domain

MODEL = "openai/fake-model"
SPEC = f"litellm:{MODEL}"
KEY_ENV = "SHIFTBOX_BENCH_FAKE_KEY"
CUSTOMERS = [f"cust_{i:04d}" for i in range(1, 11)]  # existing banking customers, one task each
USER_TURNS = 5
ASK = "Hi, I need some help with my profile. My customer id is {customer}."
GREETING = "Hi! How can I help you today? Let me look up your profile."
DONE = "Done. Is there anything else I can help with?"
STOP = "No, that is all. Thank you! ###STOP###"
LLM_CALLS_PER_SIM = 2 * USER_TURNS + USER_TURNS + 1
# The reference harness (AgentChangeBench's tau2 fork on litellm 1.106), same fake server and conversation,
# concurrency 8, measured on this machine when issue 18 was filed; its code is not in ../shared, so the
# figure is recorded here and every row gives its ratio to it.
REFERENCE_SIMS_PER_S_C8 = 2.28
WORKERS = 2
PATHS = {True: "fast path (httpx)", False: "litellm path (fast_path=false)"}
CUSTOMER_ID = re.compile(r"cust_\d{4}")
EXPECTED = {"messages": 2 * USER_TURNS + 1 + 2 * USER_TURNS, "tool_calls": USER_TURNS,
            "agent_llm_calls": 2 * USER_TURNS, "user_llm_calls": USER_TURNS + 1}


class Conversation:
    """The fake model's script: one reply per request, decided by the request body alone."""

    def __call__(self, body: dict[str, Any]) -> Any:
        from shiftbox.testing.fake_openai import Reply

        messages = body.get("messages") or []
        system = (messages[0].get("content") or "") if messages and messages[0].get("role") == "system" else ""
        if "What you know:" in system:  # the LLM user simulator's prompt (see shiftbox.users._llm)
            spoken = sum(m.get("role") == "assistant" for m in messages)  # its own earlier messages
            if spoken < USER_TURNS:
                return Reply.text(ASK.format(customer=CUSTOMER_ID.search(system).group()))
            return Reply.text(STOP)
        last = messages[-1]
        if last.get("role") == "tool":
            return Reply.text(DONE)
        customer = CUSTOMER_ID.search(last.get("content") or "").group()
        first = not any(m.get("role") == "assistant" for m in messages)
        return Reply.tool_call("get_customer_by_id", {"customer_id": customer},
                               content=GREETING if first else None)


def serve() -> int:
    """`--serve`: run the fake server with `Conversation`, print its base URL, stop when stdin closes."""
    from shiftbox.testing.fake_openai import FakeOpenAI

    class Forgetful(FakeOpenAI):  # keeps no request log: thousands of requests would only grow memory
        def _next(self, body, headers):
            n, reply = super()._next(body, headers)
            with self._lock:
                self.requests.clear(), self.headers.clear(), self.replies.clear()
            return n, reply

    server = Forgetful(Conversation()).start()
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()
    for error in server.errors:
        print(error, file=sys.stderr)
    return 1 if server.errors else 0


@dataclass(frozen=True)
class FakeServerProcess:
    base_url: str
    pid: int

    def cpu_s(self) -> float:
        """The fake server's CPU time so far (utime + stime): the model's share of the machine's two cores."""
        from http_load import cpu_seconds  # bench/ is on the path, as for run.py's sections

        return cpu_seconds(self.pid)


@contextlib.contextmanager
def fake_server_process() -> Iterator[FakeServerProcess]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError(f"the fake server did not start (it printed {base_url!r})")
        yield FakeServerProcess(base_url, proc.pid)
    finally:
        proc.stdin.close()
        if proc.wait(timeout=30) != 0:
            raise RuntimeError("the fake server reported errors (see stderr)")


def litellm_import_seconds() -> float:
    """Cold import of litellm the way shiftbox does it (`shiftbox.llm.import_litellm`), fresh interpreter."""
    code = ("import time; t = time.perf_counter(); from shiftbox.llm import import_litellm; "
            "import_litellm(); print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def bench_tasks():
    """One minimal banking task per customer: a single goal, the customer id as what the user knows."""
    from shiftbox.tasks import TaskFile

    tasks = [{
        "id": f"llm_bench_{customer}", "domain": "banking",
        "user_scenario": {"persona": "EASY_1",
                          "instructions": {"reason_for_call": "You want your profile checked.",
                                           "known_info": f"Your customer id is {customer}."},
                          "goal_shifts": {"required_shifts": 0, "goals": ["profile"]}},
        "evaluation_criteria": {"action_sets": [{"action_id": "lookup", "goal": "profile", "allowed_tools": [
            {"function_name": "get_customer_by_id", "params": {"customer_id": customer}}]}]},
    } for customer in CUSTOMERS]
    return TaskFile.model_validate({"domain": "banking", "snapshot": "banking/v1",
                                    "source": "bench/llm_throughput.py", "tasks": tasks})


class WriteClock:
    """Wall time spent in `ResultWriter.append` during a run (the writer is swapped for a timed one)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.writes = 0

    @contextlib.contextmanager
    def installed(self) -> Iterator[WriteClock]:
        from shiftbox.trajectory import TrajectoryWriter

        original, clock = TrajectoryWriter.append, self

        async def timed_append(writer, trajectory) -> None:
            start = time.perf_counter()
            try:
                await original(writer, trajectory)
            finally:
                clock.seconds += time.perf_counter() - start
                clock.writes += 1

        TrajectoryWriter.append = timed_append  # type: ignore[method-assign]
        try:
            yield self
        finally:
            TrajectoryWriter.append = original  # type: ignore[method-assign]


def shape_problems(trajectory) -> list[str]:
    """How a trajectory differs from the scripted conversation (empty: it is exactly that)."""
    usage = trajectory.usage
    seen = {"messages": len(trajectory.messages), "tool_calls": len(trajectory.tool_calls),
            "agent_llm_calls": usage["agent"].calls if "agent" in usage else 0,
            "user_llm_calls": usage["user"].calls if "user" in usage else 0}
    problems = [f"{k}={seen[k]} (expected {v})" for k, v in EXPECTED.items() if seen[k] != v]
    roles = [m.role for m in trajectory.messages]
    if roles != ["user", "assistant", "tool", "assistant"] * USER_TURNS + ["user"]:
        problems.append(f"message roles {roles}")
    if trajectory.termination.reason != "user_stop":
        problems.append(f"ended {trajectory.termination.reason}: {trajectory.termination.detail}")
    if any(c.is_error or c.name != "get_customer_by_id" for c in trajectory.tool_calls):
        problems.append("a tool call failed or is not get_customer_by_id")
    if trajectory.messages and trajectory.messages[-2].content != DONE:
        problems.append("the agent's last answer is not the scripted one")
    return problems


class ScriptFailure(RuntimeError):
    """Some simulations of a run are not the scripted conversation: no figure of that run counts."""


def script_failure(trajectories: list, expected: int) -> str | None:
    """What went wrong in a run, for the bench's failure message (None: every simulation is the script)."""
    bad = {t.simulation_id: (t, p) for t in trajectories if (p := shape_problems(t))}
    if not bad and len(trajectories) == expected:
        return None
    ends = Counter(f"{t.termination.reason}: {t.termination.detail}" for t, _ in bad.values())
    message = f"{len(bad)} of {len(trajectories)} simulations (of {expected} expected) are not the scripted conversation"
    if ends:
        (end, times), = ends.most_common(1)
        first, (_, problems) = next(iter(bad.items()))
        message += f"; most frequent termination ({times}x): {end}; e.g. {first}: {'; '.join(problems)}"
    return message


async def run_once(base_url: str, task_file, trials: int, concurrency: int, run_dir: Path,
                   fast_path: bool = True, workers: int = 1, record: Path | None = None) -> dict[str, Any]:
    """One `shiftbox run`-equivalent: execute_run with litellm agent and user; timings and checks.
    `fast_path=False` sends every call through litellm's own stack (the option `fast_path=false`);
    `workers` > 1 runs the simulations in that many processes, as `shiftbox run --workers` does."""
    from functools import partial
    from importlib.metadata import version

    from shiftbox import agent_from_spec, user_from_spec
    from shiftbox.runs import (
        ExecutionOptions,
        RecordHooks,
        RunConfig,
        RunMetadata,
        execute_run,
        finish_fixture,
        prepare_run_dir,
        task_file_digest,
    )

    options = {"api_base": base_url, "api_key_env": KEY_ENV, "max_retries": "0", "fast_path": str(fast_path).lower()}
    config = RunConfig(domain="banking", tasks_sha256=task_file_digest(task_file), agent=SPEC,
                       agent_args=options, user=SPEC, user_args=options, trials=trials, seed=0,
                       snapshot=str(get_domain("banking").default_snapshot_dir()))
    prepare_run_dir(run_dir, RunMetadata(config=config, shiftbox_version=version("shiftbox"),
                                         simulations=len(task_file.tasks) * trials), task_file, resume=False)
    with WriteClock().installed() as writes:
        start, cpu_start = time.perf_counter(), time.process_time()
        trajectories = await execute_run(config, task_file.tasks, run_dir,
                                         ExecutionOptions(concurrency=concurrency, workers=workers),
                                         make_agent=partial(agent_from_spec, SPEC, options),
                                         make_user=partial(user_from_spec, SPEC, options), finished=set(),
                                         hooks=RecordHooks(record) if record is not None else None)
        seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    if record is not None:
        finish_fixture(record, run_dir)
    failure = script_failure(trajectories, len(task_file.tasks) * trials)
    if failure:
        raise ScriptFailure(f"{PATHS[fast_path]}, concurrency {concurrency}: {failure}")
    return {"seconds": seconds, "trajectories": trajectories, "write_s": writes.seconds, "cpu_s": cpu_s,
            "workers": workers if workers > 1 else 0}


def split(run: dict[str, Any]) -> dict[str, float]:
    """Percent of the summed per-simulation time (its wall time plus appending its result)."""
    trajectories = run["trajectories"]
    wall = sum(t.timing["wall_s"] for t in trajectories)
    llm = sum(t.timing.get("llm_s", 0.0) for t in trajectories)
    mcp = sum(t.timing.get("mcp_s", 0.0) for t in trajectories)
    total = wall + run["write_s"]
    return {"llm_pct": round(100 * llm / total, 1), "mcp_pct": round(100 * mcp / total, 1),
            "harness_pct": round(100 * (wall - llm - mcp) / total, 1),
            "write_pct": round(100 * run["write_s"] / total, 1),
            "ms_per_sim": round(1000 * total / len(trajectories), 2),
            # this process's CPU: with workers it does not do the simulations, so the figure would mean nothing
            **({"cpu_ms_per_completion": round(1000 * run["cpu_s"] / (len(trajectories) * LLM_CALLS_PER_SIM), 2)}
               if not run.get("workers") else {})}


async def replay_against_live(base_url: str, task_file, trials: int, tmp: Path) -> dict[str, Any]:
    """The same simulations live (fast path, recorded as a fixture, concurrency 8, one process) and replayed from
    that fixture (`shiftbox replay`, tools re-executed, no network), side by side."""
    from shiftbox.replay import replay_fixture

    live = await run_once(base_url, task_file, trials, 8, tmp / "live", True, record=tmp / "fixture")
    start = time.perf_counter()
    replayed = await anyio.to_thread.run_sync(replay_fixture, tmp / "fixture", tmp / "replayed")
    replay_s = time.perf_counter() - start
    if not replayed.identical:
        raise ScriptFailure(f"the replay of the recorded live run differs: {replayed.failed or replayed.problems[:3]}")
    n = len(live["trajectories"])
    return {"bench": "replay vs live, the same LLM simulations (fast path recorded at concurrency 8, replayed with "
                     "`shiftbox replay`, tools re-executed, verification included)",
            "simulations": n, "live_sims_per_s": round(n / live["seconds"], 1),
            "replay_sims_per_s": round(replayed.simulations / replay_s, 1),
            "replay_over_live": round(live["seconds"] / replay_s, 2)}


async def raw_httpx_cpu_ms(base_url: str, n: int = 300) -> float:
    """The floor: this process's CPU ms per completion for raw `httpx.AsyncClient` posting an agent-sized body
    (the banking policy and tools, one user message) to the same fake server and parsing the JSON reply."""
    import httpx

    from shiftbox.agents import tool_schema
    from shiftbox.world import open_world

    async with open_world("banking") as world:
        tools, policy = [tool_schema(t) for t in world.tools], get_domain("banking").policy
    body = json.dumps({"model": MODEL.partition("/")[2], "messages": [
        {"role": "system", "content": policy}, {"role": "user", "content": ASK.format(customer=CUSTOMERS[0])}],
        "tools": tools}, ensure_ascii=False, separators=(",", ":")).encode()
    headers = {"Authorization": f"Bearer {os.environ[KEY_ENV]}", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as client:
        for warm_up in (True, False):
            start = time.process_time()
            for _ in range(20 if warm_up else n):
                (await client.post(f"{base_url}/chat/completions", content=body, headers=headers)).json()
    return round(1000 * (time.process_time() - start) / n, 2)


def profile_summary(profile: cProfile.Profile, seconds: float, top: int = 8) -> dict[str, Any]:
    """Where the process's own (on-CPU, in Python) time went during a profiled run, grouped by package."""
    stats = pstats.Stats(profile)
    groups: dict[str, float] = {}
    functions = []
    for (filename, line, name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        path = filename.replace("\\", "/")
        if "/litellm/" in path:
            group = "litellm"
        elif "/httpx/" in path or "/httpcore/" in path or "/h11/" in path:
            group = "httpx"
        elif "/openai/" in path:
            group = "openai sdk"
        elif "/pydantic" in path:
            group = "pydantic"
        elif "/shiftbox_servers/" in path or "/mcp/" in path or "/mcp_types/" in path:
            group = "mcp + servers"
        elif "/shiftbox/" in path:
            group = "shiftbox"
        elif name in ("<method 'poll' of 'select.epoll' objects>", "<method 'select' of 'select.epoll' objects>"):
            group = "waiting (epoll)"
        else:
            group = "other (stdlib, asyncio, json, ...)"
        groups[group] = groups.get(group, 0.0) + tottime
        functions.append((tottime, f"{Path(filename).name}:{line}({name})"))
    functions.sort(reverse=True)
    return {"seconds": round(seconds, 2),
            "self_time_pct": {g: round(100 * s / seconds, 1) for g, s in sorted(groups.items(), key=lambda x: -x[1])},
            "top_functions": [f"{name} {round(100 * s / seconds, 1)}%" for s, name in functions[:top]]}


async def bench_llm_throughput(simulations: int = 100, concurrencies: tuple[int, ...] = (1, 8, 64),
                               profile_simulations: int = 0) -> tuple[list[dict], dict[str, Any]]:
    """Rows for the report, plus the profile summary (when asked for) as a detail."""
    from shiftbox.llm import import_litellm

    os.environ.setdefault(KEY_ENV, "sk-fake-bench-key")
    import_seconds = litellm_import_seconds()
    import_litellm()  # here too, before any timing
    task_file = bench_tasks()
    trials = max(1, simulations // len(task_file.tasks))
    rows: list[dict] = []
    detail: dict[str, Any] = {"litellm_import_s": round(import_seconds, 2)}
    with fake_server_process() as server, tempfile.TemporaryDirectory() as tmp:
        base_url = server.base_url
        for fast in PATHS:  # litellm sets up its clients on first use, the fast path its pool
            warm = await run_once(base_url, task_file.model_copy(update={"tasks": task_file.tasks[:2]}), 1, 1,
                                  Path(tmp) / f"warmup-{fast}", fast)
            detail[f"warmup_2_sims_s ({PATHS[fast]})"] = round(warm["seconds"], 2)
        # the fork server (which imports litellm once) and a first pair of workers, before any timing
        await run_once(base_url, task_file.model_copy(update={"tasks": task_file.tasks[:2]}), 1, 2,
                       Path(tmp) / "warmup-workers", True, WORKERS)
        detail["raw_httpx_cpu_ms_per_completion"] = await raw_httpx_cpu_ms(base_url)
        for concurrency in concurrencies:
            runs = [(fast, 1) for fast in PATHS] + ([(True, WORKERS)] if concurrency >= WORKERS else [])
            for fast, workers in runs:  # side by side, paired per concurrency
                server_cpu_s = server.cpu_s()
                run = await run_once(base_url, task_file, trials, concurrency,
                                     Path(tmp) / f"c{concurrency}-{fast}-w{workers}", fast, workers)
                n = len(run["trajectories"])
                server_ms = round(1000 * (server.cpu_s() - server_cpu_s) / (n * LLM_CALLS_PER_SIM), 2)
                sims_per_s = n / run["seconds"]
                rows.append({"bench": f"LLM agent + LLM user, {PATHS[fast]} (fake server), scripted conversation, "
                                      f"concurrency {concurrency}" + (f", --workers {workers}" if workers > 1 else ""),
                             "simulations": n, "seconds": round(run["seconds"], 2), "sims_per_s": round(sims_per_s, 1),
                             "x_reference_c8": round(sims_per_s / REFERENCE_SIMS_PER_S_C8, 1), **split(run),
                             "fake_server_cpu_ms_per_completion": server_ms})
        rows.append(await replay_against_live(base_url, task_file, trials, Path(tmp)))
        if profile_simulations:
            for fast in PATHS:
                profile = cProfile.Profile()
                small = task_file.model_copy(update={"tasks": task_file.tasks[:1]})
                start = time.perf_counter()
                profile.enable()
                await run_once(base_url, small, profile_simulations, 1, Path(tmp) / f"profile-{fast}", fast)
                profile.disable()
                detail[f"profile_concurrency_1 ({PATHS[fast]})"] = profile_summary(profile, time.perf_counter() - start)
    rows[0]["litellm_import_s"] = detail["litellm_import_s"]
    return rows, detail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--simulations", type=int, default=100, help="per concurrency level")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also cProfile N simulations at concurrency 1 and print where the time went")
    args = parser.parse_args()
    if args.serve:
        return serve()
    rows, detail = anyio.run(bench_llm_throughput, args.simulations, tuple(args.concurrency), args.profile)
    print(json.dumps({"rows": rows, **detail}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
