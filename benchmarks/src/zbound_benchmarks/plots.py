"""Shared plotting for benchmark reports: grids of line panels written as PNG (matplotlib Agg).

Suites describe what to draw with plain data (:class:`Series` in :class:`Panel` in a grid of
rows) and call :func:`panel_grid`; nothing here knows about a particular suite.

>>> s = Series("bound", x=[0, 1, 2], y=[1.0, 0.1, 0.01])
>>> panel_grid([[Panel("wine C=1", "iterations", "f(w) - f* (f* = reference optimum)", [s],
...                    logy=True)]], "out.png")

Conventions every figure gets:

- layout: matplotlib's constrained layout, and titles wrapped to the width of their panel (or of
  the figure), so no title is clipped;
- styles: one style per series label across all panels of a figure, from a qualitative palette
  (tab10); beyond 10 labels the colours repeat with another line style and marker, so no two
  labels look alike (``styles=`` pins a style per label, e.g. to keep a method's colour across
  figures);
- one legend per figure, outside the panels on the right (not one per panel);
- the x range of a panel covers every series drawn in it (the slowest curve is not cut off);
- ``caption``: a note under the figure, for defining the quantities on the axes.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# tab10, the qualitative palette of matplotlib, spelled out so that styles do not depend on the
# active style sheet
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def style_for(index: int) -> dict:
    """Style of the ``index``-th label: tab10 colour; past 10, another line style and marker."""
    cycle = index // len(PALETTE)
    return {
        "color": PALETTE[index % len(PALETTE)],
        "linestyle": LINESTYLES[cycle % len(LINESTYLES)],
        "marker": MARKERS[(index + 3 * cycle) % len(MARKERS)],
    }


@dataclass
class Series:
    """One curve (or, with ``marker_only``, a set of unconnected points).

    ``band``: optional half-widths (e.g. one standard deviation) shaded around ``y``.
    ``style``: matplotlib keyword arguments that override the label's style (color, marker, ...).
    """

    label: str
    x: Sequence[float]
    y: Sequence[float | None]
    marker_only: bool = False
    style: dict = field(default_factory=dict)
    band: Sequence[float | None] | None = None


@dataclass
class Panel:
    """One axes: title, axis labels, curves, log scales and an optional horizontal line."""

    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    logy: bool = False
    logx: bool = False
    hline: float | None = None
    hline_label: str = "target"


def _agg():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _finite_points(x, y, band, logx: bool, logy: bool):
    xs, ys, bs = [], [], []
    band = [None] * len(y) if band is None else band
    for a, b, s in zip(x, y, band):
        if a is None or b is None:
            continue
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)):
            continue
        if (logx and a <= 0) or (logy and b <= 0):
            continue
        xs.append(a)
        ys.append(b)
        bs.append(0.0 if s is None or not math.isfinite(float(s)) else float(s))
    return xs, ys, bs


def _wrap(text: str, width_in: float, fontsize: float) -> str:
    """Wrap ``text`` to lines that fit ``width_in`` inches at ``fontsize`` points."""
    chars = max(12, int(width_in * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.wrap(text, chars)) if len(text) > chars else text


def _label_styles(rows: Sequence[Sequence[Panel]], pinned: Mapping[str, dict] | None
                  ) -> dict[str, dict]:
    """One style per series label, in order of first appearance (pinned ones first)."""
    styles: dict[str, dict] = {k: dict(v) for k, v in (pinned or {}).items()}
    k = 0
    for row in rows:
        for panel in row:
            for s in panel.series:
                if s.label in styles:
                    continue
                while style_for(k)["color"] in {st.get("color") for st in styles.values()} \
                        and k < len(PALETTE):
                    k += 1  # skip palette colours a pinned style already uses
                styles[s.label] = style_for(k)
                k += 1
    return styles


def draw_panel(ax, panel: Panel, colors: dict[str, object] | None = None,
               styles: Mapping[str, dict] | None = None, title_width_in: float | None = None
               ) -> None:
    """Draw ``panel`` on a matplotlib axes.

    ``styles`` maps series labels to matplotlib keywords (see :func:`style_for`); ``colors``
    (legacy) maps labels to colours and is filled with the colours used. The x range is set to
    cover every series drawn.
    """
    colors = {} if colors is None else colors
    styles = styles or {}
    x_lo, x_hi = math.inf, -math.inf
    for s in panel.series:
        xs, ys, bs = _finite_points(s.x, s.y, s.band, panel.logx, panel.logy)
        if not xs:
            continue
        x_lo, x_hi = min(x_lo, min(xs)), max(x_hi, max(xs))
        kw = dict(styles.get(s.label, {}))
        if "color" not in kw and s.label in colors:
            kw["color"] = colors[s.label]
        if s.marker_only:
            kw.update(linestyle="none", markersize=6)
            kw.setdefault("marker", "D")
        else:
            kw.update(linewidth=1.4)
            if len(xs) >= 40:
                kw["marker"] = None
            else:
                kw.setdefault("marker", ".")
                kw.setdefault("markersize", 4)
        kw.update(s.style)
        line = ax.plot(xs, ys, label=s.label, **kw)
        color = line[0].get_color()
        colors.setdefault(s.label, color)
        if s.band is not None and any(bs):
            lo = [y - b for y, b in zip(ys, bs)]
            hi = [y + b for y, b in zip(ys, bs)]
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15, linewidth=0)
    if panel.hline is not None and (not panel.logy or panel.hline > 0):
        ax.axhline(panel.hline, color="0.4", linestyle="--", linewidth=1,
                   label=panel.hline_label)
    if panel.logy:
        ax.set_yscale("log")
    if panel.logx:
        ax.set_xscale("log")
    if x_lo < x_hi:
        if panel.logx:
            pad = (x_hi / x_lo) ** 0.03
            ax.set_xlim(x_lo / pad, x_hi * pad)
        else:
            pad = 0.03 * (x_hi - x_lo)
            ax.set_xlim(x_lo - pad, x_hi + pad)
    title = panel.title if title_width_in is None else _wrap(panel.title, title_width_in, 9)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(panel.xlabel, fontsize=8)
    ax.set_ylabel(panel.ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", alpha=0.3)


def panel_grid(rows: Sequence[Sequence[Panel]], path: str | Path, title: str | None = None,
               panel_size: tuple[float, float] = (4.2, 3.0), dpi: int = 110,
               caption: str | None = None, styles: Mapping[str, dict] | None = None) -> Path:
    """Draw a grid of panels (one list per row) into a PNG with one figure legend.

    Each series label keeps one style in all panels (``styles`` pins some, the rest come from
    :func:`style_for` in order of appearance). ``caption``: a note under the panels (e.g. what
    the y axis measures). Titles are wrapped to fit, in a constrained layout. Returns the path.
    """
    plt = _agg()
    path = Path(path)
    n_rows = len(rows)
    n_cols = max((len(r) for r in rows), default=1)
    label_styles = _label_styles(rows, styles)
    n_labels = len({s.label for row in rows for p in row for s in p.series})
    legend_w = 1.9 if n_labels else 0.0
    fig_w = panel_size[0] * n_cols + legend_w
    fig_h = panel_size[1] * n_rows + 0.5 + (0.35 if title else 0) + (0.4 if caption else 0)
    fig = plt.figure(figsize=(fig_w, fig_h), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    colors: dict[str, object] = {}
    try:
        for i, row in enumerate(rows):
            for j in range(n_cols):
                ax = axes[i][j]
                if j < len(row):
                    draw_panel(ax, row[j], colors, label_styles, panel_size[0] * 0.9)
                else:
                    ax.axis("off")
        handles, labels = {}, []
        for ax in axes.ravel():
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in handles:
                    handles[lab] = h
                    labels.append(lab)
        if handles:
            fig.legend([handles[lab] for lab in labels], labels, loc="outside right center",
                       fontsize=8, frameon=False)
        if title:
            fig.suptitle(_wrap(title, fig_w * 0.95, 11), fontsize=11)
        if caption:
            fig.supxlabel(_wrap(caption, fig_w * 0.95, 8), fontsize=8, color="0.25")
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)
    return path
