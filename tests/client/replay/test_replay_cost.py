"""Issue 34: a replay makes no LLM call, so it must cost less than the live run it repeats, and it cost more (0.75x
live's throughput for the same 100 simulations). Counted here, never timed: each cassette is read (checked and
parsed) once per replayed simulation, where the replay read every one twice; a replay that repeats compares every
recorded value with the one it got in one comparison, where it walked both field by field (thousands of steps per
simulation); it opens one episode per simulation, as the live run did; and it never imports litellm or the openai
SDK, whatever its fixture was recorded with. Requests are matched by digest, so the tests also check that an equal
request written differently is still answered, a changed one named, and a retried simulation starts over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from shiftbox.errors import CassetteMiss
from shiftbox.llm import LLMRequest, first_difference
from shiftbox.replay import ReplayHooks, replay_fixture
from shiftbox.replay._fixture import Interaction, cassette_text, dump_json
from shiftbox.world import World
from shiftbox_servers.kit import json_depth
from tests.client.harness import REPO
from tests.client.replay import FIXTURES, offline_copy, record_scripted

LLM_FIXTURE = FIXTURES / "banking-litellm"


@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
def test_each_cassette_is_read_once_per_replayed_simulation(tools, tmp_path, monkeypatch):
    """Also with --tools transcript, whose tools list is written with sorted keys: the agent's requests then carried
    each input schema in another key order than the recording, so no request matched its digest and every
    cassette was read again to compare its requests field by field."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    reads: Counter[str] = Counter()
    real = cassette_text

    def counted(path):  # every read of a cassette goes through the check of its text
        reads[path.name] += 1
        return real(path)

    for where in ("shiftbox._cassette_file", "shiftbox.replay._fixture"):
        monkeypatch.setattr(f"{where}.cassette_text", counted)
    result = replay_fixture(fixture, tmp_path / "replayed", tools, concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    cassettes = sorted(p.name for p in (fixture / "cassettes").iterdir())
    assert len(cassettes) == 10
    assert reads == dict.fromkeys(cassettes, 1)


def test_an_identical_replay_walks_no_recorded_value_field_by_field(tmp_path, monkeypatch):
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    steps: list[str] = []

    def counted(recorded, actual, path=""):
        if path:  # a step inside a value: the walk of a comparison that did not settle it whole
            steps.append(path)
        return first_difference(recorded, actual, path)

    monkeypatch.setattr("shiftbox.llm._cassette.first_difference", counted)
    result = replay_fixture(fixture, tmp_path / "replayed", concurrency=4)
    assert result.identical, (result.problems, result.failed)
    assert steps == []


def test_a_difference_is_still_walked_to_its_field():
    recorded = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "n": 1}
    actual = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}], "n": 1}
    assert first_difference(recorded, actual) == "messages[1].content"
    assert first_difference(recorded, {**recorded, "n": 2}) == "n"
    assert first_difference([1, 2], [1, 2, 3]) == " (length 2 != 3)"
    assert first_difference(recorded, json.loads(json.dumps(recorded))) is None


def test_a_replay_opens_one_episode_per_simulation_as_live_did(tmp_path, monkeypatch):
    opened: list[str] = []
    real = World.episode

    def counted(self, episode_id, *args, **kwargs):
        opened.append(episode_id)
        return real(self, episode_id, *args, **kwargs)

    monkeypatch.setattr(World, "episode", counted)
    fixture = record_scripted(tmp_path)
    live = len(opened)
    assert live == 10
    opened.clear()
    result = replay_fixture(fixture, tmp_path / "replayed")
    assert result.identical, (result.problems, result.failed)
    assert len(opened) == live


REPORT = """
import json, sys
from pathlib import Path
from shiftbox.replay import replay_fixture
out = Path(sys.argv[1])
results = {f.name: replay_fixture(f, out / f.name).identical for f in map(Path, sys.argv[2:])}
print(json.dumps({"identical": results, "imported": sorted(m for m in ("litellm", "openai") if m in sys.modules)}))
"""


def test_replaying_the_committed_fixtures_never_imports_litellm(tmp_path):
    fixtures = sorted(str(p) for p in FIXTURES.iterdir() if p.is_dir())
    env = {k: v for k, v in os.environ.items() if k not in ("SHIFTBOX_FAKE_KEY", "OPENAI_API_KEY")}
    done = subprocess.run([sys.executable, "-c", REPORT, str(tmp_path), *fixtures], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"identical": dict.fromkeys((Path(f).name for f in fixtures), True), "imported": []}


