"""Task generation: seeded goal-shift task sets for a domain, built from its missions and checked by running them."""

from ._cross import (
    CROSS_GENERATOR_VERSION,
    generate_cross_tasks,
    identity_conflict,
    plan_cross_goals,
)
from ._generate import (
    ACTION_TYPES,
    COVERS,
    GENERATOR_VERSION,
    GenerationError,
    feasible_type_sequences,
    generate_tasks,
    probe_types,
    rubric_from_goals,
    type_sequences,
)

__all__ = ["CROSS_GENERATOR_VERSION", "generate_cross_tasks", "identity_conflict", "plan_cross_goals",
           "ACTION_TYPES", "COVERS", "GENERATOR_VERSION", "GenerationError", "feasible_type_sequences", "generate_tasks",
           "probe_types", "rubric_from_goals", "type_sequences"]
