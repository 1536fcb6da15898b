"""`make attacks`: issue 30's hostile rounds re-run against the real CLI and servers, one line of figures a round.

    uv run python bench/attacks.py [--only ROUND ...] [--seed 30] [--budget 570] [--keep]

Everything runs offline on 127.0.0.1, seeded, and stops by itself after --budget seconds. The attacks are the
tests' own, imported rather than copied: the fuzz strategies of tests/servers/kit/test_fuzz_arguments.py, the
raw HTTP client of bench/http_load.py, the malformed requests of tests/servers/kit/test_invalid_requests.py,
the tampers of tests/client/replay/ (their test functions are called: a tamper is caught when its test
passes), the hostile `cmd:` agent of tests/client/agents/ and the secret grep of test_no_secrets.py. Rounds:

- fuzz: seeded tool calls against every tool of banking, retail and airline (one HTTP server process each);
  a crash is an answer that is not JSON-RPC, a 5xx or a dead server; a digest is read before and after each
  call, and an erroring call must leave it unchanged (and carry a known error kind, never `internal`);
- load: N concurrent episodes x R rounds on `shiftbox serve` (write a payee, read the customer back): lost
  writes, rows of other episodes, and the recorded trajectories checked against what each episode did;
- kill: kill -9 of a `shiftbox run` mid-way (the run process alone), then `--resume`: byte-identical to an
  uninterrupted run, and nothing of the killed run still alive;
- tampers: tampered transcripts and cassettes replayed; each must be caught (exit 1 or 2, named);
- hostile: the hostile `cmd:` agent in concurrent simulations (in-process and HTTP servers): intrusions;
- bad-ids: tools/call with an invalid JSON-RPC id (and as a notification) over HTTP (2025-06-18 session on the
  SDK path and on the kit's fast path, 2026-07-28) and stdio: requests refused and requests executed (0);
- secrets: fake API keys in the environment of every round, plus a `cmd:` agent given `--api-key` and
  `env KEY=...` and an LLM run with a user:password api_base, then every file every round wrote is grepped.

Exit 1 when any round finds a failure (each printed under its round), 0 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the attacks live in tests/ (imported, never copied); bench/ is on sys.path already

from http_load import Episode, health, server_pid  # noqa: E402

from shiftbox_servers.kit import get_domain, http_server_process, task_domains  # noqa: E402

DOMAINS = task_domains()
CUSTOMER = "cust_0001"  # a banking customer of the default snapshot
SESSION_VERSION = "2025-06-18"
"""The protocol the fuzz and load rounds' episodes speak: an initialize handshake and a session, so their raw
tools/call need no per-request `_meta` (the bad-ids round covers 2026-07-28)."""


def session(port: int, name: str) -> Episode:
    """An episode of shiftbox's server by its name (the URL names it), speaking SESSION_VERSION."""
    return Episode(port, f"/episodes/{name}/mcp", SESSION_VERSION)
SHIFTBOX = [sys.executable, "-m", "shiftbox.cli"]


@dataclass
class Round:
    """One round's figures (printed in order) and what it found wrong."""

    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def fail(self, what: str) -> None:
        self.failures.append(what)

    def line(self) -> str:
        figures = ", ".join(f"{k}={v}" for k, v in self.figures.items())
        verdict = "ok" if not self.failures else f"FAILED ({len(self.failures)})"
        return f"{self.name}: {figures} -> {verdict}"