def recorded_request(fixture: Path, simulation_id: str, n: int) -> tuple[LLMRequest, dict]:
    line = json.loads((fixture / "cassettes" / f"{simulation_id}.jsonl").read_text().splitlines()[n])
    return LLMRequest.model_validate(line["request"]), line["response"]


def test_a_retried_simulation_gets_its_cassette_again_from_the_first_call(tmp_path, monkeypatch):
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    hooks = ReplayHooks(fixture, "reexecute")
    sim = "hw_banking_001#0"
    request, response = recorded_request(fixture, "hw_banking_001_0", 0)
    first = hooks.cassette(sim)
    assert first.replay(request) == response and first.position == 1
    again = hooks.cassette(sim)
    assert again is not first and again.position == 0 and again.replay(request) == response


def test_a_request_written_differently_but_equal_is_answered_and_a_changed_one_is_named(tmp_path, monkeypatch):
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    request, response = recorded_request(fixture, "hw_banking_001_0", 0)
    reordered = request.model_copy(update={"messages": [dict(reversed(m.items())) for m in request.messages]})
    assert reordered.model_dump_json() != request.model_dump_json()   # another text, the same request
    assert ReplayHooks(fixture, "reexecute").cassette("hw_banking_001#0").replay(reordered) == response
    changed = request.model_copy(update={"messages": [*request.messages[:-1],
                                                      {**request.messages[-1], "content": "something else"}]})
    last = len(request.messages) - 1
    with pytest.raises(CassetteMiss, match=rf"hw_banking_001#0/call 0: request differs in messages\[{last}\]\.content"):
        ReplayHooks(fixture, "reexecute").cassette("hw_banking_001#0").replay(changed)


def test_a_replay_syncs_its_trajectories_once_where_live_syncs_each(tmp_path, monkeypatch):
    """Live fsyncs every trajectory before its append returns: `--resume` goes on from what is on disk. Lines written
    while a sync runs share the next one (group commit), so live syncs at least twice (the first sync covers the first
    line alone) and at most once a line. A replay never resumes (its --out must be new), so it syncs the file once,
    when every trajectory is written."""
    synced: Counter[str] = Counter()
    real = os.fsync

    def counted(fd):
        synced[Path(os.readlink(f"/proc/self/fd/{fd}")).name] += 1
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    fixture = record_scripted(tmp_path)
    assert 2 <= synced["trajectories.jsonl"] <= 10
    synced.clear()
    result = replay_fixture(fixture, tmp_path / "replayed")
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    assert synced["trajectories.jsonl"] == 1


def recorded_conversation(tmp_path: Path):
    """One recorded trajectory of the scripted recording with several agent replies."""
    from shiftbox.trajectory import read_trajectories

    fixture = record_scripted(tmp_path)
    return max(read_trajectories(fixture), key=lambda t: sum(m.role == "assistant" for m in t.messages))


def test_a_recorded_agent_dumps_each_message_once_not_the_whole_conversation_each_reply(tmp_path, monkeypatch):
    """An external agent's recorded replies are played back after checking the conversation so far equals the
    recording: each reply re-serialised every earlier message on both sides (quadratic in the conversation). Each
    message is now dumped once a side; a message object already found equal is not compared again."""
    import anyio

    from shiftbox.replay._episodes import RecordedAgent
    from shiftbox.trajectory import Message

    recorded = recorded_conversation(tmp_path)
    replies = [m for m in recorded.messages if m.role == "assistant"]
    assert len(replies) >= 3, "the scripted recording should have several agent replies"
    live = [m.model_copy() for m in recorded.messages]  # the conversation as the orchestrator holds it
    dumps: list[int] = []
    real = Message.model_dump

    def counted(self, *args, **kwargs):
        dumps.append(self.index)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Message, "model_dump", counted)
    agent = RecordedAgent(recorded)

    async def play():
        for reply in replies:
            got = await agent.respond(list(live[:reply.index]))
            assert (got.content, got.tool_calls) == (reply.content, list(reply.tool_calls))

    anyio.run(play)
    # once as recorded, once as played: every message before the last reply, and no more
    assert sorted(dumps) == sorted(2 * list(range(replies[-1].index)))


