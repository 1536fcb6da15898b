"""Recording a run as a fixture that replays offline (`shiftbox run --record DIR`; `shiftbox.replay` replays it).

A fixture directory holds `fixture.json` (versions, git commit, models and their parameters,
seeds, server versions and snapshot hashes), the run's `run.json`, `tasks.json` and
`trajectories.jsonl`, one LLM cassette per simulation (`cassettes/<sim>.jsonl`) and one MCP
transcript per simulation (`transcripts/<sim>.jsonl`: the tools list, then every tools/call with
arguments, result, error kind and latency). All text, diffable, and free of credentials: LLM
connection details are never part of a recorded request. With `--llm-cassettes http` each simulation's LLM
calls are recorded instead as HTTP exchanges, in a vcrpy cassette (`cassettes/<sim>.yaml`, credential headers
filtered), and a replay runs them through litellm again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel

from shiftbox_servers.kit import snapshots_root

from .._text import first_line
from ..errors import writing_to
from ..llm import Cassette, HttpCassette, http_cassette_file
from ..trajectory import (
    TRAJECTORIES_FILE,
    ServerInfo,
    Trajectory,
)
from ..world import World
from ._config import RunMetadata
from ._files import RUN_FILE, TASKS_FILE, read_model_file, write_run_metadata
from ._simulations import RunHooks

FIXTURE_FILE = "fixture.json"
CASSETTES, TRANSCRIPTS = "cassettes", "transcripts"
LlmCassettes = Literal["boundary", "http"]
LLM_CASSETTES: tuple[str, ...] = get_args(LlmCassettes)


_READABLE = re.compile(r"([A-Za-z0-9_.-]{1,120})#(\d{1,9})")
"""A simulation id named as it reads: `<task>#<trial>`, the task id of file-name characters and not too long."""
NAME_PREFIX = 64
"""Characters of the id kept (file-name characters only) before the hash in the other simulations' file names."""


def fixture_file_name(simulation_id: str) -> str:
    """The file of a simulation in a fixture's folders (cassettes, transcripts, judge cassettes), for every writer
    and reader. `<task>#<trial>` of file-name characters is `<task>_<trial>.jsonl` (the names fixtures have always
    had; one name, one id: the trial is what follows the last `_`). Any other id is its first `NAME_PREFIX`
    file-name characters, `~` (never in the first kind) and a hash of the whole id: ids that differ only in
    characters a file name cannot hold (`a/b`, `a_b`) or beyond the prefix get different files, and every name
    fits a file system's 255 bytes."""
    readable = _READABLE.fullmatch(simulation_id)
    if readable:
        return f"{readable[1]}_{readable[2]}.jsonl"
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", simulation_id)[:NAME_PREFIX]
    return f"{prefix}~{hashlib.sha256(simulation_id.encode()).hexdigest()[:16]}.jsonl"


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


class FixtureInfo(BaseModel):
    shiftbox_version: str
    git_commit: str | None
    run: RunMetadata
    servers: dict[str, ServerInfo]


def transcript_calls(trajectory: Trajectory) -> list[dict]:
    """The tools/call lines of a trajectory's transcript: setup calls first, then the agent's (call 0, 1, …)."""
    return [{"method": "tools/call", "setup": setup, "name": c.name, "arguments": c.arguments, "result": c.result,
             "is_error": c.is_error, "error_kind": c.error_kind, "latency_ms": c.timing.get("latency_ms")}
            for setup, calls in ((True, trajectory.setup_calls), (False, trajectory.tool_calls)) for c in calls]


def transcript_lines(trajectory: Trajectory, tools: list[dict]) -> str:
    lines = [{"method": "tools/list", "tools": tools}, *transcript_calls(trajectory)]
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)


