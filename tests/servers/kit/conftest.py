"""Fixtures shared by the server-kit tests."""

from __future__ import annotations

import pytest

from shiftbox_servers.kit import Snapshot, get_domain


@pytest.fixture(scope="module")
def echo_snapshot(tmp_path_factory) -> Snapshot:
    """The echo domain's snapshot, built fresh for the module."""
    domain = get_domain("echo")
    directory = tmp_path_factory.mktemp("echo")
    domain.build_snapshot(directory)
    return Snapshot.load(directory)
