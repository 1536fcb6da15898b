"""Shared test fixtures: paths, the anyio backend, and a tiny MCP call helper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ACB = SHARED / "external" / "agentchangebench"
TAU2 = SHARED / "external" / "tau2"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def require_acb(*parts: str) -> Path:
    """Path inside ../shared/external/agentchangebench, or skip with a clear reason when absent."""
    path = ACB.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"AgentChangeBench reference data not found at {path} (expected ../shared beside the repo)")
    return path


def require_tau2(*parts: str) -> Path:
    """Path inside ../shared/external/tau2 (tau2-bench's upstream data), or skip with a clear reason when absent."""
    path = TAU2.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"tau2-bench reference data not found at {path} (expected ../shared beside the repo)")
    return path