def test_a_recorded_agent_still_names_where_the_conversation_drifted(tmp_path):
    import anyio

    from shiftbox.replay import ReplayMismatch
    from shiftbox.replay._episodes import RecordedAgent

    recorded = recorded_conversation(tmp_path)
    replies = [m for m in recorded.messages if m.role == "assistant"]
    live = [m.model_copy() for m in recorded.messages]
    agent = RecordedAgent(recorded)
    changed = replies[1].index - 1  # a message the first reply's check did not see

    async def play():
        await agent.respond(list(live[:replies[0].index]))
        live[changed] = live[changed].model_copy(update={"content": "something else"})
        await agent.respond(list(live[:replies[1].index]))

    with pytest.raises(ReplayMismatch, match=rf"before agent reply 2: \[{changed}\]\.content"):
        anyio.run(play)


def written_tools(fixture: Path) -> str:
    """The tools list as the fixture's cassette lines write it (every agent request carries the same)."""
    for line in (fixture / "cassettes" / "hw_banking_001_0.jsonl").read_text().splitlines():
        tools = json.loads(line)["request"]["tools"]
        if tools:
            text = json.dumps(tools, separators=(",", ":"), ensure_ascii=False)
            assert f'"tools":{text},"params":' in line  # written so in the line, as the test assumes
            return text
    raise AssertionError("no agent request in the cassette")


def count_in_scans_and_parses(text: str, monkeypatch) -> tuple[list[int], list[int]]:
    """How many times `text` is in each text given to the cassette depth scan, and to the parse of an interaction
    (lists filled as they happen)."""
    scanned: list[int] = []
    parsed: list[int] = []
    real_depth, real_parse = json_depth, Interaction.model_validate_json

    def depth(data):
        scanned.append(data.count(text))
        return real_depth(data)

    def parse(data, *args, **kwargs):
        parsed.append(data.count(text))
        return real_parse(data, *args, **kwargs)

    monkeypatch.setattr("shiftbox._cassette_file.json_depth", depth)
    monkeypatch.setattr(Interaction, "model_validate_json", parse)
    return scanned, parsed


