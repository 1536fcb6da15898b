"""docs/quickstart.md followed literally, in a scratch checkout: every code block runs (but `make demo` / `make
test`: the scratch checkout is as `make demo` leaves it, and `make test` is the whole suite), in page order, each
command checked to succeed.

The fake LLM's documented port is replaced by a free one; `git clone` of the public repositories gets a local copy
(AgentChangeBench's files from ../shared, its recorded run included; for tau2-bench's airline db.json, whose copy
is not in ../shared, the small tau2-format airline database of tests/servers/airline/test_import_acb.py)."""

from __future__ import annotations

import json

import pytest

from shiftbox.runs import score_run
from shiftbox.trajectory import read_trajectories
from tests.client.walkthrough import code_blocks, run_beside_fake_llm, run_script, scratch_checkout
from tests.conftest import make_acb_clone, require_acb
from tests.servers.airline.test_import_acb import DB as SMALL_AIRLINE_DB

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # many CLI starts; minutes on a busy machine
ACB_URL, TAU2_URL = "https://github.com/calissaman/AgentChangeBench", "https://github.com/sierra-research/tau2-bench"
RECORDED_RUN = "2025-08-23T16:09:09.531903_banking_llm_agent_gpt-4.1_banking_user_simulator_gpt-4.1.json"


def blocks() -> dict[str, str]:
    """The page's blocks by role; a block added to the page and not named here fails this test."""
    make, oracle, fake_llm, llm_runs, reference, airline = code_blocks("quickstart.md")
    assert "make demo" in make and "make test" in make
    assert "fake-llm" in fake_llm and "--agent litellm:" in llm_runs and "cmd:" in llm_runs
    assert f"git clone {ACB_URL}" in reference and f"git clone {TAU2_URL}" in airline
    return {"oracle": oracle, "fake_llm": fake_llm, "llm_runs": llm_runs, "reference": reference, "airline": airline}


def check(done) -> str:
    """A block's stdout, once it ran to the end (else its output, the failing command last)."""
    assert done.returncode == 0, f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-6000:]}"
    return done.stdout


def test_the_first_half_runs_offline_with_the_fake_llm(tmp_path):
    page = blocks()
    checkout, env = scratch_checkout(tmp_path)
    check(run_script(page["oracle"], checkout, env))
    assert len(read_trajectories(checkout / "runs" / "oracle")) == 5 * 3
    assert (checkout / "runs" / "oracle" / "report.html").exists()
    check(run_beside_fake_llm(page["fake_llm"], page["llm_runs"], checkout, env))
    for run in ("fake-llm", "fake-cmd"):
        every = read_trajectories(checkout / "runs" / run)
        assert len(every) == 2 and all(t.termination.reason == "user_stop" for t in every), run
        assert score_run(checkout / "runs" / run)[0].tsr.mean == 1.0, run  # the scripted model makes the gold calls


def test_the_reference_half_runs_on_clones_of_the_public_repositories(tmp_path):
    page = blocks()
    acb = make_acb_clone(tmp_path / "copies" / "AgentChangeBench")
    (acb / "data" / "simulations").mkdir()
    (acb / "data" / "simulations" / RECORDED_RUN).symlink_to(require_acb("simulations", "banking_gpt-4.1_2025-08-23.json"))
    tau2 = tmp_path / "copies" / "tau2-bench" / "data" / "tau2" / "domains" / "airline"
    tau2.mkdir(parents=True)
    (tau2 / "db.json").write_text(json.dumps(SMALL_AIRLINE_DB))
    checkout, env = scratch_checkout(tmp_path / "work", {ACB_URL: acb, TAU2_URL: tmp_path / "copies" / "tau2-bench"})
    out = check(run_script(page["reference"], checkout, env))
    assert "are the reference's own data errors" in " ".join(out.split())  # counted apart by validate (exit 0)
    assert len(read_trajectories(checkout / "runs" / "acb")) == 50
    check(run_script(page["airline"], checkout, env))
    assert json.loads((checkout / "runs" / "acb-airline.json").read_text())["snapshot"] == "airline/acb-v1"
