"""The suite's figures, drawn through :mod:`zbound_benchmarks.plots` (Panel / Series / panel_grid).

Each function writes one PNG into ``out`` and returns the Markdown that shows it (or "" when
there is nothing to draw). Records are selected by the caller; here they are only drawn.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from zbound_benchmarks.plots import PALETTE, Panel, Series, panel_grid

# one colour and marker per method in every figure of the suite
METHOD_STYLES = {
    "quantum": {"color": PALETTE[0], "marker": "o"},
    "quantum-greedy-k3": {"color": PALETTE[1], "marker": "s"},
    "quantum-greedy-k10": {"color": PALETTE[4], "marker": "^"},
    "logdet": {"color": PALETTE[2], "marker": "D"},
    "trw": {"color": PALETTE[3], "marker": "v"},
    "quantum-degree": {"color": PALETTE[0], "marker": "o"},
    "quantum-greedy": {"color": PALETTE[1], "marker": "s"},
}

BAND_NOTE = "Lines: mean over the random draws; shaded: ± one standard deviation."
ERROR_NOTE = ("error bound = (bound − exact Phi_eps)/d; l1 error = mean_i |p̂(x_i = 1) − "
              "p(x_i = 1)| (marginals from the bound's optimum against exact ones).")
GAP_NOTE = ("relative duality gap = (D − P)/max(|D|, |P|, 1), D = best dual value (the "
            "certified upper bound), P = best feasible primal value, checked every 10 "
            "iterations.")


def _series(recs: list[dict], key: str, methods=None) -> list[Series]:
    by_method: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by_method[r["method"]].append(r)
    out = []
    for method, rs in sorted(by_method.items()):
        if methods is not None and method not in methods:
            continue
        rs = sorted(rs, key=lambda r: r["metrics"]["x"])
        mean = [r["metrics"].get(f"{key}_mean") for r in rs]
        if all(v is None for v in mean):
            continue
        out.append(Series(method, x=[r["metrics"]["x"] for r in rs], y=mean,
                          band=[r["metrics"].get(f"{key}_std") for r in rs]))
    return out


def method_figure(out: Path, fname: str, groups: list[tuple[str, list[dict]]],
                  keys: list[tuple[str, str]], xlabel: str, title: str, methods=None,
                  logx: bool = False, caption: str | None = None) -> str:
    """Rows = metrics ``keys`` ((key, y label)), columns = record groups ((title, records));
    one line per method: the ``{key}_mean`` of each record against ``metrics["x"]``."""
    groups = [(n, g) for n, g in groups if g]
    if not groups:
        return ""
    rows = [[Panel(name, xlabel, label, _series(recs, key, methods), logx=logx)
             for name, recs in groups] for key, label in keys]
    note = BAND_NOTE if caption is None else f"{caption} {BAND_NOTE}"
    panel_grid(rows, Path(out) / fname, title=title, caption=note, styles=METHOD_STYLES,
               panel_size=(4.0, 3.0))
    return f"![{title}]({fname})\n"


def gap_curve_figure(out: Path, fname: str, curves: list[dict], title: str) -> str:
    """Relative duality gap against iterations, one curve per draw and step-size pair."""
    if not curves:
        return ""
    series = []
    for c in curves:
        label = f"tau={c['tau']}, sigma={c['sigma']}"
        gap = [max(float(g), 1e-16) for g in c["gap"]]
        series.append(Series(label, x=c["iterations"], y=gap))
    panel = Panel(title, "iteration", "relative duality gap (D − P)/max(|D|, |P|, 1)", series,
                  logy=True)
    panel_grid([[panel]], Path(out) / fname, caption=GAP_NOTE + " One curve per random draw.",
               panel_size=(6.0, 4.0))
    return f"### {title}\n\n![{title}]({fname})\n"


def iterations_figure(out: Path, fname: str, recs: list[dict], xlabel: str, title: str,
                      caption: str) -> str:
    """Iterations to the target gap per draw (points) against ``metrics["x"]``."""
    if not recs:
        return ""
    xs, ys = [], []
    for r in recs:
        pts = [v for v in r["metrics"]["per_draw"] if v is not None]
        xs += [r["metrics"]["x"]] * len(pts)
        ys += pts
    panel = Panel(title, xlabel, "iterations", [Series("one random draw", xs, ys,
                                                       marker_only=True)])
    panel_grid([[panel]], Path(out) / fname, caption=caption, panel_size=(5.0, 3.5))
    rows = " | ".join(f"{r['setting']}: {r['metrics']['per_draw']}" for r in recs)
    return f"### {title}\n\n![{title}]({fname})\n\n{rows}\n"


SCALE_NOTE = ("Wall seconds of one solve (median of the alternating repeats for d <= 200) on a "
              "complete graph with Gaussian parameters, eps = 1: quantum = the library's "
              "quantum_bound, features (1, x), to relative duality gap 1e-6 "
              "(quantum-2threads: the same on two BLAS threads); trw = TRW with rho = 2/d "
              "(open marker: did not converge in the sweep limit, certified bound anyway). "
              "Both axes logarithmic.")


def scale_figure(out: Path, fname: str, recs: list[dict], target_s: float) -> str:
    """Seconds against d (log-log), one line per method, the target as a horizontal line."""
    if not recs:
        return ""
    series = []
    for method in sorted({r["method"] for r in recs}):
        rs = sorted((r for r in recs if r["method"] == method), key=lambda r: r["metrics"]["d"])
        series.append(Series(method, x=[r["metrics"]["d"] for r in rs],
                             y=[r["metrics"]["seconds"] for r in rs]))
        late = [r for r in rs if not r["metrics"]["converged"]]
        if late:
            series.append(Series(f"{method} (not converged)",
                                 x=[r["metrics"]["d"] for r in late],
                                 y=[r["metrics"]["seconds"] for r in late], marker_only=True,
                                 style={"markerfacecolor": "none", "markersize": 10,
                                        **METHOD_STYLES.get(method, {})}))
    panel = Panel("Time to a certified bound against d (complete graph)", "d", "seconds",
                  series, logx=True, logy=True, hline=target_s,
                  hline_label=f"target {target_s:g} s")
    panel_grid([[panel]], Path(out) / fname, caption=SCALE_NOTE, styles=METHOD_STYLES,
               panel_size=(6.0, 4.0))
    return f"![time vs d]({fname})\n"