def test_the_tools_list_every_agent_request_carries_is_scanned_and_parsed_once_a_fixture(tmp_path, monkeypatch):
    """Each agent request of a cassette carries the run's whole tools list (13 KB of each 14 KB agent line in the
    bench): the depth scan and the parse of every line went through it again, most of a replay's start. It is
    read whole in the first cassette only; the other cassettes' lines are scanned and parsed without it."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    tools = written_tools(fixture)
    files = {p.name: p.read_text() for p in (fixture / "cassettes").iterdir()}
    in_first = files["hw_banking_001_0.jsonl"].count(tools)  # the first simulation's cassette is read whole
    in_all = sum(text.count(tools) for text in files.values())
    assert in_first >= 5 and in_all >= 8 * in_first
    scanned, parsed = count_in_scans_and_parses(tools, monkeypatch)
    result = replay_fixture(fixture, tmp_path / "replayed", concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    assert sum(scanned) == in_first and sum(parsed) == in_first  # were in_all each


@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
def test_a_replayed_request_is_matched_without_dumping_the_tools_list_again(tools, tmp_path, monkeypatch):
    """Each request the agent makes is written as its cassette line writes it, for its digest: the tools list (most
    of an agent request) was dumped again at every call. A request whose tools equal the fixture's list (also a
    transcript's list, whose keys are sorted) is written without it, as its recorded line is digested."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    text = written_tools(fixture)
    in_first = (fixture / "cassettes" / "hw_banking_001_0.jsonl").read_text().count(text)
    dumped: list[int] = []
    real = dump_json

    def counted(model):
        written = real(model)
        dumped.append(written.count(text))
        return written

    monkeypatch.setattr("shiftbox.replay._fixture.dump_json", counted)
    result = replay_fixture(fixture, tmp_path / "replayed", tools, concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    # only the list learnt (its first cassette's requests, read whole, are now digested without it); were
    # in_first + 1, and before that + 68
    assert in_first > 1 and sum(dumped) == 1


@pytest.mark.parametrize("n", [0, 1])  # a user request (no tools of its own) and an agent request (the list)
def test_a_line_whose_tools_text_also_sits_in_a_message_is_answered_only_for_what_it_holds(n, tmp_path, monkeypatch):
    """The list is cut at its first occurrence and put back at the top of the request: a line where the same text
    comes first inside a message reads back differently, so the file is read whole (as before): the request the
    line holds is answered, the request without that message's extra fields is named."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    tools = json.loads(written_tools(fixture))
    path = fixture / "cassettes" / "hw_banking_002_0.jsonl"  # not the first cassette (that one is read whole)
    lines = path.read_text().splitlines()
    interactions = [Interaction.model_validate_json(line) for line in lines]
    original = interactions[n]
    assert (original.request.tools == tools) == (n == 1)
    messages = [*original.request.messages[:-1], {**original.request.messages[-1], "tools": tools, "params": {}}]
    odd = original.model_copy(update={"request": original.request.model_copy(update={"messages": messages})})
    lines[n] = dump_json(odd)
    assert lines[n].count(written_tools(fixture)) == 1 + n
    path.write_text("\n".join(lines) + "\n")
    cassette = ReplayHooks(fixture, "reexecute").cassette("hw_banking_002#0")
    for before in interactions[:n]:
        assert cassette.replay(before.request) == before.response
    last = len(messages) - 1
    with pytest.raises(CassetteMiss, match=rf"hw_banking_002#0/call {n}: request differs in messages\[{last}\]\.params"):
        cassette.replay(original.request)
    again = ReplayHooks(fixture, "reexecute").cassette("hw_banking_002#0")
    for before in [*interactions[:n], odd, *interactions[n + 1:]]:
        assert again.replay(before.request) == before.response


@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
def test_a_replay_reads_the_recording_once_and_its_own_trajectories_never(tools, tmp_path, monkeypatch):
    """After the run, the replay read both runs from disk to compare them: the recording's trajectories a second time
    (it had read them to start) and the replayed run's, which it had just written. Each run is still scored by
    today's code (twice in all), from the recording as read at the start and the trajectories the run wrote."""
    import shiftbox.replay._replay as replay_module

    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    reads: Counter[str] = Counter()
    real_read = Path.read_bytes

    def counted_read(self):
        if self.name == "trajectories.jsonl":
            reads[self.parent.name] += 1
        return real_read(self)

    scored: list[int] = []
    real_score = replay_module.score_trajectories

    def counted_score(trajectories, tasks, *args, **kwargs):
        scored.append(len(trajectories))
        return real_score(trajectories, tasks, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", counted_read)
    monkeypatch.setattr(replay_module, "score_trajectories", counted_score)
    result = replay_fixture(fixture, tmp_path / "replayed", tools, concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    assert reads == {fixture.name: 1}  # was {run: 2, replayed: 1}
    assert scored == [10, 10]


def test_the_trajectories_a_replay_compares_are_the_ones_its_run_directory_holds(tmp_path, monkeypatch):
    """The replayed run's trajectories are compared as the run wrote them, not read back: the file holds each one
    dumped (`TrajectoryWriter`) in the order the run returned them, and each reads back equal to itself, field by
    field."""
    import shiftbox.replay._replay as replay_module
    from shiftbox.trajectory import read_trajectories

    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    compared: list = []
    real = replay_module._compared_runs

    def kept(recorded, replayed):
        compared.append(replayed)
        return real(recorded, replayed)

    monkeypatch.setattr(replay_module, "_compared_runs", kept)
    result = replay_fixture(fixture, tmp_path / "replayed", concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    [(trajectories, _)] = compared  # (the tasks are read from the run directory)
    on_disk = read_trajectories(tmp_path / "replayed")
    # every field (not the MCP result a tool call keeps aside in memory, which is never written nor scored)
    assert [t.model_dump() for t in trajectories] == [t.model_dump() for t in on_disk] and len(on_disk) == 10
    assert replay_module.compare_runs(fixture, tmp_path / "replayed") == []


def test_metrics_that_differ_between_the_runs_are_still_named(tmp_path, monkeypatch):
    """Both runs are scored (the replayed one from the trajectories it wrote): scores that differ are a problem even
    when every trajectory is equal."""
    import shiftbox.replay._replay as replay_module

    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    real = replay_module.score_trajectories
    calls: list[int] = []

    def second_differs(trajectories, tasks, *args, **kwargs):
        calls.append(1)
        run_metrics, sims = real(trajectories, tasks, *args, **kwargs)
        if len(calls) == 2:
            sims = sims[1:]
        return run_metrics, sims

    monkeypatch.setattr(replay_module, "score_trajectories", second_differs)
    result = replay_fixture(fixture, tmp_path / "replayed", concurrency=4)
    assert result.problems == ["metrics differ from the recording's although every trajectory is equal"]


def test_reading_a_cassette_dumps_none_of_its_requests_again(tmp_path, monkeypatch):
    """A cassette line's request was parsed, then dumped again (the tools list put back) to digest it as written:
    each line was written twice more than it was read. Its digest is now taken over the line's own text; only the
    first cassette, read whole to learn the tools list, has its requests dumped."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    first_lines = len((fixture / "cassettes" / "hw_banking_001_0.jsonl").read_text().splitlines())
    all_lines = sum(len(p.read_text().splitlines()) for p in (fixture / "cassettes").iterdir())
    assert all_lines > 5 * first_lines
    dumped: list[str] = []
    real = dump_json

    def counted(model):
        dumped.append(type(model).__name__)
        return real(model)

    monkeypatch.setattr("shiftbox.replay._fixture.dump_json", counted)
    ReplayHooks(fixture, "reexecute")
    assert len(dumped) == first_lines + 1  # and the list learnt; was all_lines + 1


@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
def test_a_request_carrying_the_fixtures_tools_list_is_digested_without_it(tools, tmp_path, monkeypatch):
    """The tools list (most of an agent request) was hashed again for every recorded line and every replayed request.
    A request whose tools equal the fixture's list is digested with the list left out (and marked so), on both sides."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    text = written_tools(fixture)
    hashed: list[int] = []
    import shiftbox.replay._fixture as fixture_module

    real = fixture_module._text_digest

    def counted(written):
        hashed.append(written.count(text))
        return real(written)

    monkeypatch.setattr(fixture_module, "_text_digest", counted)
    result = replay_fixture(fixture, tmp_path / "replayed", tools, concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    assert len(hashed) > 100 and sum(hashed) == 0


@pytest.mark.parametrize("agent", [True, False])
def test_a_request_without_the_list_is_never_taken_for_one_carrying_it(agent, tmp_path, monkeypatch):
    """With the list left out of the digest, a request carrying it and the same request with no tools are written
    alike: the digest's mark tells them apart, so either asked in place of the other is a miss naming `tools`."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    tools = json.loads(written_tools(fixture))
    lines = (fixture / "cassettes" / "hw_banking_002_0.jsonl").read_text().splitlines()  # not the first cassette
    interactions = [Interaction.model_validate_json(line) for line in lines]
    n = next(i for i, x in enumerate(interactions) if (x.request.tools == tools) == agent)
    asked = interactions[n].request.model_copy(update={"tools": None if agent else tools})
    cassette = ReplayHooks(fixture, "reexecute").cassette("hw_banking_002#0")
    for before in interactions[:n]:
        assert cassette.replay(before.request) == before.response
    with pytest.raises(CassetteMiss, match=rf"hw_banking_002#0/call {n}: request differs in tools"):
        cassette.replay(asked)


def test_the_list_cut_from_a_message_is_never_taken_for_the_requests_own(tmp_path, monkeypatch):
    """A line whose first copy of the list sits in a message (the request itself has no tools) is not digested as
    cut: the request with that message's list moved to its own tools would be written alike."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    tools = json.loads(written_tools(fixture))
    path = fixture / "cassettes" / "hw_banking_002_0.jsonl"  # not the first cassette (that one is read whole)
    lines = path.read_text().splitlines()
    interactions = [Interaction.model_validate_json(line) for line in lines]
    original = interactions[0]
    assert original.request.tools is None  # a user request
    messages = [*original.request.messages[:-1], {**original.request.messages[-1], "tools": tools, "params": {}}]
    lines[0] = dump_json(original.model_copy(update={"request": original.request.model_copy(
        update={"messages": messages})}))
    path.write_text("\n".join(lines) + "\n")
    moved = original.request.model_copy(update={
        "messages": [*messages[:-1], {**messages[-1], "tools": None}], "tools": tools})
    last = len(messages) - 1
    with pytest.raises(CassetteMiss, match=rf"hw_banking_002#0/call 0: request differs in messages\[{last}\]\.tools"):
        ReplayHooks(fixture, "reexecute").cassette("hw_banking_002#0").replay(moved)


def test_a_response_holding_a_response_key_is_still_found_where_it_starts(tmp_path, monkeypatch):
    """A line's request is the text between its head and the last `,"response":` whose value ends the line: one
    inside the response (or the request) closes before the line does."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    path = fixture / "cassettes" / "hw_banking_002_0.jsonl"
    lines = path.read_text().splitlines()
    interactions = [Interaction.model_validate_json(line) for line in lines]
    odd = {**interactions[1].response, "extra": {"a": 1, "response": {"b": [2]}}}
    lines[1] = dump_json(interactions[1].model_copy(update={"response": odd}))
    assert lines[1].count(',"response":') == 2
    path.write_text("\n".join(lines) + "\n")
    cassette = ReplayHooks(fixture, "reexecute").cassette("hw_banking_002#0")
    assert [cassette.replay(x.request) for x in interactions[:3]] == [interactions[0].response, odd,
                                                                      interactions[2].response]
    assert cassette.interactions == []  # answered by digest: the file was not read again


def test_a_cassette_line_with_fewer_brackets_than_the_depth_limit_is_not_scanned(tmp_path, monkeypatch):
    """Every cassette line's nesting was measured by scanning its text (strings skipped) before it was parsed: most
    of a replay's start once the tools list was cut out. A line holding no more opening brackets than the limit
    cannot nest deeper than the limit, so only the other lines are scanned (each line is parsed alone)."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    path = fixture / "cassettes" / "hw_banking_002_0.jsonl"  # not the first cassette (that one is read whole)
    lines = path.read_text().splitlines()
    wide = Interaction.model_validate_json(lines[1])  # many brackets, nested 4 deep
    lines[1] = dump_json(wide.model_copy(update={"response": {**wide.response, "pad": [[] for _ in range(120)]}}))
    path.write_text("\n".join(lines) + "\n")
    marker = f',"tools":{written_tools(fixture)},"params":'
    others = [line.replace(marker, ',"tools":null,"params":', 1) for p in (fixture / "cassettes").iterdir()
              if p.name != "hw_banking_001_0.jsonl" for line in p.read_text().splitlines()]
    deep = [line for line in others if line.count("[") + line.count("{") > 100]  # the depth limit
    assert len(others) > 90 and deep == [lines[1].replace(marker, ',"tools":null,"params":', 1)]
    scanned: list[str] = []
    real = json_depth

    def depth(text):
        scanned.append(text)
        return real(text)

    monkeypatch.setattr("shiftbox._cassette_file.json_depth", depth)
    cassette = ReplayHooks(fixture, "reexecute").cassette("hw_banking_002#0")
    first = (fixture / "cassettes" / "hw_banking_001_0.jsonl").read_text()
    assert scanned == [first, deep[0]]  # the first cassette read whole, to learn the tools list; was every line
    assert cassette.replay(Interaction.model_validate_json(lines[0]).request) is not None
    assert cassette.replay(wide.request)["pad"] == [[]] * 120 and cassette.interactions == []  # by digest


def test_a_line_nested_past_the_limit_in_a_later_cassette_is_still_refused_by_name(tmp_path, monkeypatch):
    from shiftbox.errors import CassetteFileError

    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    path = fixture / "cassettes" / "hw_banking_002_0.jsonl"
    lines = path.read_text().splitlines()
    line = Interaction.model_validate_json(lines[1])
    lines[1] = dump_json(line.model_copy(update={"response": {**line.response, "deep": json.loads("[" * 101 + "]" * 101)}}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CassetteFileError, match=r"hw_banking_002_0.jsonl: nested deeper than 100"):
        ReplayHooks(fixture, "reexecute")


def test_a_replayed_requests_parameters_are_split_into_words_once_per_key(tmp_path, monkeypatch):
    """Every request a replay matches is redacted first (as it was recorded): each parameter key was split into words
    twice a request (is it a credential, does it name headers), a regular expression each time, for the same few
    keys. A key's words are now worked out once a process."""
    import shiftbox.redact as redact_module

    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    splits: list[str] = []
    real = redact_module._WORD_SEPARATORS

    class Counted:
        def split(self, text):
            splits.append(text)
            return real.split(text)

    monkeypatch.setattr(redact_module, "_WORD_SEPARATORS", Counted())
    redact_module._words.cache_clear()
    result = replay_fixture(fixture, tmp_path / "replayed", concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    assert splits and sorted(splits) == sorted(set(splits))  # was each key twice for each of 114 requests


def test_a_replay_reads_the_fixtures_task_file_and_run_file_once(tmp_path, monkeypatch):
    """The replay read the fixture's tasks.json and run.json to start, then both again after the run to score the
    recording. It scores with the tasks it read to start; the run directory it wrote is read as written."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    reads: Counter[tuple[str, str]] = Counter()
    real_text, real_bytes = Path.read_text, Path.read_bytes

    def counted_text(self, *args, **kwargs):
        reads[self.parent.name, self.name] += 1
        return real_text(self, *args, **kwargs)

    def counted_bytes(self):
        reads[self.parent.name, self.name] += 1
        return real_bytes(self)

    monkeypatch.setattr(Path, "read_text", counted_text)
    monkeypatch.setattr(Path, "read_bytes", counted_bytes)
    result = replay_fixture(fixture, tmp_path / "replayed", concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    assert reads[fixture.name, "tasks.json"] == 1  # was 2
    assert reads[fixture.name, "run.json"] == 1  # was 2
    assert reads["replayed", "tasks.json"] == 1  # the run directory written is scored as it reads back


def test_the_list_is_still_cut_at_the_requests_own_field_when_a_message_names_tools_first(tmp_path, monkeypatch):
    """The list is looked for by its field's name, each place that name starts tried in order (not by searching for
    the whole list text, which prepared a search over 12 KB again at every line): a message holding a `tools` field
    of its own, before the request's, is passed over, and the request's own list is still cut out before the line
    is scanned and parsed, then answered by digest. Pins behaviour main already had (it passes there too): not a
    regression test."""
    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    text = written_tools(fixture)
    path = fixture / "cassettes" / "hw_banking_002_0.jsonl"  # not the first cassette (that one is read whole)
    lines = path.read_text().splitlines()
    interactions = [Interaction.model_validate_json(line) for line in lines]
    original = interactions[1]
    assert original.request.tools == json.loads(text)  # an agent request
    messages = [{**original.request.messages[0], "tools": [], "params": {}}, *original.request.messages[1:]]
    odd = original.model_copy(update={"request": original.request.model_copy(update={"messages": messages})})
    lines[1] = dump_json(odd)
    assert lines[1].find(',"tools":') < lines[1].find(f',"tools":{text},"params":')  # the message's field first
    path.write_text("\n".join(lines) + "\n")
    hooks = ReplayHooks(fixture, "reexecute")
    scanned, parsed = count_in_scans_and_parses(text, monkeypatch)
    cassette = hooks._read_cassette("hw_banking_002#0")
    assert sum(scanned) == 0 and len(parsed) == len(lines) and sum(parsed) == 0  # the list cut from every line
    assert [cassette.replay(x.request) for x in [interactions[0], odd]] == [interactions[0].response, odd.response]
    assert cassette.interactions == []  # answered by digest: the file was not read again


@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
def test_a_replay_reads_each_transcript_once(tools, tmp_path, monkeypatch):
    """The transcripts are checked against the recording when the replay starts, each read and parsed; the world then
    read the first simulation's transcript again for the tools list the fixture was recorded with, the list the
    check had already parsed (and found the same in every transcript)."""
    import shiftbox.replay._fixture as fixture_module

    fixture = offline_copy(LLM_FIXTURE, tmp_path, monkeypatch)
    reads: Counter[str] = Counter()
    real = fixture_module.read_transcript

    def counted(path, *args, **kwargs):
        reads[path.name] += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fixture_module, "read_transcript", counted)
    result = replay_fixture(fixture, tmp_path / "replayed", tools, concurrency=4)
    assert result.identical and result.simulations == 10, (result.problems, result.failed)
    transcripts = sorted(p.name for p in (fixture / "transcripts").iterdir())
    assert len(transcripts) == 10
    assert reads == dict.fromkeys(transcripts, 1)  # the first simulation's was read twice
