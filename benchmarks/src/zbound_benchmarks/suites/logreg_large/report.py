"""Report of ``logreg-large``: Table 1 beside the paper's, the Table 4 rank sweep, time to target
on the larger data at both targets (ours against every peer), the estimator against
scikit-learn's, peak memory, verdicts against the targets, and plots.

Everything is read from the records and ``extra`` of ``SUITE.json``.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from zbound_benchmarks.report import by_cell, fastest, num, prose, reached_s, table
from zbound_benchmarks.suites.logreg_large.config import (
    ESTIMATOR,
    ESTIMATOR_DOUBLE,
    ESTIMATOR_MIXED,
    LARGE_D_METHODS,
    OURS_EXTRA_ROWS,
    PAPER_EPS,
    PAPER_RANKS,
    PAPER_SIZES,
    PAPER_TABLE1,
    PAPER_TABLE4,
    PAPER_TO_OURS,
    TARGETS,
)

#: The suite's targets.
GOALS = {
    "table1_vs_lbfgs": 0.5,     # library's best large-d method <= 0.5 x SciPy L-BFGS-B
    "large_cap": 1.0,           # default <= 1.0 x the fastest peer in every larger cell ...
    "large_good": 0.5,          # ... and <= 0.5 x in at least half of them
    "estimator_memory": 2.0,    # estimator peak memory <= 2 x scikit-learn's
}


def _s(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 10:
        return f"{t:.1f}"
    if t >= 0.01:
        return f"{t:.3f}"
    return f"{t * 1e3:.2f} ms"


def _with_unit(t: float | None) -> str:
    return _s(t) if (t is None or t < 0.01) else f"{_s(t)} s"


def _x(r: float | None) -> str:
    if r is None:
        return "-"
    if math.isinf(r):
        return "not reached"
    return f"{r:.2f}x"


def _cell_text(r: dict | None) -> str:
    if r is None:
        return ""
    if r["metrics"].get("skipped"):
        return "skip"
    t = reached_s(r)
    return _s(t) if t is not None else "not reached"


def _ratio(t: float | None, ref: float | None) -> float | None:
    """t / ref; inf when only ref reached; None without ref."""
    if not ref:
        return None
    return math.inf if t is None else t / ref


def _rel_gap(f: float | None, f_star: float | None) -> float | None:
    if f is None or not f_star:
        return None
    return (f - f_star) / abs(f_star)


# -- Table 1 and Table 4 -------------------------------------------------------------------

def table1_rows(records: list[dict]) -> list[dict[str, Any]]:
    """Per Table 1 cell: the library's best large-d method (:data:`LARGE_D_METHODS`, the
    methods built for d >> t; all of the library's non-estimator methods if none of them ran)
    against SciPy L-BFGS-B (``best``, ``ratio``, ``pass``), and the fastest library method of
    any kind (``overall``, ``overall_ratio``)."""
    rows = []
    for (task, dataset, setting), recs in by_cell(records).items():
        if task != "table1":
            continue
        lib = {n: r for n, r in recs.items() if not r["peer"]
               and n not in (ESTIMATOR, ESTIMATOR_MIXED, ESTIMATOR_DOUBLE)}
        large_d = {n: r for n, r in lib.items() if n in LARGE_D_METHODS}
        lb = reached_s(recs.get("scipy-lbfgsb"))

        best, best_t = fastest(large_d or lib, peers=False)
        if best is None and large_d:
            best = next(iter(large_d))   # none reached: name one, ratio "not reached"
        overall, overall_t = fastest(lib, peers=False)
        ratio = _ratio(best_t, lb)
        fp, fp_t = fastest(recs)
        rows.append({"dataset": dataset, "setting": setting, "best": best, "best_s": best_t,
                     "lbfgs_s": lb, "ratio": ratio, "overall": overall,
                     "overall_s": overall_t, "overall_ratio": _ratio(overall_t, lb),
                     "fastest_peer": fp, "fastest_peer_s": fp_t,
                     "pass": ratio is not None and ratio <= GOALS["table1_vs_lbfgs"]})
    return rows


def _table1_md(doc: dict, idx) -> list[str]:
    lines = [prose("logreg-large", "table1", eps=PAPER_EPS), ""]
    refs = doc.get("extra", {}).get("references", {})
    for (task, dataset, setting), recs in idx.items():
        if task != "table1":
            continue
        any_r = next(iter(recs.values()))
        m = any_r["metrics"]
        paper = PAPER_TABLE1.get(dataset, {})
        size = PAPER_SIZES.get(dataset, {})
        lines += [f"### {dataset}, {setting} (ours: t = {m['t']} training rows, "
                  f"{m['n_params']} parameters; paper: t = {size.get('t')} rows in all, "
                  f"d = {size.get('d')})", ""]
        ref = refs.get(f"{task}/{dataset}/{setting}", {})
        if ref:
            f0 = ref.get("f_at_zero")
            lines.append(f"f* = {ref.get('f_star'):.10g}; L-BFGS (paper rule) "
                         f"{ref.get('f_lbfgs_paper'):.10g} after "
                         f"{ref.get('lbfgs_paper_iterations')} iterations; target "
                         f"{recs[next(iter(recs))]['target_objective']:.10g}"
                         + (f"; f(0) = {f0:.10g}" + (" -- the start already meets the target"
                                                     if ref.get("zero_meets_target") else "")
                            if f0 is not None else "") + ".")
            lines.append("")
        ours_to_paper = {v: k for k, v in PAPER_TO_OURS.items()}
        rows = []
        for n, r in recs.items():
            pn = ours_to_paper.get(n, OURS_EXTRA_ROWS.get(n, ""))
            ps, pi = paper.get(pn, (None, None))
            mm = r["metrics"]
            rows.append((n, pn, _cell_text(r), num(mm.get("iterations"), "", ""),
                         num(ps, "", ""), num(pi, "", ""),
                         f"{mm.get('n_reached', '')}/{mm.get('n_starts', '')}",
                         num(mm.get("peak_memory_mb"), ".1f", "")))
        lines += table(("method", "paper's name", "seconds", "iterations", "paper seconds",
                        "paper iterations", "starts reached", "peak MB"), rows) + [""]
    return lines


def rank_sweep_rows(doc: dict) -> list[dict[str, Any]]:
    """Per rank k of Table 4: seconds to the target (None: not reached), iterations done, and
    the relative objective gap (f - f*) / |f*| where the run stopped (the target or the time
    budget), beside the target's own relative gap."""
    rows = []
    for r in doc["records"]:
        if r["task"] != "table4" or not r["setting"].startswith("k="):
            continue
        m = r["metrics"]
        f_star, final, target = m.get("f_star"), r.get("final_objective"), \
            r.get("target_objective")

        rows.append({"k": int(r["setting"][2:]), "method": r["method"], "seconds": reached_s(r),
                     "reached": bool(r["reached"]), "iterations": m.get("iterations"),
                     "gap": _rel_gap(final, f_star), "target_gap": _rel_gap(target, f_star),
                     "budget_s": m.get("time_budget_s"), "f_star": f_star,
                     "skipped": bool(m.get("skipped")),
                     "peak_memory_mb": m.get("peak_memory_mb")})
    return sorted(rows, key=lambda x: x["k"])


