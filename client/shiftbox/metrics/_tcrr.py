"""TCRR: share of an agent's tool calls that were redundant, per simulation.

Window rule: an identical call (same tool, canonical arguments) earlier in the same agent turn or in
the previous `WINDOW` agent turns. Batch rule: calls to one tool in one turn beyond the first
`BATCH`. A call counts once (the window rule first), so the ratio is in [0, 1]. State-aware variant:
a repeated read-only call is not redundant when a successful write happened since its twin.
"""

from __future__ import annotations

import json
from collections import Counter

from ..tasks import canonical_value
from ..trajectory import Trajectory
from ._model import TCRRScore

WINDOW = 3
BATCH = 2


def call_identity(name: str, arguments: dict) -> str:
    return json.dumps([name, canonical_value(arguments)], sort_keys=True, separators=(",", ":"))


def redundancy_labels(trajectory: Trajectory, read_only: set[str] | None = None) -> dict[str, str]:
    """call id -> why TCRR counts it redundant: "window" or "batch" (absent when it is not).

    With `read_only`, a window repeat of a read-only call made after a successful write since its
    twin is labelled "window_after_write" (redundant by default, forgiven by the state-aware variant).
    """
    calls = [c for c in trajectory.tool_calls if c.agent_turn is not None]
    seen: list[tuple[int, str, int]] = []  # (turn, identity, position)
    per_turn_tool: Counter[tuple[int, str]] = Counter()
    labels: dict[str, str] = {}
    for position, call in enumerate(calls):
        turn, identity = call.agent_turn, call_identity(call.name, call.arguments)
        twins = [p for t, ident, p in seen if ident == identity and t >= turn - WINDOW]
        per_turn_tool[(turn, call.name)] += 1
        if twins:
            wrote = read_only is not None and call.name in read_only and any(
                not c.is_error and c.name not in read_only for c in calls[twins[-1] + 1:position])
            labels[call.call_id] = "window_after_write" if wrote else "window"
        elif per_turn_tool[(turn, call.name)] > BATCH:
            labels[call.call_id] = "batch"
        seen.append((turn, identity, position))
    return labels


def tcrr_score(trajectory: Trajectory, read_only: set[str] | None = None) -> TCRRScore:
    labels = list(redundancy_labels(trajectory, read_only).values())
    n = sum(c.agent_turn is not None for c in trajectory.tool_calls)
    window = sum(label.startswith("window") for label in labels)
    batch = labels.count("batch")
    state_aware = window + batch - labels.count("window_after_write")
    redundant = window + batch
    return TCRRScore(
        calls=n, redundant=redundant, window=window, batch=batch, ratio=redundant / n if n else None,
        state_aware_redundant=state_aware if read_only is not None else None,
        state_aware_ratio=(state_aware / n if n else None) if read_only is not None else None,
    )
