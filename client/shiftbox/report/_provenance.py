"""The provenance footer: metric definitions, shiftbox versions, the run's configuration and its servers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._versions import distribution_version
from ..metrics import RunMetrics
from ..trajectory import Trajectory
from ._html_text import e


def _config_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list | bool) else str(value)


def footer(m: RunMetrics, trajectories: Sequence[Trajectory], metadata: dict | None) -> str:
    meta = metadata or {}
    run_version = meta.get("shiftbox_version")
    report_version = distribution_version("shiftbox")
    versions = f"shiftbox {e(run_version or report_version)}"
    if run_version and run_version != report_version:
        versions += f" (report rendered by shiftbox {e(report_version)})"
    servers = sorted({(key, s.name, s.version, s.snapshot, s.snapshot_sha256)
                      for t in trajectories for key, s in t.servers.items()})
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(n)}</td><td>{e(v)}</td><td>{e(snap)}</td>"
                   f'<td><span class="hash">{e(sha)}</span></td></tr>' for k, n, v, snap, sha in servers)
    server_table = ('<div class="scroll"><table class="data"><thead><tr><th>domain</th><th>server</th><th>version</th>'
                    f"<th>snapshot</th><th>snapshot sha256</th></tr></thead><tbody>{rows}</tbody></table></div>"
                    if servers else "<p>No server information in the trajectories.</p>")
    extra = ""
    if meta.get("server"):
        extra = "<p>server: " + ", ".join(f"{e(k)}={e(json.dumps(v, sort_keys=True))}"
                                          for k, v in sorted(meta["server"].items())) + "</p>"
    config = meta.get("config") or {}
    keys = ("domain", "agent", "agent_args", "user", "user_args", "trials", "seed", "servers", "snapshot",
            "max_steps", "max_tool_errors", "one_tool_per_turn", "tasks_sha256")
    cfg = "".join(f"<dt>{e(k)}</dt><dd><code>{e(_config_value(config[k]))}</code></dd>"
                  for k in keys if k in config and config[k] not in (None, {}, []))
    return (f'<footer id="provenance"><h2>Provenance</h2><p>metrics: <strong>{e(m.mode)}</strong> definitions '
            f"\u00b7 success threshold TSR \u2265 {m.success_threshold:g} \u00b7 {versions}</p>"
            + (f'<dl class="config">{cfg}</dl>' if cfg else "<p>run.json not found: configuration unknown.</p>")
            + extra + server_table
            + "<p>Self-contained report: no network access, all plots drawn inline.</p></footer>")
