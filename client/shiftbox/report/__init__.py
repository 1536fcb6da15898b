"""Reports: the terminal summary and the self-contained HTML report."""

from ._terminal import breakdown_table, headline_table, summary

__all__ = ["breakdown_table", "headline_table", "summary"]
