"""shiftbox tasks as Inspect AI tasks (docs/inspect.md): `inspect eval shiftbox/banking --model <model>`.

Needs the `inspect` extra (`pip install 'shiftbox[inspect]'`); `import shiftbox` never loads this package. Inspect
finds the tasks through the `inspect_ai` entry point of the shiftbox package, which imports this package.
"""

import importlib.util
import os
from pathlib import Path

from .._extras import import_extra, install_command

INSTALL_INSPECT = install_command("inspect")


def bundled_tiktoken_dir() -> Path | None:
    """litellm's bundled tiktoken encodings (o200k_base among them), with which Inspect counts tokens offline (its
    mock model counts every input); None if litellm is not found."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"


import_extra("inspect_ai", "inspect", "Inspect AI")
if "TIKTOKEN_CACHE_DIR" not in os.environ and (_tokenizers := bundled_tiktoken_dir()) is not None:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_tokenizers)  # what litellm sets too when imported; never downloaded

from ._agent import SHIFT_EVENT_SOURCE, InspectModelAgent  # noqa: E402
from ._convert import agent_reply, chat_messages, inline_refs, tool_info, usage_of  # noqa: E402
from ._episode import EPISODE_KEY, REPLY_TOOL, ShiftboxTools, shiftbox_tools  # noqa: E402
from ._log import log_metrics, log_trajectories  # noqa: E402
from ._scorer import METRICS_KEY, SCORES, pass_hat, score_values, shiftbox_scores  # noqa: E402
from ._solver import TASK_KEY, TRAJECTORY_KEY, sample_trajectory, simulation  # noqa: E402
from ._tasks import (  # noqa: E402
    DEFAULT_TASKS,
    airline,
    banking,
    default_task_file,
    retail,
    shiftbox_task,
    task_file,
)

__all__ = [
    "DEFAULT_TASKS", "EPISODE_KEY", "INSTALL_INSPECT", "METRICS_KEY", "REPLY_TOOL", "SCORES", "SHIFT_EVENT_SOURCE",
    "TASK_KEY", "TRAJECTORY_KEY",
    "InspectModelAgent", "ShiftboxTools", "agent_reply", "airline", "banking", "chat_messages", "default_task_file",
    "inline_refs",
    "log_metrics", "log_trajectories",
    "bundled_tiktoken_dir", "pass_hat", "retail", "sample_trajectory", "score_values", "shiftbox_scores",
    "shiftbox_task", "shiftbox_tools", "simulation", "task_file", "tool_info", "usage_of",
]
