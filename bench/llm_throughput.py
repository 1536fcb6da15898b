"""`make bench` section: end-to-end simulations per second, LLM agent + LLM user against the project's fake
OpenAI-compatible server, each side a fresh process timed from its start to its exit (what a user waits).

    uv run python bench/llm_throughput.py [--quick] [--rounds 3] [--simulations 100] [--concurrency-simulations N]
        [--profile 20]

Every side is `shiftbox run` (or `shiftbox replay`) started by the bench with the project's python, timed from
just before it is spawned to its exit (`os.wait4`: wall time, and the CPU time of the process and of the worker
processes it waited for). Both roles are `litellm:openai/fake-model` against the fake server, which runs in a
process of its own (`--serve`) playing the scripted conversation of shared/spec/performance.md, and which also
times each side from outside: the arrival of its first and last completion request (the window), and the CPU the
run's own process had used by then (/proc/<pid>/stat). The sides of a comparison run interleaved, `--rounds`
times (the order reversed every other round), and every figure is a median; the 1-minute load average at the
start of each of a row's runs is printed beside it. Each side's run directory is read back and every trajectory
checked against the script (`script_failure`, `shape_problems`); a side that did not play it marks its rows
FAILED and the bench exits nonzero.

The scripted conversation (`Conversation`, a deterministic function of each request body):
the user asks for help (giving its customer id); the agent greets, calls get_customer_by_id for
that customer and, on the tool result, answers "Done. Is there anything else I can help with?";
after the user has spoken 5 times it sends ###STOP###. 16 LLM calls (6 user, 10 agent) and 5 tool
calls per simulation, as in the reference harness. shiftbox's user opens the conversation, so the
reference harness's first message, a fixed greeting that costs no LLM call, has no counterpart: the
agent's greeting goes with its first reply, and a simulation has 21 messages where the reference's
has 22 (the same LLM and tool work).

The reference harness is not in the repository: the baseline is shiftbox's own litellm path
(`fast_path=false`, litellm's and the openai SDK's stack, as the reference uses it), measured beside the fast
path in the same run. The floor for CPU per completion is raw `httpx.AsyncClient` posting one simulation's own
request bodies (`conversation_bodies`) with as many requests in flight as the side has simulations in flight
(`raw_httpx_cpu_ms`), measured each round beside the sides; concurrency 1 gives a CPU row, no throughput target.
The fast path's sides above the base concurrency, and a base side they are compared with, run enough simulations
to keep that many in flight (`enough_simulations`: 520 for concurrency 256). The replay sides play a fixture of
the fast path's simulations and one of a single simulation, whose replay bounds what any replay can gain
(`ceiling_row`). `--profile N` adds an in-process cProfile of N simulations per path (where the time goes).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import re
import runpy
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from shiftbox_servers.kit import collect_less, get_domain

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


class Watch:
    """What the fake server saw of the run it is watching: its completion requests' arrival times (wall clock, as
    the bench times the run's process) and the CPU time that process had used when the first and the last arrived."""

    def __init__(self, pid: int | None = None, capture: bool = False) -> None:
        self.pid, self.requests, self.cpu_start = pid, 0, time.process_time()
        self.first = self.last = self.first_cpu_s = self.last_cpu_s = None
        self.bodies: list[dict[str, Any]] | None = [] if capture else None  # kept only when asked (`capture`)
        self.stat: int | None = None  # the run's /proc/<pid>/stat, open while watched (read at every request)
        if pid is not None:
            with contextlib.suppress(OSError):
                self.stat = os.open(f"/proc/{pid}/stat", os.O_RDONLY)

    def close(self) -> None:
        if self.stat is not None:
            os.close(self.stat)
            self.stat = None

    def saw_request(self, body: dict[str, Any]) -> None:
        from http_load import cpu_seconds  # bench/ is on the path, as for run.py's sections

        now, cpu = time.time(), None
        if self.pid is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                cpu = cpu_seconds(self.pid, self.stat)
        if self.first is None:
            self.first, self.first_cpu_s = now, cpu
        self.last, self.last_cpu_s = now, cpu
        self.requests += 1
        if self.bodies is not None:
            self.bodies.append(body)

    def report(self) -> dict[str, Any]:
        return {"requests": self.requests, "first": self.first, "last": self.last, "first_cpu_s": self.first_cpu_s,
                "last_cpu_s": self.last_cpu_s, "server_cpu_s": time.process_time() - self.cpu_start}


