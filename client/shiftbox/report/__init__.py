"""Reports: the terminal summary and the self-contained HTML report."""

from ._html import render_html, write_html_report
from ._terminal import (
           agents_summary,
           breakdown_table,
           comparison_table,
           headline_table,
           retention_table,
           summary,
)

__all__ = ["agents_summary", "breakdown_table", "comparison_table", "headline_table", "retention_table", "render_html", "summary",
           "write_html_report"]
