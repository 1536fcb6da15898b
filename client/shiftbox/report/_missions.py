"""The HTML tables of Multi-Mission Tool Bench's path evaluation; the terminal draws the same tables
(`_terminal.mission_table_specs`): accuracy by mission type x position, by call structure, by relation to earlier
goals and by full type prefix.
"""

from __future__ import annotations

from ..metrics import MissionAggregate
from ._html_text import e, f3
from ._terminal import mission_table_specs, path_detail


def _html_table(kind: str, title: str, head: list[str], rows: list[list[str]], caption: str) -> str:
    cols = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<div><h3>{e(title)}</h3><div class="scroll"><table class="data {e(kind)}"><thead><tr>'
            f'{cols}</tr></thead><tbody>{body}</tbody></table></div><p class="legend-line">{e(caption)}</p></div>')


KINDS = ("mission-table", "structure-table", "relation-table", "prefix-table")


def mission_sections(p: MissionAggregate | None) -> str:
    """The HTML breakdowns of MMTB's path evaluation, with its headline above them."""
    if p is None:
        return ""
    tables = "".join(_html_table(kind, *spec) for kind, spec in zip(KINDS, mission_table_specs(p), strict=True))
    legend = (f'<p class="legend-line">Path evaluation (Multi-Mission Tool Bench): accuracy {f3(p.accuracy)}, '
              f"{e(path_detail(p))}. A cell is the accuracy with its count of goals.</p>")
    return legend + tables
