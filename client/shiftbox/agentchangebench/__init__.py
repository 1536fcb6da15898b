"""AgentChangeBench / tau2 compatibility: their task lists imported as native tasks, their recorded results
files read as trajectories, and those scored the way the AgentChangeBench code does (`--compat
agentchangebench`).

Each compat rule is written down in the module that applies it and was checked against the two recorded
banking runs: A = banking_test_run.json (gpt-4o as agent and user, 24 simulations, 84 calls) and
B = banking_gpt-4.1_2025-08-23.json (gpt-4.1 as agent and user, 13 simulations, 78 calls).

- `_clone`: the reference's files found in a local clone of its repository (`reference_db_file`,
  `reference_task_list`).
- `_import_tasks`: task lists imported with their gold outcomes (`import_agentchangebench`). The conversion of
  the reference task format itself (`reference_task_file`, re-exported here) is in `shiftbox.tasks`, because
  `load_task_file` accepts reference lists and `tasks` cannot depend on this package.
- `_results`: results files as trajectories (`load_agentchangebench_results`); `_stored`: the reference's
  own stored outputs (judge verdicts, GSRT judge shifts, rewards) that compat scoring reuses.
- `_tsr`, `_tue`, `_tcrr`, `_gsrt`: each metric's compat rules; `_run_metrics`: the run (`compat_run_metrics`).
- `_gsrt_judge`: the reference's GSRT judge asked again through the LLM boundary, for simulations without stored
  judge output (a shiftbox run scored with `--compat agentchangebench --judge MODEL`).
"""

from ..tasks import (
    REFERENCE_SNAPSHOTS,
    assign_goals,
    reference_task_file,
    single_goal,
    tau2_format_ids,
)
from ._clone import TASK_SETS, reference_db_file, reference_task_list
from ._gsrt import compat_gsrt
from ._gsrt_judge import GSRT_SYSTEM_PROMPT, gsrt_prompt, judge_gsrt, parse_gsrt_answer
from ._import_tasks import TaskFileCheck, check_task_file, import_agentchangebench
from ._results import (
    AgentChangeBenchResults,
    load_agentchangebench_results,
    load_agentchangebench_simulations,
)
from ._run_metrics import compat_run_metrics, compat_simulation_metrics, rescore_results
from ._tcrr import compat_tcrr
from ._tsr import compat_tsr
from ._tue import compat_tue

__all__ = [
    "GSRT_SYSTEM_PROMPT", "gsrt_prompt", "judge_gsrt", "parse_gsrt_answer",
    "REFERENCE_SNAPSHOTS", "TASK_SETS", "TaskFileCheck", "check_task_file", "AgentChangeBenchResults", "assign_goals", "compat_gsrt", "compat_run_metrics",
    "compat_simulation_metrics", "compat_tcrr", "compat_tsr", "compat_tue", "import_agentchangebench",
    "load_agentchangebench_results", "load_agentchangebench_simulations", "reference_db_file",
    "reference_task_file", "reference_task_list", "rescore_results", "single_goal", "tau2_format_ids",
]
