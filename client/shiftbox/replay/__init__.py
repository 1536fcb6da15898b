"""Record and replay: fixtures (cassettes + MCP transcripts) that make evaluations repeat offline."""

from ._episodes import DriftCheckingEpisode, ReplayMismatch, TranscriptEpisode
from ._fixture import (
    CASSETTES,
    FIXTURE_FILE,
    TRANSCRIPTS,
    FixtureInfo,
    RecordHooks,
    ReplayHooks,
    ToolsMode,
    finish_fixture,
)

__all__ = ["CASSETTES", "FIXTURE_FILE", "TRANSCRIPTS", "DriftCheckingEpisode", "FixtureInfo", "RecordHooks",
           "ReplayHooks", "ReplayMismatch", "ToolsMode", "TranscriptEpisode", "finish_fixture"]