def _table4_md(doc: dict, idx, out: Path) -> list[str]:
    sweep = doc.get("extra", {}).get("rank_sweep")
    if sweep is None:
        return []
    lines = ["## Table 4: the low-rank bound's rank k on SRBCT", ""]
    if sweep.get("skipped"):
        return lines + [f"**{sweep['skipped']}**: Table 4 was not run.", ""]
    rows = rank_sweep_rows(doc)
    t1 = next((recs for (task, d, _), recs in idx.items()
               if task == "table1" and d == "srbct"), {})
    paper_at = dict(zip(PAPER_RANKS, range(len(PAPER_RANKS)), strict=True))
    lines += [prose("logreg-large", "table4"), ""]
    lb_t = reached_s(t1.get("scipy-lbfgsb"))
    cells = []
    for row in rows:
        j = paper_at.get(row["k"])
        r = idx.get(("table4", "srbct", f"k={row['k']}"), {}).get(row["method"])

        def paper(col, j=j):
            return "" if j is None else PAPER_TABLE4[col][j]

        cells.append((row["k"], _cell_text(r), num(row["iterations"], ""),
                      num(row["gap"], ".2e"), num(row["peak_memory_mb"], ".1f", ""),
                      paper("Bound"), paper("LBFGS"), _s(lb_t), paper("CG"),
                      _s(reached_s(t1.get("scipy-cg"))), paper("SD"),
                      _s(reached_s(t1.get("steepest")))))
    lines += table(("k", "bound seconds", "iterations", "gap reached", "peak MB", "paper Bound",
                    "paper LBFGS", "ours L-BFGS-B", "paper CG", "ours CG", "paper SD",
                    "ours SD"), cells) + [""]
    if not rows:
        return lines
    target_gap = next((x["target_gap"] for x in rows if x["target_gap"] is not None), None)
    f_star0 = next((x["f_star"] for x in rows if x["f_star"]), None)
    start = [c["gap"][0] / abs(f_star0) for c in (sweep.get("curves") or {}).values()
             if c and c.get("gap") and f_star0]
    if not any(x["reached"] for x in rows):
        done = "; ".join(
            f"k = {x['k']}: " + ("not run (one iteration over the budget)" if x["skipped"] else
                                 f"{x['iterations']} iterations, gap "
                                 + ("-" if x["gap"] is None else f"{x['gap']:.2e}"))
            for x in rows)
        budget = next((x["budget_s"] for x in rows if x["budget_s"] is not None), None)
        lines += [prose("logreg-large", "table4-missed",
                        budget="" if budget is None else f"{budget:g} s ",
                        target=num(target_gap, ".2e"),
                        start=f"; gap at the start {statistics.median(start):.2e}"
                        if start else "", done=done, lbfgs=_with_unit(lb_t)), ""]
    from zbound_benchmarks.plots import Panel, Series, panel_grid

    xs = [x["k"] for x in rows]
    seconds = [Series("low-rank bound (ours)", xs, [x["seconds"] for x in rows]),
               Series("Bound (paper, 2012)", PAPER_RANKS, PAPER_TABLE4["Bound"]),
               Series("LBFGS (paper, 2012)", PAPER_RANKS, PAPER_TABLE4["LBFGS"])]
    if lb_t is not None:
        seconds.append(Series("SciPy L-BFGS-B (ours)", xs, [lb_t] * len(xs)))
    gaps = [Series("low-rank bound (ours)", xs,
                   [None if x["gap"] is None else max(x["gap"], 1e-16) for x in rows])]
    if start:
        gaps.append(Series("start (ours, median)", xs, [statistics.median(start)] * len(xs),
                           style={"linestyle": ":"}))
    lb_r = t1.get("scipy-lbfgsb")
    lb_f, f_star = (lb_r or {}).get("final_objective"), \
        ((lb_r or {}).get("metrics") or {}).get("f_star")
    if lb_f is not None and f_star:
        gaps.append(Series("SciPy L-BFGS-B (ours)", xs,
                           [max((lb_f - f_star) / abs(f_star), 1e-16)] * len(xs)))
    panels = [Panel("SRBCT: seconds to the Table 1 target", "rank k", "seconds", seconds,
                    logy=True, logx=True),
              Panel("SRBCT: gap (f - f*) / |f*| where the run stopped", "rank k",
                    "relative gap", gaps, logy=True, logx=True,
                    hline=None if target_gap is None else max(target_gap, 1e-16),
                    hline_label="Table 1 target (the paper reaches it at every k)")]
    path = panel_grid([panels], out / "logreg-large-rank-sweep.png",
                      caption=prose("logreg-large", "table4-caption"))
    lines += [f"![rank sweep]({path.name})", ""]
    return lines


