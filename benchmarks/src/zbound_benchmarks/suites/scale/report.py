"""Report of the ``scale`` suite: tables per task, verdicts from the numbers, time vs t."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zbound_benchmarks.report import prose, table
from zbound_benchmarks.suites.scale.config import LIBRARY, LIBRARY_EXACT

CLAIM_RATIO = 0.5


def _f(v, fmt="{:.3g}"):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "NO"
    return fmt.format(v) if isinstance(v, int | float) else str(v)


def _t(r):
    return r["metrics"].get("t")


def _setting(m) -> str:
    """The setting used; a capped ladder says so (not reached at its last setting)."""
    note = m.get("note") or ""
    if "setting_used" not in m:
        return _f(note)
    used = _f(m["setting_used"])
    return f"{used} (capped: not reached, run once)" if note.startswith("capped") else used


def tables(recs) -> list[str]:
    lines = []
    tasks = []
    for r in recs:
        if r["task"] not in tasks:
            tasks.append(r["task"])
    for task in tasks:
        rows = [r for r in recs if r["task"] == task and r["method"] != "numpy-equality"]
        lines += [f"### {task} ({rows[0]['dataset'] if rows else ''})", ""] + table(
            ("t", "method", "reached", "time to target s", "iterations", "passes",
             "rel. gap at end", "peak MB / worker", "within budget (MB)", "setting"),
            [(_t(r), r["method"], _f(r["reached"]), _f(r["time_to_target_s"], "{:.2f}"),
              _f(m.get("iterations")), _f(m.get("passes")), _f(m.get("rel_gap"), "{:.1e}"),
              _f(m.get("peak_memory_mb"), "{:.0f}"),
              "" if m.get("within_budget") is None else
              f"{_f(m['within_budget'])} ({_f(m.get('budget_mb'), '{:.0f}')})", _setting(m))
             for r in sorted(rows, key=lambda r: (_t(r) or 0, r["method"]))
             for m in [r["metrics"]]]) + [""]
    eq = [r for r in recs if r["method"] == "numpy-equality"]
    if eq:
        lines += ["### The dask path against the NumPy path (both to tol 1e-10)", ""] + table(
            ("task", "t", "curvature", "iterations dask", "iterations NumPy",
             "rel. diff of objective", "dask-glm objective vs ours at one beta",
             "train accuracy"),
            [(r["task"], m["t"], m.get("curvature"), m.get("iterations"),
              _f(m.get("numpy_iterations")), _f(m.get("rel_diff"), "{:.1e}"),
              _f(m.get("mapping_rel_diff"), "{:.1e}"), _f(m.get("train_accuracy"), "{:.4f}"))
             for r in eq for m in [r["metrics"]]]) + [""]
    return lines


def verdicts(recs) -> list[str]:
    out = []
    by = {}
    for r in recs:
        by.setdefault((r["task"], _t(r)), []).append(r)
    for (task, t), rows in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        mine = [r for name in (LIBRARY, LIBRARY_EXACT) for r in rows
                if r["method"] == name and not r["metrics"].get("skipped")]
        if not mine:
            continue
        ours = mine[0]
        dml = [r for r in rows if r["method"].startswith("dask-ml") and r["reached"]
               and r["time_to_target_s"] is not None and r["method"] != "dask-ml-lbfgs-ovr"]
        for me in mine:
            q = me["metrics"].get("hessian_sample")
            label = "zbound (exact Hessian)" if me["method"] == LIBRARY_EXACT else \
                "zbound (default, Hessian rows " + ("all)" if q in (None, 1.0) else f"{q:.3g})")
            if task != "multiclass" and dml and me["reached"]:
                best = min(dml, key=lambda r: r["time_to_target_s"])
                ratio = me["time_to_target_s"] / best["time_to_target_s"]
                held = "holds" if ratio <= CLAIM_RATIO else "does NOT hold"
                out.append(f"- {task}, t = {t}: {label} {me['time_to_target_s']:.2f} s against "
                           f"{best['method']} {best['time_to_target_s']:.2f} s: ratio "
                           f"{ratio:.2f} -> the 0.5x claim {held}.")
            elif task != "multiclass":
                out.append(f"- {task}, t = {t}: no dask-ml solver reached the target"
                           f"{'' if me['reached'] else f' (nor did {label})'}.")
        if task == "multiclass":
            ovr = next((r for r in rows if r["method"] == "dask-ml-lbfgs-ovr"), None)
            asis = next((r for r in rows if r["method"] == "dask-ml-lbfgs-as-is"), None)
            if asis is not None:
                m = asis["metrics"]
                out.append(f"- multiclass, t = {t}: dask-ml fed 10 labels returns coef_ of "
                           f"shape {m.get('coef_shape')} and predicts {m.get('predict_values')}"
                           " (binary code applied to multiclass labels, no error).")
            if ovr is not None and ovr["time_to_target_s"] and ours["time_to_target_s"]:
                ratio = ours["time_to_target_s"] / ovr["time_to_target_s"]
                out.append(prose("scale", "ovr", t=t, ovr_s=ovr["time_to_target_s"],
                                 gap=_f(ovr["metrics"].get("rel_gap"), "{:.1e}"),
                                 ours=ours["method"], ours_s=ours["time_to_target_s"],
                                 ratio=ratio))
            elif ovr is not None:
                out.append(f"- multiclass, t = {t}: one-vs-rest with dask-ml lbfgs or "
                           f"{ours['method']} was not timed.")
        eq = next((r for r in rows if r["method"] == "numpy-equality"), None)
        if eq is not None and eq["metrics"].get("rel_diff") is not None:
            m = eq["metrics"]
            same = m["iterations"] == m["numpy_iterations"]
            why = "" if same else " (the NumPy path's inner solves differ, see docs/dask.md)"
            within = "within" if eq["reached"] else "OUTSIDE"
            out.append(f"- {task}, t = {t}: dask path equals the NumPy path: objective "
                       f"rel. diff {_f(m['rel_diff'], '{:.1e}')} ({within} 1e-10), iterations "
                       f"{m['iterations']} vs {m['numpy_iterations']}{why}.")
        for me in mine:
            m = me["metrics"]
            if m.get("within_budget") is not None:
                mb = lambda key, m=m: _f(m.get(key), "{:.0f}")            # noqa: E731
                out.append(f"- {task}, t = {t}: {me['method']} peak {mb('peak_memory_mb')} "
                           f"MB per worker (baseline {mb('baseline_memory_mb')}, chunk "
                           f"{mb('chunk_mb')} MB): {'within' if m['within_budget'] else 'OVER'}"
                           f" the budget {mb('budget_mb')} MB.")
    for task in ("multiclass", "binary"):
        for name in (LIBRARY, LIBRARY_EXACT):
            pts = sorted((_t(r), r["time_to_target_s"]) for r in recs
                         if r["task"] == task and r["method"] == name and r["reached"])
            for (t0, s0), (t1, s1) in zip(pts, pts[1:]):
                growth = (s1 / s0) / (t1 / t0)
                out.append(f"- {task}, {name}: t {t0} -> {t1}: time x{s1 / s0:.1f} for rows "
                           f"x{t1 / t0:.0f} -> "
                           f"{'at most linear' if growth <= 1.2 else 'MORE than linear'} "
                           f"(ratio {growth:.2f}).")
    return out


def plot(recs, out: Path):
    from zbound_benchmarks.plots import Panel, Series, panel_grid

    panels = []
    for task in ("multiclass", "binary"):
        series = []
        names = sorted({r["method"] for r in recs if r["task"] == task
                        and r["time_to_target_s"] is not None and r["method"] != "numpy-equality"})
        for name in names:
            pts = sorted((_t(r), r["time_to_target_s"]) for r in recs
                         if r["task"] == task and r["method"] == name
                         and r["time_to_target_s"] is not None and (r["reached"] or
                                                                    name.endswith("ovr")))
            if pts:
                series.append(Series(name, [p[0] for p in pts], [p[1] for p in pts]))
        if series:
            panels.append(Panel(f"{task}: time to target", "rows t", "seconds", series,
                                logx=True, logy=True))
    if not panels:
        return None
    return panel_grid([panels], Path(out) / "scale_time_vs_t.png",
                      title="scale: time to the target against rows (LocalCluster, 2 workers)",
                      caption=prose("scale", "caption"))


def report(doc: dict[str, Any], out) -> str:
    recs = doc["records"]
    extra = doc.get("extra", {})
    cfg = extra.get("config", {})
    lines = [prose("scale", "intro", **{k: cfg.get(k) for k in ("C", "rtol", "workers",
                                                                 "repeats")}), ""]
    spark = extra.get("spark")
    if spark and not spark.get("available"):
        lines += [f"Spark MLlib skipped: {spark.get('reason')}", ""]
    lines += tables(recs)
    v = verdicts(recs)
    if v:
        lines += ["### Verdicts", ""] + v + [""]
    path = plot(recs, Path(out))
    if path is not None:
        lines += [f"![time vs t]({Path(path).name})", ""]
    return "\n".join(lines) + "\n"
