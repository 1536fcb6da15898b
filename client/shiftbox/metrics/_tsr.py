"""TSR: partial-credit task success over communicate_info, action and nl_assertion channels."""

from __future__ import annotations

import re

from shiftbox_servers.kit import combined_state_digest, domain_list, is_cross_domain

from ..tasks import ActionSet, Task, params_match
from ..trajectory import Trajectory
from ._judges import Judge
from ._model import TSRScore

WEIGHTS = {"communicate_info": 0.25, "action": 0.45, "nl_assertion": 0.30}


def normalize_text(text: str) -> str:
    """Lowercase, no currency signs, no thousands separators: '$1,234.50' and '1234.50' read the same."""
    text = re.sub(r"[$€£]", "", text.lower())
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    return re.sub(r"\s+", " ", text)


def agent_text(trajectory: Trajectory) -> str:
    return " ".join(m.content or "" for m in trajectory.messages if m.role == "assistant")


def communicate_info_score(trajectory: Trajectory, items: list[str]) -> float | None:
    """Share of the required facts the agent said (None when the task requires none)."""
    if not items:
        return None
    said = normalize_text(agent_text(trajectory))
    return sum(normalize_text(item).strip() in said for item in items) / len(items)


def action_set_score(action: ActionSet, calls: list[tuple[str, dict, bool, str | None]]) -> float:
    """0.5 for the right tool, +0.5 when its params match too; best over alternatives and the calls whose
    outcome the alternative expects (success, or a failure of its `expected_error` kind)."""
    best = 0.0
    for spec in action.allowed_tools:
        for name, arguments, failed, kind in calls:
            if name == spec.function_name and spec.outcome_matches(failed, kind):
                best = max(best, 1.0 if params_match(spec, arguments, action.required_parameters) else 0.5)
    return best


def action_score(trajectory: Trajectory, actions: list[ActionSet]) -> float | None:
    if not actions:
        return None
    calls = [(c.name, c.arguments, c.is_error, c.error_kind) for c in trajectory.tool_calls]
    return sum(action_set_score(a, calls) for a in actions) / len(actions)


def tsr_score(trajectory: Trajectory, task: Task, judge: Judge | None = None) -> TSRScore:
    criteria = task.evaluation_criteria
    channels = {
        "communicate_info": communicate_info_score(trajectory, criteria.communicate_info),
        "action": action_score(trajectory, criteria.action_sets),
        "nl_assertion": None,
    }
    nl_status = "absent"
    if criteria.nl_assertions:
        verdicts = judge.nl_assertions(trajectory, criteria.nl_assertions) if judge else None
        if verdicts is not None and len(verdicts.met) == len(criteria.nl_assertions):
            channels["nl_assertion"] = sum(verdicts.met) / len(verdicts.met)
            nl_status = "judged"
        else:
            nl_status = "not_judged"
    present = {k: v for k, v in channels.items() if v is not None}
    unscored = [] if nl_status == "judged" else task.unchecked_goals()
    score = (sum(WEIGHTS[k] * v for k, v in present.items()) / sum(WEIGHTS[k] for k in present)
             if present and not unscored else None)
    expected = criteria.expected_state_digest
    final = final_state_digest(trajectory)
    state_match = (final == expected) if expected and final else None
    return TSRScore(score=score, nl_status=nl_status, state_match=state_match, unscored_goals=unscored, **channels)


def final_state_digest(trajectory: Trajectory) -> str | None:
    """The state digest a task's `expected_state_digest` is compared with: the domain's; for a cross-domain
    task ("banking,airline"), the combined digest of its domains' final states (`combined_state_digest`)."""
    if not is_cross_domain(trajectory.domain):
        return trajectory.final_state.get(trajectory.domain)
    names = domain_list(trajectory.domain)
    if any(n not in trajectory.final_state for n in names):
        return None
    return combined_state_digest(trajectory.final_state, names)
