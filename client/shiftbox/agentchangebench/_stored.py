"""What an imported simulation keeps of the reference's own outputs (`reward_info`, kept verbatim as the
trajectory's `source_data`): the GSRT judge's shifts, the NL-assertion verdicts and the reward. Compat
scoring reuses them; nothing is judged again."""

from __future__ import annotations

from typing import Any

from ..trajectory import Trajectory


def as_int(value: Any) -> int | None:
    """An int as the reference stores it (a bool is not one), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def judge_shifts(reward_info: Any) -> list[dict] | None:
    """The judge's user_goal_shifts, or None when the simulation has no GSRT judge output."""
    info = reward_info.get("info") if isinstance(reward_info, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("gsrt_v2"), dict):
        return None
    shifts = info["gsrt_v2"].get("user_goal_shifts")
    return [s for s in shifts if isinstance(s, dict)] if isinstance(shifts, list) else []


def has_judge_output(trajectory: Trajectory) -> bool:
    """The reference's test for cached GSRT data: `gsrt_v2` or `gsrt_enhanced` in reward_info.info."""
    info = (trajectory.source_data or {}).get("info")
    return isinstance(info, dict) and bool(info) and ("gsrt_v2" in info or "gsrt_enhanced" in info)


def stored_reward(trajectory: Trajectory) -> float | None:
    """The reference's stored `reward_info.reward` of an imported simulation, or None."""
    value = (trajectory.source_data or {}).get("reward")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def stored_nl_verdicts(trajectory: Trajectory, assertions: list[str]) -> list[bool] | None:
    """The reference's stored verdicts for exactly these assertions, or None."""
    data = trajectory.source_data or {}
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    details = (info.get("tsr_details") or {}).get("nl_assertion_details") if isinstance(
        info.get("tsr_details"), dict) else None
    for candidate in (details, data.get("nl_assertions")):
        if isinstance(candidate, list) and all(isinstance(v, dict) for v in candidate) \
                and [v.get("nl_assertion") for v in candidate] == assertions:
            return [bool(v.get("met")) for v in candidate]
    return None


def stores_tsr_details(trajectory: Trajectory) -> bool:
    """Whether the simulation stores `reward_info.info.tsr_details` (the reference's TSR aggregate needs it)."""
    return isinstance(((trajectory.source_data or {}).get("info") or {}).get("tsr_details"), dict)
