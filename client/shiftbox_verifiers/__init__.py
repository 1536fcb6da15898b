"""verifiers' taskset `shiftbox-verifiers` (verifiers imports a taskset id as a top-level package): shiftbox's
taskset, the harness verifiers runs it with by default, and its environment. The environment is `shiftbox.rl`'s (docs/rl.md)."""

from shiftbox.rl import ShiftboxHarness, ShiftboxTaskset, ShiftboxVerifiersEnv

__all__ = ["ShiftboxHarness", "ShiftboxTaskset", "ShiftboxVerifiersEnv"]
