"""The HTML tables of path evaluation and mission types (Multi-Mission Tool Bench); the terminal's are in
`_terminal.py` (`mission_tables`).

Rows are mission types, columns the goal's position in the sequence (1st..4th) and all positions; a cell
is the accuracy (share of goals whose path succeeded) with its count. Transitions are the ordered pairs of
two consecutive goals' mission types, scored on the second goal.
"""

from __future__ import annotations

from ..metrics import PathAggregate, PathSlice
from ._html_text import e, f3
from ._terminal import ordinal, path_detail, path_positions

ARROW = " \u2192 "


def _html_cell(s: PathSlice | None) -> str:
    return "<td>\u2013</td>" if s is None else f"<td>{f3(s.success)} <small>({s.goals})</small></td>"


def _html_table(kind: str, title: str, head: list[str], rows: list[str]) -> str:
    cols = "".join(f"<th>{e(h)}</th>" for h in head)
    return (f'<div><h3>{e(title)}</h3><div class="scroll"><table class="data {e(kind)}"><thead><tr>'
            f'{cols}</tr></thead><tbody>{"".join(rows)}</tbody></table></div></div>')


def mission_sections(p: PathAggregate | None) -> str:
    """The HTML breakdowns: mission type x position and transitions, with the path headline above them."""
    if p is None:
        return ""
    positions = path_positions(p)
    rows = []
    for kind, overall in p.by_mission_type.items():
        cells = p.by_type_and_position.get(kind, {})
        rows.append(f"<tr><td>{e(kind)}</td>" + "".join(_html_cell(cells.get(k)) for k in positions)
                    + _html_cell(overall) + f"<td>{f3(overall.optimal)}</td><td>{f3(overall.progress)}</td></tr>")
    rows.append("<tr><td>all</td>" + "".join(_html_cell(p.by_position.get(k)) for k in positions)
                + f"<td>{f3(p.success)} <small>({p.goals})</small></td><td>{f3(p.optimal)}</td>"
                  f"<td>{f3(p.progress)}</td></tr>")
    by_type = _html_table("mission-table", "path accuracy by mission type \u00d7 position (MMTB)",
                          ["mission type", *(ordinal(k) for k in positions), "all", "optimal", "progress"], rows)
    transitions = _html_table(
        "transition-table", "path accuracy by mission transition (MMTB)",
        ["transition", "goals", "accuracy", "optimal", "progress"],
        [f"<tr><td>{e(k.replace('->', ARROW))}</td><td>{s.goals}</td><td>{f3(s.success)}</td>"
         f"<td>{f3(s.optimal)}</td><td>{f3(s.progress)}</td></tr>" for k, s in p.by_transition.items()])
    legend = (f'<p class="legend-line">Path evaluation (Multi-Mission Tool Bench): accuracy {f3(p.success)}, '
              f"{e(path_detail(p))}. A cell is the accuracy with its count of goals; transitions are scored on the "
              "second goal of each pair of consecutive goals.</p>")
    return legend + by_type + transitions
