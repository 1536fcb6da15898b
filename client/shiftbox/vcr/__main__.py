"""`python -m shiftbox.vcr PROGRAM [ARGS…]`: run a Python agent program under the cassette named by
`SHIFTBOX_VCR_CASSETTE` (record mode from `SHIFTBOX_RECORD_MODE`), so its own LLM calls are recorded once and
replayed offline. Without the variable the program runs as it is. The program needs no change: it runs as
`__main__` in this process, with its arguments, after vcrpy has patched the HTTP clients."""

from __future__ import annotations

import os
import runpy
import sys

from ..errors import CassetteFileError
from ._cassettes import CASSETTE_ENV, use_cassette


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    program = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))  # as `python PROGRAM` would
    cassette = os.environ.get(CASSETTE_ENV)
    if not cassette:
        runpy.run_path(program, run_name="__main__")
        return
    try:
        context = use_cassette(cassette)
    except CassetteFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    with context:
        runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
