"""Package names that load with their module on first use (PEP 562): importing a package then costs only what
its importer uses (`shiftbox run` never pays for the metrics, reports and comparisons it does not reach). The one
implementation is the servers distribution's, which the kit uses too (the client may import the servers, not the
reverse)."""

from __future__ import annotations

from shiftbox_servers._lazy import lazy_exports

__all__ = ["lazy_exports"]