def _growth(pr: dict) -> str:
    """What the probe's peaks at two row counts say about growth with the rows."""
    peaks, rows = pr["peak_mb_by_rows"], pr["rows"]
    if len(peaks) < 2:
        return ""
    grow = peaks[-1] / peaks[0] if peaks[0] else math.inf
    if grow <= 1.1:
        return (f" The peak does not grow with the rows ({rows[0]} -> {rows[-1]}: "
                f"x{grow:.2f}): the working set is the O(p k) curvature V^T S V + D.")
    return f" The peak grows with the rows ({rows[0]} -> {rows[-1]}: x{grow:.2f})."


def _probe_md(doc: dict) -> list[str]:
    """The one-iteration memory probes of low-rank methods too slow to time."""
    seen, lines = set(), []
    for r in doc["records"]:
        pr = r["metrics"].get("memory_probe")
        if not pr:
            continue
        key = (r["task"], r["dataset"], r["metrics"].get("C"), r["method"])
        if key in seen:
            continue
        seen.add(key)
        peaks = ", ".join(f"{mb:.1f} MB on {n} rows" for mb, n in
                          zip(pr["peak_mb_by_rows"], pr["rows"], strict=True))
        lines.append(prose(
            "logreg-large", "probe", dataset=r["dataset"], setting=r["setting"],
            method=r["method"], estimate=pr.get("iteration_estimate_s", math.nan), peaks=peaks,
            updates=max(pr["rank_one_updates_at_most"]), pp=pr["p_by_p_mb"], p=pr["p"],
            share=100 * pr["peak_memory_mb"] / pr["p_by_p_mb"], growth=_growth(pr)))
    if not lines:
        return []
    return [prose("logreg-large", "probes"), ""] + lines + [""]


