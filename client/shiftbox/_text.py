"""Shortening text for one-line messages: at a word boundary, with an ellipsis, never mid-word."""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters, else its longest run of whole words that does, then "…"
    (a single word longer than `limit` is cut, as there is no boundary to cut at)."""
    if len(text) <= limit:
        return text
    head = text[:limit + 1]
    cut = head.rstrip().rfind(" ") if not head[limit].isspace() else limit
    kept = (text[:cut] if cut > 0 else text[:limit]).rstrip(" ,;:-")
    return kept + ELLIPSIS


def first_line(text: str, limit: int) -> str:
    """The first non-empty line of `text`, stripped and shortened past `limit` (`clip`): a detail shown on one line."""
    return clip(next((line.strip() for line in text.splitlines() if line.strip()), ""), limit)
