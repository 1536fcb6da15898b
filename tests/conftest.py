"""Shared test fixtures: paths, the anyio backend, a local Ray cluster, a tiny MCP call helper, and httpx's transport
unwrapped after each test."""

from __future__ import annotations

import os
import sys
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


@pytest.fixture(autouse=True)
def no_cassette_routing():
    """An HTTP cassette wraps httpx's async transport for the rest of its process (`_http_cassette`, simulations may
    still be running): each test ends with the wrap undone, so the next one sees the transport of a fresh process."""
    yield
    routing = sys.modules.get("shiftbox.llm._http_cassette")
    if routing is not None and routing._original:
        import httpx

        httpx.AsyncHTTPTransport.handle_async_request = routing._original[0]
        routing._original.clear()


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 2 CPUs on 127.0.0.1 for a module's tests (started as shiftbox starts one), or skip
    saying why when Ray, the optional extra shiftbox[ray], is not installed."""
    from shiftbox.cluster import local_ray_cluster, ray_installed

    if not ray_installed():
        pytest.skip("Ray is not installed (the optional extra shiftbox[ray]; `make env` installs it)")
    with local_ray_cluster(num_cpus=2) as ray:
        yield ray


def require_acb(*parts: str) -> Path:
    """Path inside ../shared/external/agentchangebench, or skip with a clear reason when absent."""
    path = ACB.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"AgentChangeBench reference data not found at {path}: the tests read ../shared beside the repo, "
                    "its external/agentchangebench/ holding the data files of github.com/calissaman/AgentChangeBench "
                    "(a domain's in data/tau2/domains/<domain>/ there; docs/quickstart.md)")
    return path


def require_tau2(*parts: str) -> Path:
    """Path inside ../shared/external/tau2 (tau2-bench's upstream data), or skip with a clear reason when absent."""
    path = TAU2.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"tau2-bench reference data not found at {path}: the tests read ../shared beside the repo, its "
                    "external/tau2/<domain>/ holding the files of github.com/sierra-research/tau2-bench's "
                    "data/tau2/domains/<domain>/ (docs/quickstart.md)")
    return path


ACB_CLONE_FILES = {"banking": ("db.toml", "tasks.json", "policy.md", "user_policy.md", "user_personas.json"),
                   "retail": ("db.json", "tasks.json", "tasks-new.json", "policy.md", "user_policy.md",
                              "user_personas.json"),
                   "airline": ("tasks.json", "tasks_new.json", "policy.md", "user_policy.md", "user_personas.json")}
"""The reference's files in a clone of AgentChangeBench (its airline db.json is missing upstream)."""


def make_acb_clone(root: Path) -> Path:
    """A folder laid out as a clone of AgentChangeBench (data/tau2/domains/<domain>/...), its files linked to
    ../shared's copies (skip when absent)."""
    for domain, names in ACB_CLONE_FILES.items():
        folder = root / "data" / "tau2" / "domains" / domain
        folder.mkdir(parents=True)
        for name in names:
            (folder / name).symlink_to(require_acb(domain, name).resolve())
    (root / "README.md").write_text("AgentChangeBench\n")
    return root