# -- larger data -----------------------------------------------------------------------------

def large_rows(records: list[dict]) -> list[dict[str, Any]]:
    """Per larger-data cell and target: the default's time, the fastest peer, the ratio."""
    rows = []
    for (task, dataset, setting), recs in by_cell(records).items():
        if task != "large":
            continue
        default = next((r for r in recs.values() if r.get("default")), None)
        peer, peer_t = fastest(recs)
        t = reached_s(default)
        m = (default or next(iter(recs.values())))["metrics"]
        ratio, bound = _peer_ratio(t, peer_t, default is not None, m.get("time_budget_s"))
        rows.append({"dataset": dataset, "setting": setting, "C": m.get("C"),
                     "target": m.get("target_name"), "default": default and default["method"],
                     "default_s": t, "peer": peer if not bound else NO_PEER, "peer_s": peer_t,
                     "ratio": ratio, "bound": bound})
    return rows


#: what a ratio's peer column says when no peer reached the target within the time budget
NO_PEER = "none within the budget"


def _peer_ratio(t, peer_t, ran: bool, budget) -> tuple[float | None, bool]:
    """(ours / the fastest peer's time, whether that is an upper bound). No peer reached the
    target within the time budget but ours did: every peer took longer than the budget, so
    the ratio is at most t / budget (marked as a bound). Ours not reached: inf; nothing known
    (ours did not run, or neither reached): None."""
    if not ran:
        return None, False
    if peer_t is None and t is not None and budget:
        return t / float(budget), True
    return _ratio(t, peer_t), False


def _bounds_note(rows: list[dict]) -> str:
    """"; N without any peer ..." for the rows whose ratio is an upper bound."""
    n = sum(1 for r in rows if r.get("bound"))
    return (f"; {n} with no peer reaching the target within the time budget, counted at "
            "ours / budget, an upper bound" if n else "")


