"""Reports: the terminal summary and the self-contained HTML report."""

from ._page import render_html, save_html
from ._tables import comparison_section
from ._terminal import (
           agents_summary,
           breakdown_table,
           comparison_table,
           headline_table,
           retention_table,
           summary,
)

__all__ = ["agents_summary", "breakdown_table", "comparison_section", "comparison_table", "headline_table",
           "render_html", "retention_table", "save_html", "summary"]
