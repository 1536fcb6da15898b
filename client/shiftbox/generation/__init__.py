"""Task generation: seeded goal-shift task sets for a domain, built from its missions and checked by running them."""

from ._cross import (
    CROSS_GENERATOR_VERSION,
    generate_cross_tasks,
    identity_conflict,
    plan_cross_goals,
)
from ._generate import (
    ACTION_TYPES,
    GENERATOR_VERSION,
    GenerationError,
    generate_tasks,
    rubric_from_goals,
)

__all__ = ["CROSS_GENERATOR_VERSION", "generate_cross_tasks", "identity_conflict", "plan_cross_goals",
           "ACTION_TYPES", "GENERATOR_VERSION", "GenerationError", "generate_tasks",
           "rubric_from_goals"]
