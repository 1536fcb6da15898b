"""Multi-Mission Tool Bench's reports over a run's reached goals, as its analysis computes them: path accuracy overall,
by mission type, position, both, call structure, relation and full type prefix (with each prefix length's variance),
the optimal path rate over parallel and serial+parallel goals, and the accomplished progress pooled over serial and
serial+parallel goals."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import product

from ..tasks import MMTB_TYPES
from ._model import MissionAggregate, MissionSlice, MissionVerdict, SimulationMetrics
from ._ratios import ratio

PREFIX_DEPTH = 4
OPTIMAL_STRUCTURES = ("parallel", "serial+parallel")
PROGRESS_STRUCTURES = ("serial", "serial+parallel")
STRUCTURES = ("parallel", "serial", "serial+parallel")
RELATIONS = ("none", "previous", "long_term")
SEPARATOR = "->"


def _slice(verdicts: Sequence[MissionVerdict]) -> MissionSlice:
    correct = sum(v.success for v in verdicts)
    return MissionSlice(goals=len(verdicts), correct=correct, accuracy=ratio(correct, len(verdicts)))


def every_prefix(depth: int = PREFIX_DEPTH) -> list[str]:
    """Every full prefix of MMTB types, by length, each length in the types' order ("single", ..., "chat->chat")."""
    return [SEPARATOR.join(p) for n in range(1, depth + 1) for p in product(MMTB_TYPES, repeat=n)]


def _variance(values: list[float]) -> float | None:
    """Sample variance (n - 1); None with fewer than two values."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def layer_variance(after: dict[str, list[MissionVerdict]]) -> dict[str, float | None]:
    """Prefix length -> variance, over the prefixes of that length, of the accuracy of the goals right after each."""
    by_length: dict[int, list[float]] = defaultdict(list)
    for prefix, verdicts in after.items():
        by_length[prefix.count(SEPARATOR) + 1].append(sum(v.success for v in verdicts) / len(verdicts))
    return {str(n): _variance(by_length[n]) for n in range(1, max([PREFIX_DEPTH - 1, *by_length]) + 1)}


def _pooled_progress(verdicts: Iterable[MissionVerdict]) -> tuple[float | None, int]:
    chosen = list(verdicts)
    return ratio(sum(v.matched for v in chosen), sum(v.gold_steps for v in chosen)), len(chosen)


def aggregate_missions(sims: Iterable[SimulationMetrics]) -> MissionAggregate:
    """MMTB's reports over the reached goals of the simulations (docs/metrics.md)."""
    reached: list[MissionVerdict] = []
    not_reached = 0
    prefixes: dict[str, list[MissionVerdict]] = defaultdict(list)
    after: dict[str, list[MissionVerdict]] = defaultdict(list)
    for sim in sims:
        types: list[str] = []
        for v in sim.paths:
            types.append(v.mission_type)
            if not v.reached:
                not_reached += 1
                continue
            reached.append(v)
            prefix = [*(v.earlier_types or ()), *types]
            if len(prefix) != v.position:
                continue  # a goal after gold turns of unknown type: no cell of the prefix table
            prefixes[SEPARATOR.join(prefix)].append(v)
            if len(prefix) > 1:
                after[SEPARATOR.join(prefix[:-1])].append(v)
    n = len(reached)
    by_type: dict[str, list[MissionVerdict]] = defaultdict(list)
    by_position: dict[str, list[MissionVerdict]] = defaultdict(list)
    by_cell: dict[str, dict[str, list[MissionVerdict]]] = defaultdict(lambda: defaultdict(list))
    by_structure: dict[str, list[MissionVerdict]] = defaultdict(list)
    by_relation: dict[str, list[MissionVerdict]] = defaultdict(list)
    for v in reached:
        by_type[v.mission_type].append(v)
        by_position[str(v.position)].append(v)
        by_cell[v.mission_type][str(v.position)].append(v)
        by_relation[v.relation].append(v)
        if v.structure:
            by_structure[v.structure].append(v)
    optimal_pool = [v for v in reached if v.structure in OPTIMAL_STRUCTURES]
    progress, progress_goals = _pooled_progress(v for v in reached if v.structure in PROGRESS_STRUCTURES)
    types_seen = [t for t in MMTB_TYPES if t in by_type]
    return MissionAggregate(
        goals=n, not_reached=not_reached, accuracy=ratio(sum(v.success for v in reached), n),
        optimal=ratio(sum(v.optimal for v in optimal_pool), len(optimal_pool)), optimal_goals=len(optimal_pool),
        optimal_by_structure={s: ratio(sum(v.optimal for v in by_structure.get(s, [])), len(by_structure.get(s, [])))
                              for s in OPTIMAL_STRUCTURES},
        progress=progress, progress_goals=progress_goals,
        progress_by_structure={s: _pooled_progress(by_structure.get(s, []))[0] for s in PROGRESS_STRUCTURES},
        endings=dict(sorted(Counter(v.ending for v in reached).items())),
        argument_failures=sum(v.arguments_pass is False for v in reached),
        by_type={t: _slice(by_type[t]) for t in types_seen},
        by_position={k: _slice(by_position[k]) for k in sorted(by_position, key=int)},
        by_type_and_position={t: {k: _slice(by_cell[t][k]) for k in sorted(by_cell[t], key=int)} for t in types_seen},
        by_structure={s: _slice(by_structure[s]) for s in STRUCTURES if s in by_structure},
        by_relation={r: _slice(by_relation[r]) for r in RELATIONS if r in by_relation},
        prefixes={p: _slice(prefixes.get(p, [])) for p in every_prefix()},
        layer_variance=layer_variance(after),
    )
