"""`python -m shiftbox.cli`: the same as the `shiftbox` command."""

from . import app

app()
