"""Shared plotting for benchmark reports: grids of line panels written as PNG (matplotlib Agg).

Suites describe what to draw with plain data (:class:`Series` in :class:`Panel` in a grid of
rows) and call :func:`panel_grid`; nothing here knows about a particular suite.

>>> s = Series("bound", x=[0, 1, 2], y=[1.0, 0.1, 0.01])
>>> panel_grid([[Panel("wine C=1", "iterations", "f - f*", [s], logy=True)]], "out.png")
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Series:
    """One curve (or, with ``marker_only``, a set of unconnected points)."""

    label: str
    x: Sequence[float]
    y: Sequence[float | None]
    marker_only: bool = False
    style: dict = field(default_factory=dict)


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


def _finite_pairs(x, y, logx: bool, logy: bool):
    xs, ys = [], []
    for a, b in zip(x, y):
        if a is None or b is None:
            continue
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)):
            continue
        if (logx and a <= 0) or (logy and b <= 0):
            continue
        xs.append(a)
        ys.append(b)
    return xs, ys


def draw_panel(ax, panel: Panel, colors: dict[str, object]) -> None:
    """Draw ``panel`` on a matplotlib axes; ``colors`` keeps one color per label across panels."""
    for s in panel.series:
        xs, ys = _finite_pairs(s.x, s.y, panel.logx, panel.logy)
        if not xs:
            continue
        color = colors.get(s.label)
        kw = {"label": s.label, **s.style}
        if color is not None and "color" not in kw:
            kw["color"] = color
        if s.marker_only:
            line = ax.plot(xs, ys, linestyle="none", marker="D", markersize=6, **kw)
        else:
            line = ax.plot(xs, ys, linewidth=1.4, marker="." if len(xs) < 40 else None, **kw)
        colors.setdefault(s.label, line[0].get_color())
    if panel.hline is not None and (not panel.logy or panel.hline > 0):
        ax.axhline(panel.hline, color="0.4", linestyle="--", linewidth=1,
                   label=panel.hline_label)
    if panel.logy:
        ax.set_yscale("log")
    if panel.logx:
        ax.set_xscale("log")
    ax.set_title(panel.title, fontsize=9)
    ax.set_xlabel(panel.xlabel, fontsize=8)
    ax.set_ylabel(panel.ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", alpha=0.3)


def panel_grid(rows: Sequence[Sequence[Panel]], path: str | Path, title: str | None = None,
               panel_size: tuple[float, float] = (4.2, 3.0), dpi: int = 110) -> Path:
    """Draw a grid of panels (one list per row) into a PNG with one shared legend.

    Colors are kept per series label across all panels, so a method has the same color
    everywhere. Returns the path written.
    """
    plt = _agg()
    path = Path(path)
    n_rows = len(rows)
    n_cols = max((len(r) for r in rows), default=1)
    fig, axes = plt.subplots(n_rows, n_cols, squeeze=False,
                             figsize=(panel_size[0] * n_cols + 1.8, panel_size[1] * n_rows + 0.6))
    colors: dict[str, object] = {}
    try:
        for i, row in enumerate(rows):
            for j in range(n_cols):
                ax = axes[i][j]
                if j < len(row):
                    draw_panel(ax, row[j], colors)
                else:
                    ax.axis("off")
        handles, labels = {}, []
        for ax in axes.ravel():
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in handles:
                    handles[lab] = h
                    labels.append(lab)
        if handles:
            fig.legend([handles[lab] for lab in labels], labels, loc="center right",
                       fontsize=8, frameon=False)
        if title:
            fig.suptitle(title, fontsize=11)
        fig.tight_layout(rect=(0, 0, 1 - 1.7 / fig.get_figwidth(), 1))
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)
    return path
