"""shiftbox client harness."""
