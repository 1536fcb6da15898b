"""The self-contained HTML report: headline figures, inline SVG plots, every trajectory, provenance.

One file, nothing fetched: inline CSS, inline SVG drawn here, a little vanilla JS (filtering and
expand/collapse; the page works without it) and a Content-Security-Policy that forbids any network
load. Every piece of text from trajectories is escaped. Output is a pure function of the run: same
run directory, byte-identical HTML (everything sorted, no timestamps, no timings).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from shiftbox_servers.kit import escape_lone_surrogates

from ..errors import writing_to
from ..metrics import AgentScores, Breakdown, aggregate
from ..trajectory import Trajectory
from ._cards import headline
from ._html_text import e
from ._plots import GSRT_CAPTION, agent_rows, figure, gsrt_plot, plots
from ._provenance import footer
from ._simulations import simulations
from ._styles import BODY_JS, CSP, CSS, HEAD_JS
from ._tables import agents_overview, breakdowns


def _agent_body(score: AgentScores, by_agent: dict[str, Breakdown] | None, suffix: str) -> tuple[str, str, str]:
    m = score.metrics
    return headline(m, score.simulations), plots(m, score.simulations, by_agent, suffix), breakdowns(m)


def render_html(scores: Mapping[str, AgentScores], trajectories: list[Trajectory], metadata: dict | None,
                comparison: str = "") -> str:
    """The whole report page as one string (deterministic for a given input).

    One agent: its headline, plots and breakdowns. Several: their headlines side by side, then each
    agent's own section, in the order of `scores` (sorted by `score_by_agent`; A then B for a comparison); the
    simulations list keys every row by (agent, simulation id). `comparison` is a pre-rendered section
    (`shiftbox compare`)."""
    first = next(iter(scores.values()), None)
    m = first.metrics if first else aggregate([])
    agents = list(scores) + sorted({t.agent for t in trajectories} - set(scores))
    domains = sorted({t.domain for t in trajectories} | {d for s in scores.values() for d in s.metrics.by_domain})
    subject = f"{', '.join(agents) or 'no agent'} on {', '.join(domains) or 'no domain'}"
    config = (metadata or {}).get("config") or {}
    sub_bits = [f"{len(trajectories)} simulations"]
    if "trials" in config:
        sub_bits.append(f"{config['trials']} trial{'s' if config['trials'] != 1 else ''} per task")
    if "user" in config:
        sub_bits.append(f"user simulator {config['user']}")
    sub_bits.append(f"{m.mode} metric definitions")
    subtitle = " \u00b7 ".join(sub_bits)
    sims = [s for score in scores.values() for s in score.simulations]
    nav = ['<a href="#headline">Headline</a>']
    if len(scores) <= 1:
        head, figs, tables = _agent_body(first, agent_rows(scores), "") if first else (headline(m, []), plots(
            m, [], {}), breakdowns(m))
        body = (f'<section id="headline"><h2>Headline figures</h2>{head}</section>\n'
                f'<section id="plots"><h2>Plots</h2>{figs}</section>\n'
                f'<section id="breakdowns"><h2>Breakdowns</h2>{tables}</section>\n')
        nav += ['<a href="#plots">Plots</a>', '<a href="#breakdowns">Breakdowns</a>']
    else:
        body = (f'<section id="headline"><h2>Headline figures by agent</h2>{agents_overview(scores)}'
                f'<div class="plots">{figure(gsrt_plot("plot-gsrt-agent", "GSRT stages by agent", "agent", agent_rows(scores)), e(GSRT_CAPTION))}</div>'
                "</section>\n")
        for i, (name, score) in enumerate(scores.items(), start=1):
            head, figs, tables = _agent_body(score, None, f"-a{i}")
            body += (f'<section id="agent-{i}" class="agent"><h2>{e(name)}</h2>{head}<h3>Plots</h3>{figs}'
                     f"<h3>Breakdowns</h3>{tables}</section>\n")
            nav.append(f'<a href="#agent-{i}">{e(name)}</a>')
    if comparison:
        nav.insert(0, '<a href="#comparison">Comparison</a>')
    nav += ['<a href="#simulations">Simulations</a>', '<a href="#provenance">Provenance</a>']
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="shiftbox report">'
        f"<title>shiftbox report \u00b7 {e(subject)}</title>"
        f"<style>{CSS}</style><script>{HEAD_JS}</script></head>\n"
        '<body><header class="top"><div class="wrap">'
        f"<h1>shiftbox report \u00b7 {e(subject)}</h1>"
        f'<div class="subtitle">{e(subtitle)}</div>'
        f'<nav>{"".join(nav)}</nav></div></header>\n'
        '<main class="wrap">\n'
        + comparison + body
        + simulations(sims, trajectories, m.mode) + "\n</main>\n"
        + '<div class="wrap">' + footer(m, trajectories, metadata) + "</div>\n"
        + f"<script>{BODY_JS}</script>\n</body></html>\n"
    )


def save_html(html: str, out: Path) -> Path:
    """Write a rendered report to `out` (parent directories are created; a path that cannot be is an
    OutputPathError); an agent's lone surrogate shows as \\ud83d."""
    with writing_to(out, "--html"):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(escape_lone_surrogates(html), encoding="utf-8")
    return out
