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


def tcrr_score(trajectory: Trajectory, read_only: set[str] | None = None) -> TCRRScore:
    calls = [c for c in trajectory.tool_calls if c.agent_turn is not None]
    seen: list[tuple[int, str, int]] = []  # (turn, identity, position)
    per_turn_tool: Counter[tuple[int, str]] = Counter()
    window = batch = state_aware = 0
    for position, call in enumerate(calls):
        turn, identity = call.agent_turn, call_identity(call.name, call.arguments)
        twins = [p for t, ident, p in seen if ident == identity and t >= turn - WINDOW]
        per_turn_tool[(turn, call.name)] += 1
        if twins:
            window += 1
            if read_only is not None:
                last = twins[-1]
                wrote = any(not c.is_error and c.name not in read_only for c in calls[last + 1:position])
                state_aware += not (call.name in read_only and wrote)
        elif per_turn_tool[(turn, call.name)] > BATCH:
            batch += 1
            state_aware += 1
        seen.append((turn, identity, position))
    n = len(calls)
    redundant = window + batch
    return TCRRScore(
        calls=n, redundant=redundant, window=window, batch=batch, ratio=redundant / n if n else None,
        state_aware_redundant=state_aware if read_only is not None else None,
        state_aware_ratio=(state_aware / n if n else None) if read_only is not None else None,
    )