def fake_secrets(seed: int) -> dict[str, str]:
    """Environment keys holding seeded fake secrets, set for every round (the secrets round greps for them)."""
    def value(prefix: str, name: str) -> str:
        return prefix + hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()[:32]
    return {"OPENAI_API_KEY": value("sk-test-", "openai"), "ANTHROPIC_API_KEY": value("sk-ant-test-", "anthropic"),
            "GEMINI_API_KEY": value("gm-test-", "gemini"), "HF_TOKEN": value("hf_test", "hf"),
            "SHIFTBOX_ATTACK_TOKEN": value("tok-test-", "token")}


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def session_members(sid: int) -> list[int]:
    """Live processes of session `sid` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(stat[3]) == sid and stat[0] != "Z":
                found.append(int(entry.name))
    return found


# -- fuzz ----------------------------------------------------------------------------------------------


def fuzz_cases(domain: str, n: int, seed: int) -> list[tuple[str, dict]]:
    """`n` seeded (tool, arguments) draws from the fuzz test's strategies over the domain's tools."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    from tests.servers.kit.test_fuzz_arguments import arguments_for

    specs = list(get_domain(domain).tools)
    cases: list[tuple[str, dict]] = []

    @hypothesis_seed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def draw(data):
        spec = data.draw(st.sampled_from(specs))
        cases.append((spec.name, data.draw(arguments_for(spec))))

    draw()
    return cases


async def read_digest(episode: Episode) -> str:
    result = await episode.request("resources/read", {"uri": "shiftbox://episode/digest"})
    return json.loads(result["contents"][0]["text"])["digest"]


async def fuzz_lane(port: int, name: str, cases: list[tuple[str, dict]], tally: dict[str, int],
                    round_: Round) -> None:
    """Run `cases` one after another in episode `name`, a digest read around each call."""
    from mcp_types import CallToolResult

    from shiftbox_servers.kit import result_error
    from tests.servers.kit.test_fuzz_arguments import KINDS

    episode, opened = session(port, name), 0
    await episode.open()
    for tool, arguments in cases:
        what = f"{tool}({json.dumps(arguments)[:200]})"
        try:
            before = await read_digest(episode)
            episode.next_id += 1
            status, _, body = await asyncio.wait_for(episode.post(
                {"jsonrpc": "2.0", "id": episode.next_id, "method": "tools/call",
                 "params": {"name": tool, "arguments": arguments}}), 60)
        except Exception as exc:  # the connection died: the server is checked after the round
            tally["crashes"] += 1
            round_.fail(f"{what}: no answer ({one_line(exc)})")
            opened += 1
            episode = session(port, f"{name}-{opened}")
            await episode.open()
            continue
        tally["calls"] += 1
        try:
            answer = json.loads(body)
            assert isinstance(answer, dict) and answer.get("id") == episode.next_id
            assert ("result" in answer) != ("error" in answer)
        except (ValueError, AssertionError):
            answer = None
        if status >= 500 or answer is None:
            tally["crashes"] += 1
            round_.fail(f"{what}: HTTP {status}, not a JSON-RPC answer: {body[:200]!r}")
            continue
        result = answer.get("result") or {}
        if "error" not in answer and not result.get("isError"):
            continue
        tally["errors"] += 1
        kind = (result_error(CallToolResult.model_validate(result)) or {}).get("kind") if result else "protocol"
        if kind not in KINDS | {"protocol"}:
            tally["unkinded"] += 1
            round_.fail(f"{what}: an error of kind {kind!r}: {json.dumps(answer)[:300]}")
        if await read_digest(episode) != before:
            tally["state_changes_on_error"] += 1
            round_.fail(f"{what}: failed, yet the episode's state changed")


async def fuzz_domain(domain: str, cases: list[tuple[str, dict]], lanes: int, tally: dict[str, int],
                      round_: Round) -> None:
    async with http_server_process(domain, get_domain(domain).default_snapshot_dir(), "--max-episodes",
                                   "1000") as base:
        port = int(base.rsplit(":", 1)[1])
        pid = server_pid(port)
        await asyncio.gather(*(fuzz_lane(port, f"fuzz-{domain}-{i}", cases[i::lanes], tally, round_)
                               for i in range(lanes)))
        try:
            health(base)
        except OSError as exc:
            tally["server_deaths"] += 1
            round_.fail(f"the {domain} server (pid {pid}) no longer answers /healthz: {one_line(exc)}")


