"""Replay: re-run a recorded evaluation (a fixture, see `shiftbox.runs` for recording) offline and check it repeats."""

from ._episodes import DriftCheckingEpisode, ReplayMismatch, TranscriptEpisode
from ._fixture import ReplayHooks, ToolsMode
from ._replay import TOOLS_MODES, ReplayResult, compare_runs, replay_fixture

__all__ = ["TOOLS_MODES", "DriftCheckingEpisode", "ReplayHooks", "ReplayMismatch", "ReplayResult", "ToolsMode",
           "TranscriptEpisode", "compare_runs", "replay_fixture"]