class RecordHooks(RunHooks):
    """A live run that also writes a cassette and a transcript per simulation into `fixture_dir`."""

    def __init__(self, fixture_dir: Path, llm_cassettes: LlmCassettes = "boundary"):
        self.dir, self.llm_cassettes = fixture_dir, llm_cassettes
        with writing_to(fixture_dir, "--record"):
            (fixture_dir / CASSETTES).mkdir(parents=True, exist_ok=True)
            (fixture_dir / TRANSCRIPTS).mkdir(parents=True, exist_ok=True)

    def cassette(self, simulation_id: str) -> Cassette:
        path = self.dir / self.files_of(simulation_id)[0]
        if self.llm_cassettes == "http":
            return HttpCassette(simulation_id, path, "record")
        return Cassette(simulation_id, path, "record")

    def finished(self, trajectory: Trajectory, world: World) -> None:
        path = self.dir / self.files_of(trajectory.simulation_id)[1]
        path.write_text(transcript_lines(trajectory, world.tools))

    def files_of(self, simulation_id: str) -> tuple[Path, Path]:
        """A simulation's cassette and transcript, relative to the fixture directory."""
        cassette = Path(CASSETTES) / fixture_file_name(simulation_id)
        if self.llm_cassettes == "http":
            cassette = http_cassette_file(cassette)
        return cassette, Path(TRANSCRIPTS) / fixture_file_name(simulation_id)

    def elsewhere(self, scratch: Path) -> RecordHooks:
        """The same recording into `scratch` (a Ray actor's own disk; the driver writes the files it ships back)."""
        return RecordHooks(scratch, self.llm_cassettes)

    def take(self, simulation_id: str) -> dict[str, bytes]:
        """A simulation's recorded files (relative path -> bytes), removed from this directory."""
        files = {}
        for relative in self.files_of(simulation_id):
            with contextlib.suppress(FileNotFoundError):  # no LLM call: no cassette
                files[relative.as_posix()] = (self.dir / relative).read_bytes()
                (self.dir / relative).unlink()
        return files

    def put(self, files: dict[str, bytes]) -> None:
        """Write files `take` shipped from elsewhere into this fixture directory."""
        for relative, data in sorted(files.items()):
            (self.dir / relative).write_bytes(data)


def portable_snapshot(snapshot: str) -> str:
    """A run's `snapshot` as a fixture records it: each directory (comma-separated across domains) relative to the
    snapshots root when it lies under it (`banking/v1`), so a fixture names no path of the recording machine."""
    root = snapshots_root().resolve()
    parts = []
    for part in snapshot.split(","):
        path = Path(part).resolve()
        parts.append(path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path))
    return ",".join(parts)


def recorded_snapshot_dirs(snapshot: str) -> list[Path]:
    """Where a fixture's recorded `snapshot` may be: under the snapshots root (an absolute path, as older fixtures
    recorded, stays itself), then as written (relative to the working directory)."""
    return list(dict.fromkeys([snapshots_root() / snapshot, Path(snapshot)]))


def finish_fixture(fixture_dir: Path, run_dir: Path, trajectories: list[Trajectory]) -> FixtureInfo:
    """Copy the finished run into the fixture (its snapshot recorded relative to the snapshots root) and write
    fixture.json, with the servers' identities of `trajectories` (the run's, in its file's order: not parsed again)."""
    if fixture_dir.resolve() != run_dir.resolve():
        for name in (TASKS_FILE, TRAJECTORIES_FILE):
            shutil.copyfile(run_dir / name, fixture_dir / name)
    metadata = RunMetadata.model_validate_json((run_dir / RUN_FILE).read_text())
    metadata.config.snapshot = portable_snapshot(metadata.config.snapshot)
    write_run_metadata(fixture_dir, metadata)
    servers: dict[str, ServerInfo] = {}
    for t in trajectories:
        servers.update(t.servers)
    info = FixtureInfo(shiftbox_version=version("shiftbox"), git_commit=git_commit(), run=metadata, servers=servers)
    (fixture_dir / FIXTURE_FILE).write_text(info.model_dump_json(indent=2) + "\n")
    return info


def read_fixture_info(fixture_dir: Path) -> FixtureInfo:
    """fixture.json, or a RunFileError naming it (a tampered file is refused, never a traceback)."""
    return read_model_file(fixture_dir / FIXTURE_FILE, FixtureInfo, "restore it or record the fixture again")


def refuse_fixture(fixture_dir: Path, failed: list[Trajectory], total: int) -> str:
    """Leave `fixture_dir` unfinished (no fixture.json, an earlier one removed: `shiftbox replay` refuses it) and say
    why: the simulations that failed for reasons not the agent's, the first ones named with their detail."""
    (fixture_dir / FIXTURE_FILE).unlink(missing_ok=True)
    named = []
    for t in sorted(failed, key=lambda t: t.simulation_id)[:5]:
        detail = first_line(t.termination.detail, 200)
        named.append(f"{t.simulation_id} ({t.termination.blame}: {t.termination.reason}"
                     + (f": {detail}" if detail else "") + ")")
    more = f" and {len(failed) - len(named)} more" if len(failed) > len(named) else ""
    return (f"fixture {fixture_dir} not finished (no {FIXTURE_FILE}): {len(failed)} of {total} simulations ended for "
            f"reasons not the agent's, which a fixture would replay as its results: {'; '.join(named)}{more}. "
            "Fix the cause (credentials, api_base of each role, servers) and record again")
