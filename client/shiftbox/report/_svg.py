"""Small inline-SVG plots for the HTML report: bars, grouped bars with whiskers, histograms.

Every function returns one `<svg>` element (no xmlns needed inline in HTML5) with a `<title>`,
axes, ticks, axis labels and, where there are several series, a legend. Text is escaped here;
output is a pure function of the inputs (fixed number formatting), so reports are byte-stable.
The palette is Okabe-Ito (colour-blind safe).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

OKABE_ITO = {
    "blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "sky": "#56B4E9",
    "vermillion": "#D55E00", "purple": "#CC79A7", "yellow": "#F0E442", "black": "#000000",
}
INK, MUTED, GRID = "#222222", "#555555", "#e3e3e3"
WIDTH, HEIGHT = 480, 320
WIDE = 1000
CHAR_W = 6.8  # approximate width of a 12px sans-serif character
FONT = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _n(x: float) -> str:
    """A coordinate: short and deterministic."""
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def fmt_value(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def fmt_count(x: float) -> str:
    return f"{x:g}"


def nice_ticks(vmax: float, *, integer: bool = False, target: int = 5) -> list[float]:
    """0 .. a round top >= vmax, in 1/2/2.5/5 x 10^k steps (whole steps when `integer`)."""
    if not vmax or vmax <= 0 or not math.isfinite(vmax):
        vmax = 1.0
    raw = vmax / target
    mag = 10 ** math.floor(math.log10(raw))
    step = mag
    for m in ((1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)):
        step = m * mag
        if step >= raw - 1e-12:
            break
    if integer:
        step = max(1.0, round(step))
    count = math.ceil(vmax / step - 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]


def _tick_label(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:g}"


@dataclass
class Series:
    name: str
    color: str
    values: Sequence[float | None]
    whiskers: Sequence[float | None] | None = None  # e.g. p90 above a median bar
    tooltips: Sequence[str] | None = None


@dataclass
class _Frame:
    """Plot area inside the svg; categorical (or numeric) x, linear y from 0."""

    title: str
    y_label: str
    x_label: str
    y_ticks: list[float]
    width: int = WIDTH
    bottom: int = 56
    left: int = 64
    right: int = 16
    top: int = 58
    parts: list[str] = field(default_factory=list)
    plot_height: int = HEIGHT - 58 - 56

    @property
    def height(self) -> int:
        return self.top + self.plot_height + self.bottom

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:
        return self.top + self.plot_height

    @property
    def y1(self) -> float:
        return self.top

    def y(self, v: float) -> float:
        top = self.y_ticks[-1] or 1.0
        return self.y0 - (self.y0 - self.y1) * (v / top)

    def axes(self) -> None:
        p = self.parts
        for t in self.y_ticks:
            y = self.y(t)
            p.append(f'<line x1="{_n(self.x0)}" y1="{_n(y)}" x2="{_n(self.x1)}" y2="{_n(y)}" stroke="{GRID}"/>')
            p.append(f'<text x="{_n(self.x0 - 7)}" y="{_n(y + 4)}" text-anchor="end" font-size="12" '
                     f'fill="{MUTED}">{_tick_label(t)}</text>')
        p.append(f'<line x1="{_n(self.x0)}" y1="{_n(self.y0)}" x2="{_n(self.x1)}" y2="{_n(self.y0)}" '
                 f'stroke="{INK}"/>')
        p.append(f'<line x1="{_n(self.x0)}" y1="{_n(self.y1)}" x2="{_n(self.x0)}" y2="{_n(self.y0)}" '
                 f'stroke="{INK}"/>')
        cy = (self.y0 + self.y1) / 2
        lx = self.x0 - 44
        p.append(f'<text x="{_n(lx)}" y="{_n(cy)}" transform="rotate(-90 {_n(lx)} {_n(cy)})" '
                 f'text-anchor="middle" font-size="13" fill="{INK}">{_e(self.y_label)}</text>')
        p.append(f'<text x="{_n((self.x0 + self.x1) / 2)}" y="{_n(self.height - 10)}" text-anchor="middle" '
                 f'font-size="13" fill="{INK}">{_e(self.x_label)}</text>')

    def svg(self, plot_id: str, description: str) -> str:
        head = (f'<svg class="plot" id="{_e(plot_id)}" data-plot="{_e(plot_id)}" viewBox="0 0 {self.width} '
                f'{self.height}" width="{self.width}" height="{self.height}" role="img" '
                f'aria-labelledby="{_e(plot_id)}-title {_e(plot_id)}-desc" font-family="{FONT}">'
                f'<title id="{_e(plot_id)}-title">{_e(self.title)}</title>'
                f'<desc id="{_e(plot_id)}-desc">{_e(description)}</desc>'
                f'<text x="8" y="20" font-size="15" font-weight="600" fill="{INK}">{_e(self.title)}</text>')
        return head + "".join(self.parts) + "</svg>"


def _truncate(label: str, max_chars: int) -> str:
    if len(label) <= max_chars:
        return label
    return label[: max(1, max_chars - 1)] + "\u2026"


def _wrap(label: str, max_chars: int, max_lines: int = 4) -> list[str] | None:
    """Greedy word wrap; None when a word is too long or it needs more than max_lines lines."""
    lines: list[str] = []
    for word in label.split():
        if len(word) > max_chars:
            return None
        if lines and len(lines[-1]) + 1 + len(word) <= max_chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines if len(lines) <= max_lines else None


ROTATE_CHARS = 26


def _layout_categories(categories: Sequence[str], sublabels: Sequence[str] | None, slot: float
                       ) -> tuple[list[list[str]] | None, int, int]:
    """(wrapped labels or None to rotate, bottom margin, left margin)."""
    max_chars = max(1, int((slot - 6) / CHAR_W))
    wrapped = [_wrap(c, max_chars) for c in categories]
    extra = 1 if sublabels else 0
    if all(w is not None for w in wrapped):
        lines = max((len(w) for w in wrapped if w), default=1) + extra
        return [w or [""] for w in wrapped], 44 + 15 * lines, 64
    longest = min(ROTATE_CHARS, max((len(c) for c in categories), default=0)) + (
        max((len(s) for s in sublabels), default=0) + 3 if sublabels else 0)
    reach = longest * CHAR_W * 0.82
    return None, int(44 + longest * CHAR_W * 0.57), int(max(64, reach - slot / 2 + 8))


def _category_labels(frame: _Frame, categories: Sequence[str], sublabels: Sequence[str] | None,
                     wrapped: list[list[str]] | None, slot: float) -> None:
    """x labels under each category: word-wrapped when they fit, else rotated (long ones truncated)."""
    for i, cat in enumerate(categories):
        cx = frame.x0 + slot * (i + 0.5)
        sub = sublabels[i] if sublabels else ""
        if wrapped is None:
            y = frame.y0 + 14
            frame.parts.append(
                f'<text x="{_n(cx)}" y="{_n(y)}" transform="rotate(-35 {_n(cx)} {_n(y)})" text-anchor="end" '
                f'font-size="12" fill="{INK}"><title>{_e(cat)}</title>{_e(_truncate(cat, ROTATE_CHARS))}'
                + (f' <tspan fill="{MUTED}">({_e(sub)})</tspan>' if sub else "") + "</text>")
            continue
        lines = wrapped[i]
        tspans = "".join(f'<tspan x="{_n(cx)}" dy="{0 if j == 0 else 15}">{_e(line)}</tspan>'
                         for j, line in enumerate(lines))
        frame.parts.append(f'<text x="{_n(cx)}" y="{_n(frame.y0 + 17)}" text-anchor="middle" font-size="12" '
                           f'fill="{INK}"><title>{_e(cat)}</title>{tspans}</text>')
        if sub:
            frame.parts.append(f'<text x="{_n(cx)}" y="{_n(frame.y0 + 17 + 15 * len(lines))}" '
                               f'text-anchor="middle" font-size="11" fill="{MUTED}">{_e(sub)}</text>')


def _legend(frame: _Frame, items: Sequence[tuple[str, str]]) -> None:
    """Right-aligned row under the title; kinds: a colour (swatch), "whisker", "dashed:<colour>"."""
    widths = [len(name) * CHAR_W + 30 for name, _ in items]
    x = frame.x1 - sum(widths)
    y = 42
    frame.parts.append('<g class="legend">')
    for (name, kind), w in zip(items, widths, strict=True):
        if kind == "whisker":
            frame.parts.append(f'<line x1="{_n(x + 7)}" y1="{y - 11}" x2="{_n(x + 7)}" y2="{y + 1}" '
                               f'stroke="{INK}" stroke-width="1.5"/><line x1="{_n(x + 2)}" y1="{y - 11}" '
                               f'x2="{_n(x + 12)}" y2="{y - 11}" stroke="{INK}" stroke-width="1.5"/>')
        elif kind.startswith("dashed:"):
            frame.parts.append(f'<line x1="{_n(x)}" y1="{y - 4}" x2="{_n(x + 14)}" y2="{y - 4}" '
                               f'stroke="{kind[7:]}" stroke-width="2" stroke-dasharray="4 3"/>')
        else:
            frame.parts.append(f'<rect x="{_n(x)}" y="{y - 11}" width="13" height="13" fill="{kind}"/>')
        frame.parts.append(f'<text x="{_n(x + 19)}" y="{y}" font-size="12" fill="{INK}">{_e(name)}</text>')
        x += w
    frame.parts.append("</g>")


def _no_data(frame: _Frame, message: str) -> None:
    frame.parts.append(f'<text x="{_n((frame.x0 + frame.x1) / 2)}" y="{_n((frame.y0 + frame.y1) / 2)}" '
                       f'text-anchor="middle" font-size="13" fill="{MUTED}">{_e(message)}</text>')


def grouped_bar_chart(plot_id: str, title: str, categories: Sequence[str], series: Sequence[Series], *,
                      y_label: str, x_label: str, sublabels: Sequence[str] | None = None,
                      whisker_label: str | None = None, integer: bool = False, y_max: float | None = None,
                      value_fmt: Callable[[float], str] = fmt_value, missing_label: str = "n/a",
                      width: int = WIDTH, description: str = "") -> str:
    """Bars per category, one per series, side by side; optional whisker (e.g. p90) above each bar."""
    values = [v for s in series for v in list(s.values) + list(s.whiskers or []) if v is not None]
    top = y_max if y_max is not None else max(values, default=0.0) * 1.08
    n = max(1, len(categories))
    slot = (width - 64 - 16) / n
    wrapped, bottom, left = _layout_categories(categories, sublabels, slot)
    slot = (width - left - 16) / n
    frame = _Frame(title, y_label, x_label, nice_ticks(top, integer=integer), width=width, bottom=bottom,
                   left=left)
    frame.axes()
    legend = [(s.name, s.color) for s in series] if len(series) > 1 else []
    if whisker_label:
        legend.append((whisker_label, "whisker"))
    if legend:
        _legend(frame, legend)
    if not categories:
        _no_data(frame, "no data")
        return frame.svg(plot_id, description or title)
    inner = min(slot * 0.78, 60.0 * len(series))
    bar_w = inner / max(1, len(series))
    for i in range(len(categories)):
        start = frame.x0 + slot * i + (slot - inner) / 2
        for j, s in enumerate(series):
            v = s.values[i]
            bx = start + j * bar_w
            cx = bx + bar_w / 2
            tip = s.tooltips[i] if s.tooltips else f"{categories[i]} \u00b7 {s.name}: " + (
                missing_label if v is None else value_fmt(v))
            if v is None:
                frame.parts.append(f'<text x="{_n(cx)}" y="{_n(frame.y0 - 5)}" text-anchor="middle" '
                                   f'font-size="11" fill="{MUTED}"><title>{_e(tip)}</title>'
                                   f'{_e(missing_label)}</text>')
                continue
            y = frame.y(v)
            frame.parts.append(f'<rect x="{_n(bx + 1)}" y="{_n(y)}" width="{_n(max(1.0, bar_w - 2))}" '
                               f'height="{_n(frame.y0 - y)}" fill="{s.color}"><title>{_e(tip)}</title></rect>')
            w = s.whiskers[i] if s.whiskers else None
            if w is not None and w > v:
                wy = frame.y(w)
                frame.parts.append(f'<line x1="{_n(cx)}" y1="{_n(y)}" x2="{_n(cx)}" y2="{_n(wy)}" '
                                   f'stroke="{INK}" stroke-width="1.5"/><line x1="{_n(cx - 5)}" y1="{_n(wy)}" '
                                   f'x2="{_n(cx + 5)}" y2="{_n(wy)}" stroke="{INK}" stroke-width="1.5"/>')
            label = _e(value_fmt(v))
            fits_inside = frame.y0 - y >= 20 and bar_w - 2 >= len(label) * 7 + 2
            if fits_inside:
                frame.parts.append(f'<text x="{_n(cx)}" y="{_n(y + 15)}" text-anchor="middle" font-size="12" '
                                   f'font-weight="600" fill="#ffffff">{label}</text>')
            else:
                ly = frame.y(max(v, w or v)) - 5
                frame.parts.append(f'<text x="{_n(cx)}" y="{_n(ly)}" text-anchor="middle" font-size="12" '
                                   f'fill="{INK}">{label}</text>')
    _category_labels(frame, categories, sublabels, wrapped, slot)
    return frame.svg(plot_id, description or title)


def bar_chart(plot_id: str, title: str, categories: Sequence[str], values: Sequence[float | None], *,
              y_label: str, x_label: str, color: str = OKABE_ITO["blue"], sublabels: Sequence[str] | None = None,
              y_max: float | None = None, integer: bool = False, value_fmt: Callable[[float], str] = fmt_value,
              tooltips: Sequence[str] | None = None, width: int = WIDTH, description: str = "") -> str:
    return grouped_bar_chart(plot_id, title, categories, [Series(y_label, color, values, tooltips=tooltips)],
                             y_label=y_label, x_label=x_label, sublabels=sublabels, integer=integer, y_max=y_max,
                             value_fmt=value_fmt, width=width, description=description)


def histogram(plot_id: str, title: str, values: Sequence[float], *, x_label: str, y_label: str = "simulations",
              bins: int = 10, lo: float = 0.0, hi: float = 1.0, color: str = OKABE_ITO["sky"],
              mean: float | None = None, description: str = "") -> str:
    """Counts of `values` in `bins` equal bins over [lo, hi] (last bin closed); dashed line at the mean."""
    counts = [0] * bins
    width = (hi - lo) / bins
    for v in values:
        k = math.floor((v - lo) / width + 1e-9)
        counts[min(max(k, 0), bins - 1)] += 1
    frame = _Frame(title, y_label, x_label, nice_ticks(max(counts, default=0) * 1.08, integer=True), bottom=52)
    frame.axes()
    if not values:
        _no_data(frame, "no data")
        return frame.svg(plot_id, description or title)

    def x(v: float) -> float:
        return frame.x0 + (frame.x1 - frame.x0) * (v - lo) / (hi - lo)

    labels: list[str] = []
    for k, c in enumerate(counts):
        a, b = lo + k * width, lo + (k + 1) * width
        closing = "]" if k == bins - 1 else ")"
        tip = f"[{a:.2f}, {b:.2f}{closing}: {c} simulation{'s' if c != 1 else ''}"
        if c:
            y = frame.y(c)
            frame.parts.append(f'<rect x="{_n(x(a) + 1)}" y="{_n(y)}" width="{_n(x(b) - x(a) - 2)}" '
                               f'height="{_n(frame.y0 - y)}" fill="{color}"><title>{_e(tip)}</title></rect>')
            labels.append(f'<text x="{_n((x(a) + x(b)) / 2)}" y="{_n(y - 5)}" text-anchor="middle" '
                          f'font-size="12" fill="{INK}" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                          f"{c}</text>")
    for k in range(0, bins + 1, 2 if bins > 6 else 1):
        v = lo + k * width
        frame.parts.append(f'<line x1="{_n(x(v))}" y1="{_n(frame.y0)}" x2="{_n(x(v))}" y2="{_n(frame.y0 + 4)}" '
                           f'stroke="{INK}"/><text x="{_n(x(v))}" y="{_n(frame.y0 + 18)}" text-anchor="middle" '
                           f'font-size="12" fill="{MUTED}">{v:g}</text>')
    if mean is not None:
        mx = x(min(max(mean, lo), hi))
        frame.parts.append(f'<line x1="{_n(mx)}" y1="{_n(frame.y1)}" x2="{_n(mx)}" y2="{_n(frame.y0)}" '
                           f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="5 4"><title>mean {mean:.3f}'
                           "</title></line>")
        _legend(frame, [(f"mean {mean:.2f}", f"dashed:{INK}")])
    frame.parts.extend(labels)
    return frame.svg(plot_id, description or title)


def line_chart(plot_id: str, title: str, xs: Sequence[int], series: Sequence[Series], *, y_label: str,
               x_label: str, y_max: float = 1.0, value_fmt: Callable[[float], str] = fmt_value,
               width: int = WIDTH, description: str = "") -> str:
    """One line per series over integer x (e.g. k of pass^k), a dot with a tooltip at every point; a missing
    value breaks its line."""
    frame = _Frame(title, y_label, x_label, nice_ticks(y_max), width=width)
    frame.axes()
    if len(series) > 1:
        _legend(frame, [(s.name, s.color) for s in series])
    if not xs:
        _no_data(frame, "no data")
        return frame.svg(plot_id, description or title)
    lo, hi = xs[0], xs[-1]

    def x(v: int) -> float:
        return (frame.x0 + frame.x1) / 2 if hi == lo else frame.x0 + 8 + (frame.x1 - frame.x0 - 16) * (v - lo) / (hi - lo)

    ticks = [lo] + [t for t in nice_ticks(hi, integer=True) if lo < t <= hi and x(t) - x(lo) > 24]
    for t in ticks:
        frame.parts.append(f'<line x1="{_n(x(t))}" y1="{_n(frame.y0)}" x2="{_n(x(t))}" y2="{_n(frame.y0 + 4)}" '
                           f'stroke="{INK}"/><text x="{_n(x(t))}" y="{_n(frame.y0 + 18)}" text-anchor="middle" '
                           f'font-size="12" fill="{MUTED}">{_tick_label(t)}</text>')
    for s in series:
        runs: list[list[str]] = [[]]
        for xv, v in zip(xs, s.values, strict=True):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{_n(x(xv))},{_n(frame.y(v))}")
        for points in runs:
            if len(points) > 1:
                frame.parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{s.color}" '
                                   'stroke-width="2"/>')
        for i, (xv, v) in enumerate(zip(xs, s.values, strict=True)):
            if v is not None:
                tip = s.tooltips[i] if s.tooltips else f"{s.name} \u00b7 {x_label} {xv}: {value_fmt(v)}"
                frame.parts.append(f'<circle cx="{_n(x(xv))}" cy="{_n(frame.y(v))}" r="2.5" fill="{s.color}">'
                                   f"<title>{_e(tip)}</title></circle>")
    return frame.svg(plot_id, description or title)
