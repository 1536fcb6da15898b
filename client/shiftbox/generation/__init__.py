"""Task generation: seeded goal-shift task sets for a domain, built from its missions and checked by running them."""

from ._generate import (
    ACTION_TYPES,
    GENERATOR_VERSION,
    GenerationError,
    action_types,
    generate_tasks,
)

__all__ = ["ACTION_TYPES", "GENERATOR_VERSION", "GenerationError", "action_types", "generate_tasks"]