def serve(script: str | None = None) -> int:
    """`--serve`: run the fake server with `Conversation`, print its base URL, then answer the bench's commands on
    stdin (`watch [PID]`: start a new window, for the run of process PID; `window`: print what it saw, as JSON);
    stop when stdin closes. `watch PID capture` also keeps the window's request bodies, and `bodies` prints them
    (a JSON list, in arrival order). `script`: a Python file whose `reply(body, headers)` answers first (a Reply, or None for
    the scripted one), so a test can make a side deviate from the script."""
    from shiftbox.testing.fake_openai import FakeOpenAI

    deviate = runpy.run_path(script)["reply"] if script else None
    conversation, local = Conversation(), threading.local()

    def answer(body: dict[str, Any]) -> Any:
        return (deviate(body, local.headers) if deviate else None) or conversation(body)

    class Watched(FakeOpenAI):  # keeps no request log: thousands of requests would only grow memory
        watch = Watch()

        def _next(self, body, headers):
            local.headers = headers
            n, reply = super()._next(body, headers)
            with self._lock:
                self.requests.clear(), self.headers.clear(), self.replies.clear()
                self.watch.saw_request(body)
            return n, reply

    collect_less()  # as the project's own servers do: measurement equipment should cost the machine little
    server = Watched(answer, transport="loop").start()
    print(server.base_url, flush=True)
    for line in sys.stdin:
        command, *args = line.split()
        with server._lock:
            if command == "watch":
                pid = next((int(a) for a in args if a.isdigit()), None)
                server.watch.close()
                server.watch = Watch(pid, capture="capture" in args)
                reply = "ok"
            elif command == "bodies":
                reply = json.dumps(server.watch.bodies)
            else:
                reply = json.dumps(server.watch.report())
        print(reply, flush=True)
    server.stop()
    server.watch.close()
    for error in server.errors:
        print(error, file=sys.stderr)
    return 1 if server.errors else 0


