"""pass^k (all k trials succeed), pass@k (at least one does) and avg@k, averaged over tasks."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from math import comb


def pass_hat_k(n: int, c: int, k: int) -> float:
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    return 1 - comb(n - c, k) / comb(n, k)


def pass_family(outcomes: Mapping[Hashable, list[bool]]) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """Trial successes per (agent, task) -> (pass^k, pass@k, avg@k), k up to the fewest trials of any of them."""
    if not outcomes:
        return {}, {}, {}
    max_k = min(len(v) for v in outcomes.values())
    hat, at, avg = {}, {}, {}
    for k in range(1, max_k + 1):
        tasks = [(len(v), sum(v)) for v in outcomes.values()]
        hat[k] = sum(pass_hat_k(n, c, k) for n, c in tasks) / len(tasks)
        at[k] = sum(pass_at_k(n, c, k) for n, c in tasks) / len(tasks)
        avg[k] = sum(c / n for n, c in tasks) / len(tasks)
    return hat, at, avg