def fuzz_round(work: Path, args) -> Round:
    round_ = Round("fuzz")
    tally = dict.fromkeys(["calls", "errors", "crashes", "server_deaths", "state_changes_on_error", "unkinded"], 0)
    tools = 0
    for n, domain in enumerate(DOMAINS):
        cases = fuzz_cases(domain, args.fuzz, args.seed + n)
        tools += len({tool for tool, _ in cases})
        asyncio.run(fuzz_domain(domain, cases, 8, tally, round_))
    round_.figures = {"domains": len(DOMAINS), "tools": tools, **tally}
    return round_


# -- load on `shiftbox serve` --------------------------------------------------------------------------


@dataclass
class EpisodeLoad:
    """What one load episode did and saw."""

    index: int
    requests: int = 0
    errors: int = 0
    acked: list[str] = field(default_factory=list)  # payee ids of the writes the server confirmed
    foreign: set[str] = field(default_factory=set)  # payee rows seen that this episode never wrote
    lost: set[str] = field(default_factory=set)  # confirmed writes missing at the last read


async def load_episode(port: int, index: int, rounds: int) -> EpisodeLoad:
    seen = EpisodeLoad(index)
    episode = session(port, f"load-{index}")
    await episode.open()
    seen.requests += 2

    async def call(name: str, arguments: dict) -> dict | None:
        seen.requests += 1
        try:
            result = await asyncio.wait_for(episode.request("tools/call", {"name": name, "arguments": arguments}), 60)
        except Exception:
            seen.errors += 1
            return None
        if result.get("isError"):
            seen.errors += 1
            return None
        return result["structuredContent"]

    first = await call("get_customer_by_id", {"customer_id": CUSTOMER})
    initial = set(first["payee_ids"]) if first else set()
    for k in range(rounds):
        written = await call("add_payee", {"customer_id": CUSTOMER, "name": f"load-{index}-r{k}"})
        if written:
            seen.acked.append(written["payee_id"])
        customer = await call("get_customer_by_id", {"customer_id": CUSTOMER})
        if customer:
            rows = set(customer["payee_ids"]) - initial
            seen.foreign |= rows - set(seen.acked)
            seen.lost = set(seen.acked) - rows
    return seen


async def load_all(port: int, episodes: int, rounds: int) -> list[EpisodeLoad]:
    return list(await asyncio.gather(*(load_episode(port, i, rounds) for i in range(episodes))))