class FakeServerProcess:
    """The fake server's process (`--serve`), and the bench's end of its command pipe."""

    def __init__(self, proc: subprocess.Popen, base_url: str) -> None:
        self.proc, self.base_url, self.pid = proc, base_url, proc.pid

    def cpu_s(self) -> float:
        """The fake server's CPU time so far (utime + stime): the model's share of the machine's two cores."""
        from http_load import cpu_seconds  # bench/ is on the path, as for run.py's sections

        return cpu_seconds(self.pid)

    def _command(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def watch(self, pid: int | None = None, capture: bool = False) -> None:
        """Start a new window (for the run of process `pid`: its CPU is read at its first and last request;
        `capture`: keep its request bodies)."""
        if self._command(f"watch {pid or ''} {'capture' if capture else ''}".strip()) != "ok":
            raise RuntimeError("the fake server did not answer `watch`")

    def bodies(self) -> list[dict[str, Any]]:
        """The request bodies of a capturing window, in arrival order."""
        return json.loads(self._command("bodies"))

    def window(self) -> dict[str, Any]:
        """What the server saw since the last `watch` (`Watch.report`)."""
        return json.loads(self._command("window"))


@contextlib.contextmanager
def fake_server_process(script: str | None = None) -> Iterator[FakeServerProcess]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", *(["--script", script] if script else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError(f"the fake server did not start (it printed {base_url!r})")
        yield FakeServerProcess(proc, base_url)
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
                   fast_path: bool = True) -> dict[str, Any]:
    """One `shiftbox run`-equivalent in this process (for `--profile`): execute_run with litellm agent and user,
    the time spent appending results measured around the writer. `fast_path=False` sends every call through
    litellm's own stack (the option `fast_path=false`)."""
    from functools import partial
    from importlib.metadata import version

    from shiftbox import agent_from_spec, user_from_spec
    from shiftbox.runs import (
        ExecutionOptions,
        RunConfig,
        RunMetadata,
        execute_run,
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
        trajectories = await execute_run(config, task_file.tasks, run_dir, ExecutionOptions(concurrency=concurrency),
                                         make_agent=partial(agent_from_spec, SPEC, options),
                                         make_user=partial(user_from_spec, SPEC, options), finished=set())
    failure = script_failure(trajectories, len(task_file.tasks) * trials)
    if failure:
        raise ScriptFailure(f"{PATHS[fast_path]}, concurrency {concurrency}: {failure}")
    return {"trajectories": trajectories, "write_s": writes.seconds}


def split(trajectories: list, write_s: float | None = None) -> dict[str, float]:
    """Percent of the summed per-simulation time (`Trajectory.timing`: its wall time, plus appending its result
    when `write_s` was measured) in the LLM boundary, MCP, the harness (the rest) and writing."""
    wall = sum(t.timing["wall_s"] for t in trajectories)
    llm = sum(t.timing.get("llm_s", 0.0) for t in trajectories)
    mcp = sum(t.timing.get("mcp_s", 0.0) for t in trajectories)
    total = wall + (write_s or 0.0)
    if not total:
        return {}
    return {"llm_pct": round(100 * llm / total, 1), "mcp_pct": round(100 * mcp / total, 1),
            "harness_pct": round(100 * (wall - llm - mcp) / total, 1),
            **({"write_pct": round(100 * write_s / total, 1)} if write_s is not None else {})}


def conversation_bodies(server: FakeServerProcess, tmp: Path) -> list[bytes]:
    """The request bodies of one scripted simulation (16: the agent's and the user's, the conversation growing), as
    a fast-path run sends them: one simulation run at concurrency 1, its bodies kept by the fake server (compact
    JSON, as the fast path sends it)."""
    run_side(server, Side("capture", 1, 1), tmp, "capture", capture=True)
    bodies = server.bodies()  # a misplayed run still gives bodies (the fast side's row then fails, not this)
    if not bodies:
        raise RuntimeError("the capture run (one simulation) sent no completion request: see its log")
    return [json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() for body in bodies]


async def raw_httpx_cpu_ms(base_url: str, bodies: list[bytes], concurrency: int) -> float:
    """The floor at a concurrency: this process's CPU ms per completion for a plain `httpx.AsyncClient` (pool
    limits raised past the concurrency) posting the simulation's own bodies, in order, from `concurrency` tasks at
    once to the same fake server, and parsing each JSON reply. Connections are opened in a warm-up first."""
    import httpx

    headers = {"Authorization": f"Bearer {os.environ[KEY_ENV]}", "Content-Type": "application/json"}
    url = f"{base_url}/chat/completions"
    limits = httpx.Limits(max_connections=max(100, concurrency), max_keepalive_connections=max(20, concurrency))
    n = max(320, 4 * concurrency)

    async def posts(client: httpx.AsyncClient, count: int) -> None:
        for i in range(count):
            (await client.post(url, content=bodies[i % len(bodies)], headers=headers)).json()

    async with httpx.AsyncClient(limits=limits) as client:
        for count in (len(bodies), n // concurrency):  # warm-up (connections opened), then measured
            start = time.process_time()
            async with anyio.create_task_group() as tasks:
                for _ in range(concurrency):
                    tasks.start_soon(posts, client, count)
    return round(1000 * (time.process_time() - start) / (concurrency * (n // concurrency)), 3)


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


SHIFTBOX = Path(sys.executable).with_name("shiftbox")
"""The console script the project installs next to its python: what a user runs."""
ROUNDS = 3
SIDE_TIMEOUT_S = 1800.0
"""Longest a side's process may run before the bench kills it (its rows then fail)."""
QUICK = {"simulations": 2, "worker_simulations": 4, "concurrency_simulations": 2, "rounds": 1}
"""`--quick`: a few simulations, one round (the smoke test's sizes; its figures mean nothing)."""


@dataclass(frozen=True)
class Side:
    """One whole-process run the bench starts: `shiftbox run` with both roles on the fake server, or (`replay`)
    `shiftbox replay` of a fixture recorded from the same simulations."""

    label: str
    simulations: int
    concurrency: int = 8
    fast_path: bool = True
    workers: int = 1
    executor: str | None = None
    ray_address: str | None = None
    replay: Path | None = None
    replay_tools: str = "reexecute"  # `shiftbox replay --tools`: re-executed on the servers, or from the transcripts
    env: tuple[tuple[str, str], ...] = ()  # set in its environment

    @property
    def in_flight(self) -> int:
        """Simulations at once: the concurrency, or every simulation when there are fewer."""
        return min(self.concurrency, self.simulations)

    @property
    def one_process(self) -> bool:
        """Whether the simulations run in the measured process itself (its CPU is theirs; a worker's or an
        actor's CPU is not counted whole: wait4 sees only the processes the run itself waited for)."""
        return self.workers == 1 and self.executor in (None, "local")

    def argv(self, base_url: str, tasks: Path, out: Path, record: Path | None = None) -> list[str]:
        command = [str(SHIFTBOX)] if SHIFTBOX.exists() else [sys.executable, "-m", "shiftbox.cli"]
        if self.replay is not None:
            return [*command, "replay", str(self.replay), "--out", str(out), "--concurrency", str(self.concurrency),
                    "--tools", self.replay_tools]
        role_args = [f"api_base={base_url}", f"api_key_env={KEY_ENV}", f"fast_path={str(self.fast_path).lower()}"]
        trials = max(1, self.simulations // len(CUSTOMERS))
        argv = [*command, "run", "--domain", "banking", "--tasks", str(tasks), "--out", str(out),
                "--snapshot", str(get_domain("banking").default_snapshot_dir()), "--agent", SPEC, "--user", SPEC,
                *[a for arg in role_args for a in ("--agent-arg", arg)],
                *[a for arg in role_args for a in ("--user-arg", arg)],
                "--max-retries", "0", "--trials", str(trials), "--concurrency", str(self.concurrency),
                "--workers", str(self.workers)]
        argv += ["--executor", self.executor] if self.executor else []
        argv += ["--ray-address", self.ray_address] if self.ray_address else []
        return argv + (["--record", str(record)] if record else [])


def write_tasks(simulations: int, tmp: Path) -> Path:
    """The bench's task file for `simulations` (one task per customer, as many as fit; trials for the rest)."""
    if simulations > len(CUSTOMERS) and simulations % len(CUSTOMERS):
        raise ValueError(f"--simulations {simulations}: use at most {len(CUSTOMERS)} or a multiple of it "
                         f"({len(CUSTOMERS)} tasks x trials)")
    task_file = bench_tasks()
    task_file = task_file.model_copy(update={"tasks": task_file.tasks[:simulations]})
    path = tmp / f"tasks-{len(task_file.tasks)}.json"
    path.write_text(task_file.model_dump_json(indent=1))
    return path


@dataclass(frozen=True)
class Measured:
    """One whole-process run: timed by the bench around the process, and by the fake server from outside."""

    simulations: int
    seconds: float  # spawn to exit
    cpu_s: float  # the process's, and its reaped children's (the workers), from wait4
    load_1m: float  # at its start
    window: dict[str, Any]  # the fake server's `Watch.report`
    started: float  # wall clock (time.time) just before the spawn
    problem: str | None  # why it does not count (None: it played the script)
    split: dict[str, float]

    @property
    def window_s(self) -> float | None:
        """First completion request to the last (None: fewer than two requests, as in a replay)."""
        w = self.window
        return w["last"] - w["first"] if w["requests"] > 1 else None

    @property
    def startup_s(self) -> float | None:
        return self.window["first"] - self.started if self.window["requests"] else None


def run_side(server: FakeServerProcess, side: Side, tmp: Path, tag: str, record: Path | None = None,
             capture: bool = False) -> Measured:
    """Spawn the side's process, time it to its exit, check every trajectory it wrote against the script
    (`capture`: the fake server keeps its request bodies, for `FakeServerProcess.bodies`)."""
    from shiftbox.trajectory import read_trajectories

    out = tmp / tag
    env = {**os.environ, KEY_ENV: os.environ.get(KEY_ENV) or "sk-fake-bench-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("RAY_ADDRESS", None)  # a cluster for the run is started by the run, never found by its address
    env |= dict(side.env)
    argv = side.argv(server.base_url, write_tasks(side.simulations, tmp), out, record)
    load = os.getloadavg()[0]
    with open(tmp / f"{tag}.log", "w") as log:
        started, start = time.time(), time.perf_counter()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        server.watch(proc.pid, capture)
        stop = threading.Timer(SIDE_TIMEOUT_S, proc.kill)  # a side that hangs fails its rows, not the whole bench
        stop.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        stop.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    window = server.window()
    trajectories = read_trajectories(out) if (out / "trajectories.jsonl").exists() else []
    problem = script_failure(trajectories, side.simulations)
    if proc.returncode:
        tail = (tmp / f"{tag}.log").read_text(errors="replace").strip().splitlines()[-3:]
        ended = f"killed after {SIDE_TIMEOUT_S:g} s" if seconds >= SIDE_TIMEOUT_S else f"exit {proc.returncode}"
        problem = f"{ended} ({' / '.join(tail)})" + (f"; {problem}" if problem else "")
    return Measured(side.simulations, seconds, usage.ru_utime + usage.ru_stime, load, window, started,
                    f"{side.label}: {problem}" if problem else None, split(trajectories))


async def measure_sides(server: FakeServerProcess, sides: dict[str, Side], rounds: int, tmp: Path,
                        bodies: list[bytes]) -> tuple[dict[str, list[Measured]], dict[int, list[float]]]:
    """Every side once a round, interleaved, the order reversed every other round (drift hits all alike); each
    round also measures raw httpx with as many requests in flight as each live side has simulations in flight
    (`raw_httpx_cpu_ms`), beside them."""
    samples: dict[str, list[Measured]] = {name: [] for name in sides}
    raw: dict[int, list[float]] = {c: [] for c in sorted({1} | {s.in_flight for s in sides.values() if s.replay is None})}
    for n in range(rounds):
        for c in raw:
            raw[c].append(await raw_httpx_cpu_ms(server.base_url, bodies, c))
        for name in (list(sides) if n % 2 == 0 else list(reversed(sides))):
            samples[name].append(run_side(server, sides[name], tmp, f"{name}-r{n}"))
    return samples, raw


def median(values: list[float]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def failure(*runs: list[Measured]) -> str | None:
    """Why a row's figures do not count: the first problem among its runs (None: they all played the script)."""
    return next((m.problem for ms in runs for m in ms if m.problem), None)


def side_row(side: Side, runs: list[Measured], raw_httpx_ms: float | None = None,
             raw_httpx_c1_ms: float | None = None) -> dict[str, Any]:
    """A side's figures, medians over its rounds; `raw_httpx_ms`: raw httpx's CPU per completion with as many
    requests in flight as the side has simulations in flight (the target's floor), `raw_httpx_c1_ms`: one."""
    n = side.simulations
    row: dict[str, Any] = {
        "bench": f"whole process: {side.label}", "simulations": n, "rounds": len(runs),
        "load_1m_at_start": [round(m.load_1m, 2) for m in runs],
        "seconds": rounded(median([m.seconds for m in runs]), 2),
        "sims_per_s": rounded(median([n / m.seconds for m in runs]), 2),
        "cpu_ms_per_sim" if side.one_process else "run_process_cpu_ms_per_sim":
            rounded(median([1000 * m.cpu_s / n for m in runs]), 1)}
    if side.replay is None:
        completions = n * LLM_CALLS_PER_SIM
        row |= {"window_sims_per_s": rounded(median([n / m.window_s if m.window_s else None for m in runs]), 2),
                "startup_s": rounded(median([m.startup_s for m in runs]), 2),
                "startup_cpu_s": rounded(median([m.window["first_cpu_s"] for m in runs]), 2),
                "exit_after_last_request_s": rounded(median(
                    [m.started + m.seconds - m.window["last"] if m.window["requests"] else None for m in runs]), 2),
                "fake_server_cpu_ms_per_completion": rounded(median(
                    [1000 * m.window["server_cpu_s"] / completions for m in runs]), 2)}
        if side.one_process:  # the simulations' own CPU: the process's between its first and last request
            per_completion = median([1000 * (m.window["last_cpu_s"] - m.window["first_cpu_s"]) / (completions - 1)
                                     if m.window["last_cpu_s"] is not None and completions > 1 else None
                                     for m in runs])
            row["cpu_ms_per_completion_in_window"] = rounded(per_completion, 2)
            if raw_httpx_ms and per_completion is not None:
                row["raw_httpx_cpu_ms_per_completion"] = raw_httpx_ms
                row["x_raw_httpx_cpu"] = round(per_completion / raw_httpx_ms, 2)
                if raw_httpx_c1_ms:
                    row["x_raw_httpx_cpu_at_concurrency_1"] = round(per_completion / raw_httpx_c1_ms, 2)
                target(row, per_completion <= 1.5 * raw_httpx_ms,
                       f"CPU per completion <= 1.5x raw httpx, {side.in_flight} in flight")
    row |= {k: rounded(median([m.split.get(k) for m in runs]), 1) for k in ("llm_pct", "mcp_pct", "harness_pct")
            if any(k in m.split for m in runs)}
    if problem := failure(runs):
        row["FAILED"] = problem
    return row


def target(row: dict[str, Any], met: bool, text: str) -> None:
    """Print a target beside the figures: measured, never asserted."""
    row["target"] = f"{text}: {'met' if met else 'NOT met'}"


def paired(numerator: list[Measured], denominator: list[Measured], figure) -> float | None:
    """Median over the rounds of figure(numerator run) / figure(denominator run), round by round."""
    ratios = [figure(a) / figure(b) for a, b in zip(numerator, denominator, strict=True)
              if figure(a) is not None and figure(b)]
    return median(ratios)


def ratio_row(label: str, numerator: list[Measured], denominator: list[Measured], at_least: float,
              text: str, window: bool = True, cpu: bool = True) -> dict[str, Any]:
    """How many times the denominator's throughput the numerator's is, whole process (and in the LLM window; and
    how many times less CPU per simulation, when both sides' CPU is counted whole)."""
    whole = paired(numerator, denominator, lambda m: m.simulations / m.seconds)
    row: dict[str, Any] = {"bench": label, "rounds": len(numerator),
                           "load_1m_at_start": [round(m.load_1m, 2) for m in numerator],
                           "whole_process_x": rounded(whole, 2)}
    if window:
        row["window_x"] = rounded(paired(numerator, denominator,
                                         lambda m: m.simulations / m.window_s if m.window_s else None), 2)
    if cpu:
        row["cpu_per_sim_x_less"] = rounded(paired(denominator, numerator, lambda m: m.cpu_s / m.simulations), 2)
    target(row, whole is not None and whole >= at_least, text)
    if problem := failure(numerator, denominator):
        row["FAILED"] = problem
    return row


def ceiling_row(label: str, live: list[Measured], replay_one: list[Measured], at_least: float,
                text: str) -> dict[str, Any]:
    """The most a replay of live's simulations can gain over live: live's whole process over a replay of one of
    them, round by round (were every other simulation free to replay), and the same for CPU. Below `at_least`, the
    target is out of reach whatever a replay's simulations cost."""
    ceiling = rounded(paired(live, replay_one, lambda m: m.seconds), 2)
    reach = "unknown" if ceiling is None else "within reach" if ceiling >= at_least else "out of reach"
    row: dict[str, Any] = {"bench": label, "rounds": len(live),
                           "load_1m_at_start": [round(m.load_1m, 2) for m in live], "ceiling_x": ceiling,
                           "cpu_ceiling_x": rounded(paired(live, replay_one, lambda m: m.cpu_s), 2),
                           "reach": f"{text}: {reach}"}
    if problem := failure(live, replay_one):
        row["FAILED"] = problem
    return row


CONCURRENCIES = (8, 1, 64, 256)
"""The fast path's concurrencies; the first is the base the litellm path, workers and replay run at, and the
higher ones' throughput is compared with."""


def enough_simulations(concurrencies: tuple[int, ...], simulations: int) -> int:
    """Simulations for the sides above the base concurrency and the base side they are compared with: at least
    twice the highest concurrency (so that many are in flight for half the run, not only at its start), and a
    whole number of trials of the bench's tasks."""
    least = max(simulations, 2 * max(concurrencies))
    return -(-least // len(CUSTOMERS)) * len(CUSTOMERS)
SIDES = ("fast", "litellm", "concurrency", "workers", "replay")
"""The llm section's sides, by name: fast and litellm path at the first concurrency, the fast path at the others,
--workers 1 and 2, replay of the fast path's simulations and of one of them (tools re-executed, and from the
transcripts)."""


async def bench_llm_throughput(simulations: int = 100, concurrencies: tuple[int, ...] = CONCURRENCIES,
                               rounds: int = ROUNDS, worker_simulations: int = 200,
                               concurrency_simulations: int | None = None, quick: bool = False,
                               script: str | None = None, profile_simulations: int = 0,
                               only: tuple[str, ...] = SIDES) -> tuple[list[dict], dict]:
    """Rows for the report (whole process, interleaved rounds, medians, targets), plus details. `only`: a subset
    of SIDES (the smoke test's); the comparison rows need both their sides. The first concurrency is the base the
    others' throughput is compared with (those above it: a lower one, 1, gives its CPU row only); the sides above
    it and the base side they are compared with run `concurrency_simulations` (default `enough_simulations`)."""
    from shiftbox.replay import TOOLS_MODES

    os.environ.setdefault(KEY_ENV, "sk-fake-bench-key")
    c8 = concurrencies[0]
    many = concurrency_simulations or enough_simulations(concurrencies, simulations)
    sides = {"fast": Side(f"{PATHS[True]}, concurrency {c8}, {simulations} simulations", simulations, c8),
             "litellm": Side(f"{PATHS[False]}, concurrency {c8}, {simulations} simulations", simulations, c8,
                             fast_path=False)}
    base = "fast" if many == simulations and "fast" in only else f"fast-c{c8}-{many}"  # the higher ones' base
    if "concurrency" in only:
        for c in concurrencies[1:]:
            n = many if c > c8 else simulations
            sides[f"fast-c{c}"] = Side(f"{PATHS[True]}, concurrency {c}, {n} simulations"
                                       + (f" (all {n} in flight)" if c > n else ""), n, c)
        if base != "fast":
            sides[base] = Side(f"{PATHS[True]}, concurrency {c8}, {many} simulations (the base of the higher "
                               "concurrencies)", many, c8)
    if "workers" in only:
        sides |= {f"workers-{w}": Side(f"{PATHS[True]}, concurrency {c8}, --workers {w}, {worker_simulations} "
                                       "simulations", worker_simulations, c8, workers=w) for w in (1, 2)}
    sides = {name: side for name, side in sides.items() if name not in ("fast", "litellm") or name in only}
    detail: dict[str, Any] = {} if quick else {"litellm_import_s_fresh_interpreter": round(litellm_import_seconds(), 2)}
    with fake_server_process(script) as server, tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        if "replay" in only:
            # untimed: records the fixture the replay side plays (a misplayed recording replays misplayed and fails
            # the replay side's check); it also warms the page cache for every side
            run_side(server, Side("recording", simulations, c8), tmp, "record", record=tmp / "fixture")
            sides["replay"] = Side(f"`shiftbox replay` (tools re-executed) of the fast path's {simulations} "
                                   f"simulations, concurrency {c8}", simulations, c8, replay=tmp / "fixture")
            sides["replay-transcript"] = Side(f"`shiftbox replay --tools transcript` (no servers) of the fast path's "
                                              f"{simulations} simulations, concurrency {c8}", simulations, c8,
                                              replay=tmp / "fixture", replay_tools="transcript")
            # a replay of all the simulations does at least what a replay of one of them does (the same start-up,
            # reading, one simulation, the check): live over that one is the most a replay can gain (`ceiling_row`)
            run_side(server, Side("recording", 1, c8), tmp, "record-one", record=tmp / "fixture-one")
            for tools in TOOLS_MODES:
                sides[f"replay-one-{tools}"] = Side(f"`shiftbox replay --tools {tools}` of one simulation recorded "
                                                    "as the fast path's", 1, c8, replay=tmp / "fixture-one",
                                                    replay_tools=tools)
        samples, raws = await measure_sides(server, sides, rounds, tmp, conversation_bodies(server, tmp))
        raw = {c: median(ms) for c, ms in raws.items()}
        detail["raw_httpx_cpu_ms_per_completion"] = {f"concurrency {c}": ms for c, ms in raws.items()}
        rows = [side_row(side, samples[name], raw.get(side.in_flight), raw[1]) for name, side in sides.items()]
        comparisons = [("fast", "litellm", f"fast path / litellm path, concurrency {c8}, {simulations} simulations",
                        10, "whole process >= 10x the litellm path")]
        comparisons += [(f"fast-c{c}", base, f"fast path, concurrency {c} / concurrency {c8}, {many} simulations",
                         1, f"concurrency {c} no slower than {c8}") for c in concurrencies[1:] if c > c8]
        comparisons += [("workers-2", "workers-1", f"--workers 2 / one process, {worker_simulations} simulations",
                         1.7, "--workers 2 >= 1.7x one process"),
                        ("replay", "fast", f"replay / live, the same {simulations} simulations", 3, "replay >= 3x live"),
                        ("replay-transcript", "fast", f"replay --tools transcript / live, the same {simulations} "
                         "simulations (beside the target: tools served from the transcripts, no servers)", 3,
                         "replay --tools transcript >= 3x live")]
        rows += [ratio_row(label, samples[a], samples[b], at_least, text, window=sides[a].replay is None,
                           cpu=sides[a].one_process and sides[b].one_process)
                 for a, b, label, at_least, text in comparisons if a in samples and b in samples]
        rows += [ceiling_row(f"replay's ceiling ({tools}): live's {simulations} simulations / a replay of one "
                             "simulation", samples["fast"], samples[f"replay-one-{tools}"], 3, "replay >= 3x live")
                 for tools in TOOLS_MODES if "fast" in samples and f"replay-one-{tools}" in samples]
        if "fast" in samples and (startup := median([m.window["first_cpu_s"] for m in samples["fast"]])) is not None:
            row = {"bench": f"start-up to first request, {sides['fast'].label}", "startup_cpu_s": round(startup, 2),
                   "load_1m_at_start": [round(m.load_1m, 2) for m in samples["fast"]]}
            target(row, startup <= 1, "start-up to first request <= 1 s of CPU")
            if problem := failure(samples["fast"]):
                row["FAILED"] = problem
            rows.append(row)
        if profile_simulations:
            task_file = bench_tasks()
            for fast_path in PATHS:
                profile = cProfile.Profile()
                small = task_file.model_copy(update={"tasks": task_file.tasks[:1]})
                start = time.perf_counter()
                profile.enable()
                run = await run_once(server.base_url, small, profile_simulations, 1, tmp / f"profile-{fast_path}",
                                     fast_path)
                profile.disable()
                detail[f"profile_concurrency_1 ({PATHS[fast_path]})"] = {
                    **profile_summary(profile, time.perf_counter() - start),
                    "split": split(run["trajectories"], run["write_s"])}
    return rows, detail


def failed_rows(rows: list[dict]) -> list[str]:
    """The rows that do not count, as the bench's failure message names them."""
    return [f"{row['bench']}: {row['FAILED']}" for row in rows if "FAILED" in row]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--script", help=argparse.SUPPRESS)
    parser.add_argument("--simulations", type=int, default=100,
                        help="per side (workers sides: twice that; concurrency sides: --concurrency-simulations)")
    parser.add_argument("--concurrency-simulations", type=int, metavar="N",
                        help="the sides above the base concurrency and their base side (default: at least twice "
                        "the highest concurrency, a multiple of the bench's tasks)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds; figures are their medians")
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (a few simulations, one round)")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES), help="run only these sides")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also cProfile N simulations at concurrency 1 in this process and print where the time went")
    args = parser.parse_args()
    if args.serve:
        return serve(args.script)
    sizes = QUICK if args.quick else {"simulations": args.simulations, "worker_simulations": 2 * args.simulations,
                                      "concurrency_simulations": args.concurrency_simulations, "rounds": args.rounds}
    rows, detail = anyio.run(lambda: bench_llm_throughput(**sizes, quick=args.quick, script=args.script,
                                                          profile_simulations=args.profile, only=tuple(args.sides)))
    print(json.dumps({"rows": rows, **detail}, indent=2))
    if failed := failed_rows(rows):
        print("bench: FAILED (a side did not play the scripted conversation):\n  " + "\n  ".join(failed),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
