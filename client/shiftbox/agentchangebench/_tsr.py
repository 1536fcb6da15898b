"""Compat TSR and success, per simulation (A and B are the recorded runs named in the package notes).

  * Weights communicate_info 0.25, action 0.45, nl_assertion 0.30 (shiftbox's own, `metrics.WEIGHTS`),
    renormalized over the channels the task has; a simulation with no channel scores 0.0. (B stores
    `weights_used` with these weights.)
  * communicate_info: the contents of every assistant message with non-empty content, joined by a
    single space and lowercased; score = share of the task's strings whose lowercase form is a plain
    substring. No number or currency normalization.
  * action: the reference's action sets (tau2 `actions` become one set per action). For each allowed
    tool, only the *first* call of that name anywhere in the conversation (any role) is looked at; it
    scores 0.5, plus 0.5 when every expected param is present with an equal value (plain `==`, no
    canonicalization; `required_parameters` is ignored). Errored calls count like any other. The set
    scores the max over its allowed tools; the channel is the mean over sets.
  * nl_assertion: verdicts are never re-judged: they come from `reward_info.info.tsr_details.
    nl_assertion_details`, else `reward_info.nl_assertions`, used only when their assertion texts equal
    the task's. Score = met / number of task assertions. Without usable verdicts the channel is "not
    judged" and left out of the weights (the reference also drops the channel when its judge fails).
  * Evidence: B stores `info.tsr_details`; all 13 simulations reproduce `overall_tsr` and each channel
    to 1e-9 with exactly these rules, and the means are 0.348718 (TSR), 0.158333 (communicate_info),
    0.262821 (action), 0.602564 (nl_assertion). A stores no `tsr_details` (the reference aggregate then
    fails and prints -1); its values are recomputed with the same rules from the stored NL verdicts
    (A's tasks have no communicate_info).
  * success (pass^k) = the stored `reward_info.reward` within 1e-6 of 1 on either side (the reference's
    `is_successful`, applied by `get_metrics_df` to `Results.to_df().reward`); a simulation with no stored
    reward (a native run) uses its recomputed TSR instead. In B the stored reward equals the TSR; in A
    every stored reward is 0.0 while the recomputed TSR reaches 0.7.
"""

from __future__ import annotations

from ..metrics import WEIGHTS, TSRScore
from ..tasks import Task
from ..trajectory import Trajectory
from ._conversation import all_calls
from ._stored import stored_nl_verdicts, stored_reward


def _assistant_text(trajectory: Trajectory) -> str:
    return " ".join(m.content for m in trajectory.messages if m.role == "assistant" and m.content).lower()


def compat_communicate_info(trajectory: Trajectory, required: list[str]) -> float | None:
    if not required:
        return None
    text = _assistant_text(trajectory)
    return sum(s.lower() in text for s in required) / len(required)


def compat_action(trajectory: Trajectory, task: Task) -> float | None:
    sets = task.evaluation_criteria.action_sets
    if not sets:
        return None
    calls = all_calls(trajectory)
    total = 0.0
    for action in sets:
        best = 0.0
        for allowed in action.allowed_tools:
            first = next((c for c in calls if c.name == allowed.function_name), None)
            if first is None:
                continue
            exact = all(k in first.arguments and first.arguments[k] == v for k, v in allowed.params.items())
            best = max(best, 0.5 + (0.5 if exact else 0.0))
        total += best
    return total / len(sets)


def compat_tsr(trajectory: Trajectory, task: Task) -> TSRScore:
    criteria = task.evaluation_criteria
    channels: dict[str, float] = {}
    communicate = compat_communicate_info(trajectory, criteria.communicate_info)
    if communicate is not None:
        channels["communicate_info"] = communicate
    action = compat_action(trajectory, task)
    if action is not None:
        channels["action"] = action
    nl_status = "absent"
    if criteria.nl_assertions:
        verdicts = stored_nl_verdicts(trajectory, criteria.nl_assertions)
        nl_status = "not_judged" if verdicts is None else "judged"
        if verdicts is not None:
            channels["nl_assertion"] = sum(verdicts) / len(criteria.nl_assertions)
    weight = sum(WEIGHTS[k] for k in channels)
    score = sum(WEIGHTS[k] / weight * v for k, v in channels.items()) if weight else 0.0
    return TSRScore(score=score, communicate_info=channels.get("communicate_info"),
                    action=channels.get("action"), nl_assertion=channels.get("nl_assertion"),
                    nl_status=nl_status)


def is_successful(reward: float) -> bool:
    """The reference's `is_successful`: the reward within 1e-6 of 1, on either side."""
    return 1 - 1e-6 <= reward <= 1 + 1e-6


def compat_success(trajectory: Trajectory, tsr: TSRScore) -> bool:
    """Success from the stored reward, else (a native run) from the recomputed TSR."""
    reward = stored_reward(trajectory)
    return is_successful(reward if reward is not None else tsr.score or 0.0)