def load_round(work: Path, args) -> Round:
    from shiftbox.trajectory import read_trajectories
    from shiftbox_servers.kit import DomainServer, Snapshot
    from tests.client.agents.test_hostile_agent import replayed_digest
    from tests.client.world.test_gateway_isolation import serve_http

    round_ = Round("load")
    out = work / "serve"
    proc, base = serve_http(out)
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # never let its log fill the pipe
    try:
        seen = load_all_sync(int(base.rsplit(":", 1)[1]), args.episodes, args.rounds)
    finally:
        proc.send_signal(signal.SIGINT)  # every open session's trajectory is written
        proc.wait(timeout=120)
    requests, errors = sum(s.requests for s in seen), sum(s.errors for s in seen)
    lost, foreign = sum(len(s.lost) for s in seen), sum(len(s.foreign) for s in seen)
    for s in seen:
        if s.lost or s.foreign or s.errors:
            round_.fail(f"episode load-{s.index}: {s.errors} errors, lost writes {sorted(s.lost)}, rows of "
                        f"others {sorted(s.foreign)}")
    # the record: one trajectory per episode holding exactly its own calls, and a final state those calls make
    server = DomainServer(get_domain("banking"), Snapshot.load(get_domain("banking").default_snapshot_dir()))
    by_episode: dict[int, Any] = {}
    recorded_cross = 0
    for n, t in enumerate(read_trajectories(out)):
        owners = {c.arguments["name"].split("-")[1] for c in t.tool_calls if c.name == "add_payee"}
        if len(owners) != 1:
            recorded_cross += 1
            round_.fail(f"{t.simulation_id}: holds the writes of episodes {sorted(owners)}")
            continue
        by_episode[int(owners.pop())] = t
        if t.final_state["banking"] != replayed_digest(server, f"check-{n}", t):
            recorded_cross += 1
            round_.fail(f"{t.simulation_id}: its final state holds writes it never made")
    lost_records = 0
    for s in seen:
        t = by_episode.get(s.index)
        recorded = [c.result["payee_id"] for c in t.tool_calls if c.name == "add_payee" and not c.is_error] if t else []
        if recorded != s.acked:
            lost_records += 1
            round_.fail(f"episode load-{s.index}: confirmed writes {s.acked}, recorded {recorded}")
    logged = sum(1 for line in (out / "calls.jsonl").read_text().splitlines() if '"record"' in line)
    calls = requests - 2 * len(seen)
    if logged != calls:
        round_.fail(f"calls.jsonl holds {logged} calls, the clients made {calls}")
    round_.figures = {"episodes": args.episodes, "rounds": args.rounds, "requests": requests, "errors": errors,
                      "lost_writes": lost, "cross_episode_rows": foreign, "trajectories": len(by_episode),
                      "records_lost": lost_records, "records_crossed": recorded_cross, "calls_logged": logged}
    return round_


def load_all_sync(port: int, episodes: int, rounds: int) -> list[EpisodeLoad]:
    return asyncio.run(load_all(port, episodes, rounds))


# -- kill -9 then --resume -----------------------------------------------------------------------------


