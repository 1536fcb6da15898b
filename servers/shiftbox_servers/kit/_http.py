"""Running a domain server's streamable HTTP app (`shiftbox-server DOMAIN --transport http`)."""

from __future__ import annotations

import gc

YOUNG_COLLECTION_EVERY = 20_000
"""Allocations between the collector's young-generation passes (Python's default: 700)."""


def collect_less() -> None:
    """For a serving process (and a `shiftbox run` or `replay`), once started: freeze what start-up built out of the
    collector's scans and space out its young passes (the objects a request builds die with it; the passes kept
    walking the same survivors)."""
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, 20, 20)


def serve_http(app: object, host: str, port: int) -> None:
    """uvicorn with its C HTTP parser (httptools) and event loop (uvloop where installed), no access log.
    ("auto" picks both when importable: an environment not yet synced to the lock still serves, on h11.)

    The objects built at start-up (modules, the server, the snapshot) are frozen out of the garbage
    collector's scans and its young passes are spaced out: collections took about 8% of a tools/call.
    """
    import uvicorn

    collect_less()
    uvicorn.run(app, host=host, port=port, log_level="warning", http="auto", loop="auto", access_log=False)
