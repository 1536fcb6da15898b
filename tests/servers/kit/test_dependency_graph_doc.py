"""docs/servers.md shows each domain's dependency graph as rendered from the declarations, so it cannot drift."""

from __future__ import annotations

import tomllib

from shiftbox_servers.kit import get_domain
from shiftbox_servers.kit._graph import (
    GRAPH_SECTION_END,
    GRAPH_SECTION_START,
    render_dependency_graphs,
)
from tests.conftest import REPO

REWRITE = ("python -c \"from tests.servers.kit.test_dependency_graph_doc import rewrite; "
           "rewrite()\"")


def shipped_graphs() -> dict:
    """The graphs of the domains the servers distribution ships (its entry points), by name."""
    pyproject = tomllib.loads((REPO / "servers" / "pyproject.toml").read_text())
    names = pyproject["project"]["entry-points"]["shiftbox.domains"]
    return {name: get_domain(name).dependency_graph for name in names}


def rewrite() -> None:
    """Rewrite the generated section of docs/servers.md (run from the repository root)."""
    from shiftbox_servers.kit._graph import with_dependency_graphs

    doc = REPO / "docs" / "servers.md"
    doc.write_text(with_dependency_graphs(doc.read_text(), shipped_graphs()))


def test_the_doc_section_is_the_rendering_of_the_declarations():
    text = (REPO / "docs" / "servers.md").read_text()
    start, end = text.index(GRAPH_SECTION_START), text.index(GRAPH_SECTION_END) + len(GRAPH_SECTION_END)
    assert text[start:end] == render_dependency_graphs(shipped_graphs()), f"regenerate it: {REWRITE}"


def test_the_rendering_names_every_tool_its_conditions_and_what_refusal_enforces():
    rendered = render_dependency_graphs(shipped_graphs())
    assert ("| `get_order_details` | one of `find_user_id_by_email` or `find_user_id_by_name_zip` succeeded; "
            "`get_user_details` (uses its output) | one of `find_user_id_by_email` or `find_user_id_by_name_zip` | "
            "the order's status, items, address, payments and fulfilments are known |") in rendered
    assert "| `list_all_product_types` | none | - | every product type's name and id is known |" in rendered
    # echo: echo, put_marker, get_marker and the one edge put_marker -> get_marker: 1 / (3 * 2)
    assert "### echo\n\n3 tools, 1 edges, density 0.167." in rendered
    for name, graph in shipped_graphs().items():
        assert all(f"| `{tool}` |" in rendered for tool in graph.conditions), name