def kill_round(work: Path, args) -> Round:
    from tests.client.harness import HANDWRITTEN, written_once

    round_ = Round("kill")
    base = [*SHIFTBOX, "run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--trials", str(args.kill_trials),
            "--concurrency", "2"]
    reference = work / "kill" / "reference"
    done = subprocess.run([*base, "--out", str(reference)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        round_.fail(f"the uninterrupted run failed: {done.stderr[-500:]}")
        return round_
    expected = written_once(reference)
    variants = {"local, http servers": ["--servers", "http"],
                "processes, 2 workers": ["--executor", "processes", "--workers", "2"]}
    killed = identical = leftovers = 0
    for variant, extra in variants.items():
        out = work / "kill" / variant.replace(", ", "-").replace(" ", "_")
        command = [*base, *extra, "--out", str(out)]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        results, deadline = out / "trajectories.jsonl", time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not (
                results.exists() and results.read_bytes().count(b"\n") >= len(expected) // 5):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # the run alone, as a crash would kill it; its children must follow
        proc.wait()
        partial = results.read_bytes().count(b"\n") if results.exists() else 0
        if not 0 < partial < len(expected):
            round_.fail(f"{variant}: not killed mid-way ({partial} of {len(expected)} written)")
            continue
        killed += 1
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and session_members(proc.pid):
            time.sleep(0.2)
        if alive := session_members(proc.pid):
            leftovers += len(alive)
            round_.fail(f"{variant}: {len(alive)} processes of the killed run alive 20 s later: {alive}")
            for pid in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        done = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
        try:
            got = written_once(out)
        except AssertionError as exc:
            round_.fail(f"{variant}: {one_line(exc)}")
            continue
        if done.returncode == 0 and got == expected:
            identical += 1
        else:
            differ = sorted(k for k in expected.keys() | got.keys() if expected.get(k) != got.get(k))
            round_.fail(f"{variant}: resume exit {done.returncode}, {len(differ)} simulations differ from the "
                        f"uninterrupted run {differ[:5]} {done.stderr[-300:]}")
    round_.figures = {"runs_killed": killed, "simulations_per_run": len(expected),
                      "resumed_identical": f"{identical}/{len(variants)}", "leftover_processes": leftovers}
    return round_


# -- tampered transcripts and cassettes ----------------------------------------------------------------


def tamper_round(work: Path, args) -> Round:
    from tests.client.replay import test_cassette_limits as cassettes
    from tests.client.replay import test_transcript_tampering as transcripts

    round_ = Round("tampers")
    tampers: dict[str, Callable[[Path], None]] = {}
    for kind in transcripts.TAMPERINGS:
        for tools in ("reexecute", "transcript"):
            tampers[f"transcript {kind} (--tools {tools})"] = functools.partial(
                transcripts.test_a_tampered_transcript_fails_the_replay_naming_simulation_call_and_field,
                kind=kind, tools=tools)
    tampers["transcript tools/list edited"] = transcripts.test_a_tampered_tools_list_is_named
    for case in sorted(cassettes.CASES):
        tampers[f"cassette {case}"] = functools.partial(
            cassettes.test_a_tampered_cassette_is_refused_with_exit_2_naming_file_and_limit, case)
    tampers["cassette yaml-deep-flow under python -m shiftbox.vcr"] = \
        cassettes.test_python_m_shiftbox_vcr_refuses_a_deep_cassette_with_exit_2
    caught = 0
    for n, (name, attempt) in enumerate(tampers.items()):
        scratch = work / "tampers" / str(n)
        scratch.mkdir(parents=True)
        try:
            attempt(tmp_path=scratch)
            caught += 1
        except Exception as exc:  # the test's assertion: the tamper went through, or was not named
            round_.fail(f"{name}: not caught: {one_line(exc)}")
    control = work / "tampers" / "untampered"
    control.mkdir(parents=True)
    try:
        transcripts.test_an_untampered_copy_still_replays(control)
    except Exception as exc:
        round_.fail(f"the untampered fixture no longer replays (so no catch means anything): {one_line(exc)}")
    round_.figures = {"tamper_kinds": len(tampers), "caught": caught, "untampered_replays": not round_.failures}
    return round_


# -- the hostile cmd: agent ----------------------------------------------------------------------------


def hostile_round(work: Path, args) -> Round:
    from shiftbox.agents import sandbox_prefix
    from tests.client.agents.test_hostile_agent import hostile_run

    round_ = Round("hostile")
    simulations = intrusions = 0
    for servers in ("inproc", "http"):
        res, trajectories, found = hostile_run(work / "hostile" / servers, servers, trials=args.hostile_trials)
        simulations += len(trajectories)
        intrusions += len(found)
        if res.exit_code != 0 or len(trajectories) != args.hostile_trials:
            round_.fail(f"--servers {servers}: exit {res.exit_code}, {len(trajectories)} of {args.hostile_trials} "
                        f"simulations: {res.output[-300:]}")
        round_.failures += [f"--servers {servers}: {f}" for f in found]
    round_.figures = {"concurrent_simulations": f"{args.hostile_trials} x 2 server modes",
                      "simulations": simulations, "intrusions": intrusions,
                      "agent_sandbox": "pid namespace" if sandbox_prefix() else "none (plain children)"}
    return round_


# -- invalid JSON-RPC ids ------------------------------------------------------------------------------


async def http_bad_ids(base: str, round_: Round, tally: dict[str, int]) -> None:
    import httpx

    from tests.servers.kit.test_invalid_requests import (
        ACCEPT,
        BAD_IDS,
        INVALID_REQUEST,
        LEGACY,
        MODERN,
        STDIO_PAYEE,
        call_with_id,
        modern_post,
        open_legacy,
    )

    compact = functools.partial(json.dumps, separators=(",", ":"))  # as modern_post expects its bodies
    notification = compact({"jsonrpc": "2.0", "method": "tools/call", "params": STDIO_PAYEE}).encode()
    read = compact({"jsonrpc": "2.0", "id": "digest", "method": "resources/read",
                    "params": {"uri": "shiftbox://episode/digest"}}).encode()
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for path, label in [("/episodes/ids-sdk/mcp", f"HTTP {LEGACY} (SDK path)"),
                            ("/episodes/ids-fast/mcp", f"HTTP {LEGACY} (kit fast path)"),
                            ("/episodes/ids-modern/mcp", f"HTTP {MODERN}")]:
            if label.startswith(f"HTTP {MODERN}"):
                async def post(body: bytes, path=path) -> httpx.Response:
                    return await modern_post(client, path, body)
            else:
                headers = await open_legacy(client, path)

                async def post(body: bytes, path=path, headers=headers) -> httpx.Response:
                    return await client.post(path, content=body, headers=headers or ACCEPT)
            if "fast path" in label:  # a first valid call teaches the kit the session's version
                await post(call_with_id("1", {"name": "get_account", "arguments": {"account_id": "acc_00001"}}))

            async def digest() -> str:
                return json.loads((await post(read)).json()["result"]["contents"][0]["text"])["digest"]

            before = await digest()
            for raw_id in [*BAD_IDS, None]:
                answer = await post(call_with_id(raw_id, STDIO_PAYEE) if raw_id else notification)
                tally["requests"] += 1
                what = f"{label}, id {raw_id}" if raw_id else f"{label}, a tools/call notification"
                if raw_id is None:
                    refused = answer.status_code == 202 and not answer.content
                else:
                    refused = answer.status_code == 400 and answer.headers.get("content-type", "").startswith(
                        "application/json") and answer.json().get("error", {}).get("code") == INVALID_REQUEST
                tally["refused"] += refused
                if not refused:
                    round_.fail(f"{what}: answered HTTP {answer.status_code} {answer.text[:200]!r}")
                if await digest() != before:
                    tally["executed"] += 1
                    round_.fail(f"{what}: the refused call ran")
                    before = await digest()
            control = await post(call_with_id('"control"', STDIO_PAYEE))
            if control.json()["result"].get("isError") or await digest() == before:
                round_.fail(f"{label}: a valid call did not change the digest, so the check above means nothing")


def stdio_bad_ids(version: str, round_: Round, tally: dict[str, int]) -> None:
    """The invalid ids on a fresh stdio server: after an initialize handshake (2025-06-18), or with the
    per-request `_meta` and no handshake (2026-07-28)."""
    from tests.servers.kit.test_invalid_requests import (
        BAD_IDS,
        INVALID_REQUEST,
        MODERN,
        MODERN_META,
        STDIO_PAYEE,
        call_with_id,
        stdio_answer,
        stdio_digest,
    )
    from tests.servers.kit.test_stdio_malformed import RawStdio

    meta = MODERN_META if version == MODERN else None
    payee = STDIO_PAYEE | {"_meta": meta} if meta else STDIO_PAYEE
    digest = functools.partial(stdio_digest, meta=meta)
    raw = RawStdio()
    try:
        if version != MODERN:
            raw.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "attacks", "version": "0"}}}).encode())
        for _ in range(20):  # a cold start on a busy machine takes longer than one wait
            if meta:
                raw.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "ping", "params": {"_meta": meta}}).encode())
            got, _problem = raw.collect(lambda got: any(m.get("id") == "init" for m in got))
            if got:
                break
        if version != MODERN:
            raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        before = digest(raw, 0)
        notification = json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": payee}).encode()
        for n, raw_id in enumerate([*BAD_IDS, None]):
            answer = stdio_answer(raw, call_with_id(raw_id, payee) if raw_id else notification, n)
            tally["requests"] += 1
            refused = answer is None if raw_id is None else (answer or {}).get("error", {}).get("code") == INVALID_REQUEST
            tally["refused"] += refused
            what = f"stdio {version}, id {raw_id}" if raw_id else f"stdio {version}, a tools/call notification"
            if not refused:
                round_.fail(f"{what}: answered {answer}")
            if digest(raw, n + 1) != before:
                tally["executed"] += 1
                round_.fail(f"{what}: the refused call ran")
                before = digest(raw, 1000 + n)
        control = stdio_answer(raw, call_with_id('"control"', payee), "control")
        if control["result"].get("isError") or digest(raw, 2000) == before:
            round_.fail(f"stdio {version}: a valid call did not change the digest, so the check above means nothing")
    finally:
        raw.close()


