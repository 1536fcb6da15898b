"""The `cmd:` agent sandbox (issue 30 item 1): a program run in it cannot find another process of its uid in
/proc (so not its environment, descriptors or memory), not even by unmounting its /proc, whether the harness
runs as root or as a normal user; run the same way without it, it does (the check can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from shiftbox.agents import sandbox_command, sandbox_prefix, sandbox_status

SECRET = "SIBLING_SECRET=http://127.0.0.1:1/episodes/stolen/mcp"
PROBE = ("umount /proc 2>/dev/null; for f in /proc/[0-9]*/environ; do "
         "grep -l SIBLING_SECRET \"$f\" 2>/dev/null; done; echo scanned")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def found_by(probe: list[str], *, as_user: list[str]) -> list[str]:
    """Files naming the sibling's secret that `probe` finds while a sibling of the same uid is running."""
    sibling = subprocess.Popen([*as_user, "env", SECRET, "sleep", "30"])
    try:
        out = subprocess.run([*as_user, *probe, "sh", "-c", PROBE], capture_output=True, text=True, timeout=30,
                             check=True).stdout.split()
    finally:
        sibling.kill()
        sibling.wait()
    assert out[-1] == "scanned", out
    return out[:-1]


@pytest.mark.skipif(sandbox_prefix() is None, reason=sandbox_status())
def test_a_sandboxed_program_sees_no_sibling_as_the_harness_user():
    assert found_by([], as_user=[]), "the probe finds an unsandboxed sibling (else it proves nothing)"
    assert found_by(list(sandbox_prefix()), as_user=[]) == []


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and util-linux's setpriv (to run the probe as nobody)")
def test_a_sandboxed_program_sees_no_sibling_as_a_normal_user():
    prefix = sandbox_command(root=False)
    if prefix is None or subprocess.run([*NOBODY, *prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("this platform refuses user namespaces to a normal user (allow them: sysctl "
                    "user.max_user_namespaces > 0, and kernel.unprivileged_userns_clone=1 where it exists)")
    assert found_by([], as_user=NOBODY), "the probe finds an unsandboxed sibling (else it proves nothing)"
    assert found_by(list(prefix), as_user=NOBODY) == []