def _xb(r: float | None, bound: bool) -> str:
    """:func:`_x`, "< " in front of an upper bound."""
    return ("< " if bound and r is not None else "") + _x(r)


def estimator_rows(records: list[dict]) -> list[dict[str, Any]]:
    rows = []
    for (task, dataset, setting), recs in by_cell(records).items():
        est = recs.get(ESTIMATOR)
        if task not in ("large", "estimator") or est is None:
            continue
        sk = {n: r for n, r in recs.items() if n.startswith("sklearn-")}
        best, best_t = fastest(sk)
        lb = sk.get("sklearn-lbfgs")
        mem = est["metrics"].get("peak_memory_mb")
        lb_mem = lb["metrics"].get("peak_memory_mb") if lb else None
        t = reached_s(est)
        budget = est["metrics"].get("time_budget_s")
        variants = {}
        for key, name in (("mixed", ESTIMATOR_MIXED), ("double", ESTIMATOR_DOUBLE)):
            v = recs.get(name)
            tv = reached_s(v) if v else None
            variants.update({
                f"{key}_s": tv,
                f"{key}_mb": v["metrics"].get("peak_memory_mb") if v else None,
                f"{key}_ratio": _peer_ratio(tv, best_t, v is not None, budget)[0]})
        ratio, bound = _peer_ratio(t, best_t, True, budget)
        rows.append({
            **variants,
            "dataset": dataset, "setting": setting, "est_s": t, "est_mb": mem,
            "sk_best": best if not bound else NO_PEER, "sk_best_s": best_t,
            "sk_lbfgs_s": reached_s(lb), "sk_lbfgs_mb": lb_mem, "time_ratio": ratio, "bound": bound,
            "mem_ratio": (mem / lb_mem) if (mem is not None and lb_mem) else None})
    return rows


