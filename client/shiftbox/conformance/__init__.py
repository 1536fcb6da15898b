"""Conformance with a reference implementation: replay a recorded run's tool calls on shiftbox and classify
every difference (`shiftbox conformance replay`)."""

from ._compare import Comparison, compare_outcomes, parse_reference
from ._differences import (
    CLASS_LABELS,
    CLASSES,
    SECTION,
    UNEXPLAINED_CLASSES,
    DeliberateDifference,
    default_table,
    difference_class,
    find_reason,
    haystack,
    load_deliberate_differences,
)
from ._replay import CallClass, ConformanceReport, replay_agentchangebench

__all__ = ["CLASSES", "CLASS_LABELS", "SECTION", "UNEXPLAINED_CLASSES", "CallClass", "Comparison",
           "ConformanceReport", "DeliberateDifference", "compare_outcomes", "default_table",
           "difference_class", "find_reason", "haystack", "load_deliberate_differences", "parse_reference",
           "replay_agentchangebench"]
