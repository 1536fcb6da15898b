"""`shiftbox serve` has one address: its names are `shiftbox.serve`'s, re-exported by no package below it."""

from __future__ import annotations

import shiftbox.runs
import shiftbox.serve
import shiftbox.world


def test_no_package_below_serve_re_exports_a_serve_name():
    for package in (shiftbox.runs, shiftbox.world):
        shared = sorted(set(shiftbox.serve.__all__) & (set(package.__all__) | set(vars(package))))
        assert not shared, f"{package.__name__} re-exports serve names {shared}: import them from shiftbox.serve"