def bad_ids_round(work: Path, args) -> Round:
    round_ = Round("bad-ids")
    tally = {"requests": 0, "refused": 0, "executed": 0}

    async def over_http() -> None:
        async with http_server_process("banking", get_domain("banking").default_snapshot_dir()) as base:
            await http_bad_ids(base, round_, tally)

    from tests.servers.kit.test_invalid_requests import LEGACY, MODERN

    for transport, attack in [("http", lambda: asyncio.run(over_http())),
                              (f"stdio {LEGACY}", lambda: stdio_bad_ids(LEGACY, round_, tally)),
                              (f"stdio {MODERN}", lambda: stdio_bad_ids(MODERN, round_, tally))]:
        try:
            attack()
        except BaseException as exc:  # pytest.fail in a helper is a BaseException
            if isinstance(exc, KeyboardInterrupt):
                raise
            round_.fail(f"{transport}: {one_line(exc)}")
    round_.figures = {"paths": "HTTP 2025-06-18 (SDK and kit fast path), HTTP 2026-07-28, stdio 2025-06-18 and 2026-07-28", **tally}
    return round_


# -- secrets -------------------------------------------------------------------------------------------


def secrets_round(work: Path, args) -> Round:
    """Runs handed secrets every way a user would, then every file of every round grepped for them."""
    from shiftbox.tasks import load_task_file
    from shiftbox.testing.fake_brains import ScriptedLLM
    from shiftbox.testing.fake_openai import fake_openai
    from tests.client.harness import HANDWRITTEN
    from tests.client.replay.test_no_secrets import AGENT_PROGRAM, leaks

    round_ = Round("secrets")
    env = fake_secrets(args.seed)
    option, password = (hashlib.sha256(f"{args.seed}:{w}".encode()).hexdigest()[:24] for w in ("option", "password"))
    secrets = [*env.values(), option, password]
    base = [*SHIFTBOX, "run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "hw_banking_003"]
    agent = "cmd:" + shlex.join(["env", f"OPENAI_API_KEY={env['OPENAI_API_KEY']}", sys.executable, str(AGENT_PROGRAM),
                                 "lookup", "cust_0004", "--api-key", option])
    runs = [([*base, "--agent", agent, "--servers", "http", "--max-steps", "12", "--out", str(work / "secrets" / "cmd"),
              "--record", str(work / "secrets" / "cmd-fixture")], None)]
    tasks = load_task_file(HANDWRITTEN).tasks
    with fake_openai(ScriptedLLM(tasks)) as server:  # a user:password api_base is sent as Basic auth
        llm = {"api_base": server.base_url.replace("http://", f"http://alice:{password}@"),
               "api_key_env": "OPENAI_API_KEY"}
        options = [a for role in ("agent", "user") for k, v in llm.items() for a in (f"--{role}-arg", f"{k}={v}")]
        runs.append(([*base[:-2], "--task-id", "hw_banking_001", "--agent", "litellm:openai/fake-model", "--user",
                      "litellm:openai/fake-model", *options, "--out", str(work / "secrets" / "llm"),
                      "--record", str(work / "secrets" / "llm-fixture"), "--llm-cassettes", "http"], None))
        for command, _ in runs:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                round_.fail(f"{shlex.join(command[3:5])}…: exit {done.returncode}: {done.stderr[-300:]}")
        if not server.headers:
            round_.fail("the LLM run never reached the fake provider, so its credentials were never used")
    from shiftbox.replay import replay_fixture
    from shiftbox.runs import measure_run, write_html_report

    for run in ("cmd", "llm"):  # in this process: three CLI start-ups fewer
        measure_run(work / "secrets" / run)
        write_html_report(work / "secrets" / run, work / "secrets" / f"{run}-report.html")
    replayed = replay_fixture(work / "secrets" / "llm-fixture", work / "secrets" / "replayed", "reexecute", 8)
    if replayed.failed is not None or replayed.problems:
        round_.fail(f"the redacted LLM fixture does not replay: {replayed.failed or replayed.problems[:3]}")
    recorded = work / "secrets" / "cmd" / "trajectories.jsonl"
    if not recorded.exists() or "--api-key [redacted]" not in recorded.read_text():
        round_.fail("the cmd: agent's --api-key is not in its trajectories, redacted: was the option passed at all?")
    files = [p for p in work.rglob("*") if p.is_file()]
    found = leaks(work, secrets)
    for secret, where in found.items():
        round_.fail(f"secret {secret[:12]}… written to {len(where)} files: {where[:5]}")
    round_.figures = {"secrets": len(secrets), "files_scanned": len(files), "secrets_found": len(found),
                      "files_with_a_secret": len({w for where in found.values() for w in where})}
    return round_


ROUNDS: dict[str, Callable[[Path, argparse.Namespace], Round]] = {
    "fuzz": fuzz_round, "load": load_round, "kill": kill_round, "tampers": tamper_round,
    "hostile": hostile_round, "bad-ids": bad_ids_round, "secrets": secrets_round,  # secrets last: it greps all
}


def watchdog(budget: float, current: list[str]) -> None:
    """Stop everything this process group runs once `budget` seconds have passed (a hang is a failure)."""
    def expire() -> None:
        print(f"attacks: FAILED: still in round {current[0]!r} after the budget of {budget:.0f} s; stopped",
              flush=True)
        os.killpg(os.getpgrp(), signal.SIGKILL)
    timer = threading.Timer(budget, expire)
    timer.daemon = True
    timer.start()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(ROUNDS), help="run these rounds only")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--fuzz", type=int, default=500, help="fuzzed calls per domain")
    parser.add_argument("--episodes", type=int, default=100, help="concurrent episodes of the load round")
    parser.add_argument("--rounds", type=int, default=20, help="write+read rounds per load episode")
    parser.add_argument("--kill-trials", type=int, default=20, help="trials of the 5 tasks in a killed run")
    parser.add_argument("--hostile-trials", type=int, default=5, help="concurrent hostile simulations")
    parser.add_argument("--budget", type=float, default=600, help="seconds before everything is stopped")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    os.environ.update(fake_secrets(args.seed))  # in the environment of every round, every child
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # the watchdog stops this group: every child, not the shell that started us
    current = ["start"]
    watchdog(args.budget, current)
    work = Path(tempfile.mkdtemp(prefix="shiftbox-attacks-"))
    started, failed = time.monotonic(), []
    for name in args.only or list(ROUNDS):
        current[0] = name
        begun = time.monotonic()
        try:
            round_ = ROUNDS[name](work, args)
        except Exception as exc:
            round_ = Round(name, failures=[f"the round itself broke: {one_line(exc)}"])
        round_.figures["seconds"] = round(time.monotonic() - begun, 1)
        print(round_.line(), flush=True)
        for failure in round_.failures[:20]:
            print(f"    {failure}", flush=True)
        if len(round_.failures) > 20:
            print(f"    … and {len(round_.failures) - 20} more", flush=True)
        failed += [name] * bool(round_.failures)
    print(f"attacks: {len(args.only or ROUNDS)} rounds in {time.monotonic() - started:.0f} s, seed {args.seed}; "
          + (f"FAILED: {', '.join(failed)}" if failed else "all held"), flush=True)
    if args.keep or failed:
        print(f"attacks: scratch directory kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
