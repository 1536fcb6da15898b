"""Reports: the terminal summary and the self-contained HTML report."""

from ._page import render_html, save_html
from ._plots import TOP_GOAL_PAIRS
from ._svg import histogram, nice_ticks
from ._tables import comparison_section
from ._terminal import (
    agents_summary,
    breakdown_table,
    comparison_table,
    headline_table,
    persona_gsrt_table,
    retention_table,
    run_headline_table,
    summary,
    usage_table,
)
from ._timeline import redundant_calls

__all__ = ["TOP_GOAL_PAIRS", "agents_summary", "breakdown_table", "comparison_section", "comparison_table",
           "headline_table", "histogram", "nice_ticks", "persona_gsrt_table", "redundant_calls", "render_html", "retention_table",
           "run_headline_table", "save_html", "summary", "usage_table"]