def _word(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def verdicts(doc: dict) -> list[str]:
    """One line per target: PASS / FAIL / n/a with the numbers."""
    recs, lines = doc["records"], []
    t1 = table1_rows(recs)
    detail = "; ".join(
        f"{r['dataset']}: {r['best']} {_s(r['best_s'])} vs L-BFGS-B {_s(r['lbfgs_s'])} = "
        f"{_x(r['ratio'])}" + ("" if r["overall"] in (None, r["best"]) else
                               f" (fastest library method: {r['overall']} "
                               f"{_x(r['overall_ratio'])})") for r in t1)
    lines.append(prose("logreg-large", "verdict-table1", word=_word(all(r["pass"] for r in t1)),
                       methods=" / ".join(LARGE_D_METHODS), goal=GOALS["table1_vs_lbfgs"],
                       detail=detail) if t1 else prose("logreg-large", "verdict-table1-none"))
    lr = large_rows(recs)
    known = [r["ratio"] for r in lr if r["ratio"] is not None]
    capped = sum(1 for x in known if x <= GOALS["large_cap"])
    good = sum(1 for x in known if x <= GOALS["large_good"])
    lines += [prose("logreg-large", "verdict-large", word=_word(capped == len(lr)),
                    cap=GOALS["large_cap"],
                    capped=capped, n=len(lr), worst=_x(max(known) if known else None),
                    bounds=_bounds_note(lr)),
              prose("logreg-large", "verdict-large-half", word=_word(good * 2 >= len(lr)),
                    goal=GOALS["large_good"], good=good, n=len(lr))] if lr else \
        [prose("logreg-large", "verdict-large-none")]
    er = estimator_rows(recs)
    if not er:
        return lines
    mem = [r["mem_ratio"] for r in er if r["mem_ratio"] is not None]
    lines.append(prose("logreg-large", "verdict-memory", word=_word(
        len(mem) == len(er) and all(x <= GOALS["estimator_memory"] for x in mem)),
        goal=GOALS["estimator_memory"], worst=max(mem)) if mem else
        prose("logreg-large", "verdict-memory-none"))
    tr = [r["time_ratio"] for r in er if r["time_ratio"] is not None]
    faster = sum(1 for x in tr if x <= GOALS["large_cap"])
    half = sum(1 for x in tr if x <= GOALS["large_good"])
    lines += [prose("logreg-large", "verdict-estimator", word=_word(len(tr) == len(er) == faster),
                    cap=GOALS["large_cap"], faster=faster, n=len(er),
                    worst=_x(max(tr)) if tr else "-", bounds=_bounds_note(er)),
              prose("logreg-large", "verdict-estimator-half", word=_word(half * 2 >= len(er)),
                    goal=GOALS["large_good"], half=half, n=len(er))]
    for key, what in (("mixed", "precision='mixed' (float32 first, a float32 copy of X)"),
                      ("double", "precision='double' (float64 throughout)")):
        tm = [r[f"{key}_ratio"] for r in er if r[f"{key}_ratio"] is not None]
        mm = [r[f"{key}_mb"] / r["sk_lbfgs_mb"] for r in er
              if r[f"{key}_mb"] is not None and r["sk_lbfgs_mb"]]
        if tm:
            lines.append(prose("logreg-large", "info-variant", what=what,
                               one=sum(1 for x in tm if x <= 1.0),
                               half=sum(1 for x in tm if x <= 0.5), n=len(tm),
                               worst=_x(max(tm)), memory=max(mm) if mm else float("nan")))
    return lines


def _iterations(r: dict | None) -> str:
    it = None if r is None else r["metrics"].get("iterations")
    return "" if it is None else (str(it) if r["reached"] else f"({it})")


def _passes(r: dict | None) -> str:
    p = None if r is None else r["metrics"].get("passes")
    return "" if p is None else f"{p:.1f}"


def _memory(r: dict | None) -> str:
    mem = None if r is None else r["metrics"].get("peak_memory_mb")
    probe = r is not None and r["metrics"].get("memory_probe") is not None
    return "" if mem is None else f"{mem:.1f}" + (" (probe)" if probe else "")


def _against_peer(recs: dict[str, dict]) -> tuple[str, str]:
    """The fastest peer with its time, and the default's time as a multiple of it."""
    peer, peer_t = fastest(recs)
    t = reached_s(next((r for r in recs.values() if r.get("default")), None))
    ratio = (t / peer_t) if (t is not None and peer_t) else (math.inf if peer_t else None)
    return f"{peer or '-'} {_s(peer_t) if peer else ''}", _x(ratio)


def _large_md(doc: dict, idx) -> list[str]:
    keys = [k for k in idx if k[0] == "large"]
    if not keys:
        return []
    methods = list(dict.fromkeys(n for k in keys for n in idx[k]))

    def rows(target: str, cell, more=lambda recs: ()) -> list[tuple]:
        """One row per cell at ``target``: ``cell(record)`` per method, then ``more``."""
        out = []
        for k in keys:
            m = next(iter(idx[k].values()))["metrics"]
            if m.get("target_name") == target:
                out.append((f"{k[1]} C={m.get('C'):g}", *(cell(idx[k].get(n)) for n in methods),
                            *more(idx[k])))
        return out

    lines = [prose("logreg-large", "large",
                   budget=doc.get("extra", {}).get("config", {}).get("time_budget_s")), ""]
    for tname in TARGETS:
        lines += [f"### {tname} target ({TARGETS[tname]:g} relative)", ""]
        lines += table(("cell", *methods, "fastest peer", "ratio"),
                       rows(tname, _cell_text, _against_peer)) + [""]
    lines += ["### Iterations to the tight target (median; fits: the fit's n_iter_)", ""]
    lines += table(("cell", *methods), rows("tight", _iterations))
    lines += ["", "(In parentheses: iterations made when the method stopped without reaching "
              "the target.)", "", "### Passes over the data to the tight target", "",
              prose("logreg-large", "passes"), ""]
    lines += table(("cell", *methods), rows("tight", _passes))
    lines += ["", "## Peak memory (MB)", "", prose("logreg-large", "tracemalloc"), ""]
    return lines + table(("cell", *methods), rows("loose", _memory)) + [""] + _probe_md(doc)


def _estimator_md(doc: dict) -> list[str]:
    lines: list[str] = []
    er = estimator_rows(doc["records"])
    if er:
        lines += [prose("logreg-large", "estimator"),
                  prose("logreg-large", "estimator-precision"), ""]
        lines += table(
            ("cell", "ours s", "fastest sklearn", "its s", "time ratio", "sklearn-lbfgs s",
             "ours MB", "sklearn-lbfgs MB", "memory ratio", "mixed s", "mixed ratio", "mixed MB",
             "double s", "double ratio", "double MB"),
            [(f"{r['dataset']} {r['setting']}", _s(r["est_s"]), r["sk_best"] or "-",
              _s(r["sk_best_s"]), _xb(r["time_ratio"], r["bound"]), _s(r["sk_lbfgs_s"]),
              num(r["est_mb"], ".1f"), num(r["sk_lbfgs_mb"], ".1f"), _x(r["mem_ratio"]),
              _s(r["mixed_s"]), _xb(r["mixed_ratio"], r["bound"]), num(r["mixed_mb"], ".1f"),
              _s(r["double_s"]), _xb(r["double_ratio"], r["bound"]), num(r["double_mb"], ".1f"))
             for r in er]) + [""]
    return lines


def _curve_plots(doc: dict, out: Path) -> list[str]:
    from zbound_benchmarks.plots import Panel, Series, panel_grid

    curves = doc.get("extra", {}).get("curves", {})
    lines = []
    for dataset in ("srbct", "kmnist"):
        groups = [(g, c) for g, c in curves.items() if c["dataset"] == dataset
                  and c["task"] in ("table1", "large")]
        if not groups:
            continue
        panels = []
        for _, c in groups:
            series = []
            for name, cv in c["methods"].items():
                if not cv:
                    continue
                gaps = [max(g, 1e-16) if g is not None else None for g in cv["gap"]]
                series.append(Series(name, cv["seconds"], gaps,
                                     marker_only=bool(cv.get("point"))))
            targets = c.get("targets", {})
            tight = min(targets.values()) if targets else None
            panels.append(Panel(f"{dataset} {c['setting']}", "seconds",
                                "f - f* (f* = best reference objective)", series, logy=True,
                                logx=True, hline=None if tight is None else
                                max(tight - c["f_star"], 1e-16),
                                hline_label="tightest target"))
        path = panel_grid([panels], out / f"logreg-large-gap-{dataset}.png",
                          title=f"{dataset}: objective gap against time (first start)",
                          caption=prose("logreg-large", "curves-caption"))
        lines += [f"![{dataset} gap vs time]({path.name})", ""]
    return lines


def report(doc: dict, out) -> str:
    out = Path(out)
    idx = by_cell(doc["records"])
    extra = doc.get("extra", {})
    lines = ["## logreg-large", ""]
    if doc.get("quick"):
        slow = (extra.get("config") or {}).get("slow_unit_s")
        once = (f"; a method whose first repeat took over {slow:g} s is timed once (the "
                "records' `repeats`)") if slow is not None else ""
        lines += [prose("logreg-large", "quick", once=once), ""]
    if extra.get("datasets"):
        lines += ["Data:", ""] + [f"- {k}: {v}" for k, v in extra["datasets"].items()] + [""]
    if extra.get("notes"):
        lines += ["Methods left out:", ""] + [f"- {k}: {v}" for k, v in
                                               extra["notes"].items()] + [""]
    lines += ["### Verdicts against the targets", ""]
    lines += [f"- {v}" for v in verdicts(doc)] + [""]
    lines += _table1_md(doc, idx)
    lines += _table4_md(doc, idx, out)
    lines += _large_md(doc, idx)
    lines += _estimator_md(doc)
    lines += _curve_plots(doc, out)
    return "\n".join(lines) + "\n"
