"""Where a `cmd:` agent runs: in its own PID namespace, so it cannot read another agent's gateway URL.

Linux lets any process read `/proc/<pid>/environ`, `/proc/<pid>/fd/*` and (without Yama) the memory of
every process of its uid, so a secret handed to one agent program (in its environment, a pipe or a file)
is readable by its sibling agents of the same uid. Run through `unshare --pid --fork --mount-proc` (plus a
user namespace when the harness is not root) and `setpriv` with no capabilities, the program sees a
`/proc` of its own process tree only and cannot unmount it to see the host's: no other process (sibling
agents, the harness, the domain servers) can be named, so none can be read. Where the platform refuses
this (no util-linux, namespaces disabled), agents run as plain children and `sandbox_status()` says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

_DROP_CAPABILITIES = ["--bounding-set", "-all", "--inh-caps", "-all", "--no-new-privs"]


def sandbox_command(*, root: bool) -> tuple[str, ...] | None:
    """The command that runs a program isolated (prepend it to its argv), for a harness running as root or not;
    None without util-linux."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if unshare is None or setpriv is None:
        return None
    user = [] if root else ["--user", "--map-root-user"]  # a PID namespace needs a user namespace when not root
    return (unshare, *user, "--pid", "--fork", "--mount-proc", "--kill-child", setpriv, *_DROP_CAPABILITIES, "--")


@functools.cache
def sandbox_prefix() -> tuple[str, ...] | None:
    """`sandbox_command` for this process, if it runs here (probed once); None where the platform refuses it."""
    prefix = sandbox_command(root=os.geteuid() == 0) if hasattr(os, "geteuid") else None
    if prefix is None:
        return None
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return prefix if probe.returncode == 0 else None


def sandbox_status() -> str:
    """One line for the docs' guarantee as it holds on this machine (shown by `shiftbox run` when it does not)."""
    if sandbox_prefix() is not None:
        return "cmd: agents run in their own PID namespace: no agent can read another's gateway URL"
    return ("cmd: agents run unisolated here (unshare/setpriv missing or namespaces refused): an agent can read "
            "the gateway URL of a sibling agent of the same user from /proc; run one simulation at a time "
            "(--concurrency 1) or install util-linux and allow user namespaces")
