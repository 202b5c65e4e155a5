"""Report of ``logreg-large``: Table 1 beside the paper's, the Table 4 rank sweep, time to target
on the larger data at both targets (ours against every peer), the estimator against
scikit-learn's, peak memory, verdicts against the issue's targets, and plots.

Everything is read from the records and ``extra`` of ``SUITE.json``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from zbound.bench.suites.logreg_large.config import (
    ESTIMATOR,
    PAPER_EPS,
    PAPER_RANKS,
    PAPER_SIZES,
    PAPER_TABLE1,
    PAPER_TABLE4,
    PAPER_TO_OURS,
    TARGETS,
)

#: The issue's targets.
GOALS = {
    "table1_vs_lbfgs": 0.5,     # library's best large-d method <= 0.5 x SciPy L-BFGS-B
    "large_cap": 1.0,           # default <= 1.0 x the fastest peer in every larger cell ...
    "large_good": 0.5,          # ... and <= 0.5 x in at least half of them
    "estimator_memory": 2.0,    # estimator peak memory <= 2 x scikit-learn's
}
TRACEMALLOC_NOTE = (
    "Peak memory is tracemalloc's peak during one untimed run to the loose target (Table 1: "
    "to the paper's target): Python and NumPy allocations, including any copy a method makes "
    "of the input, but not the private buffers of compiled code (SciPy's Fortran L-BFGS-B "
    "work arrays, scikit-learn's Cython scratch, glum's C++ buffers) nor the input arrays "
    "themselves, so a peer's number is a lower bound on what it uses.")


def _s(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 10:
        return f"{t:.1f}"
    if t >= 0.01:
        return f"{t:.3f}"
    return f"{t * 1e3:.2f} ms"


def _x(r: float | None) -> str:
    if r is None:
        return "-"
    if math.isinf(r):
        return "not reached"
    return f"{r:.2f}x"


def _index(records: list[dict]) -> dict[tuple[str, str, str], dict[str, dict]]:
    idx: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in records:
        idx.setdefault((r["task"], r["dataset"], r["setting"]), {})[r["method"]] = r
    return idx


def _time(r: dict | None) -> float | None:
    if r is None or not r.get("reached"):
        return None
    return r.get("time_to_target_s")


def _cell_text(r: dict | None) -> str:
    if r is None:
        return ""
    if r["metrics"].get("skipped"):
        return "skip"
    t = _time(r)
    return _s(t) if t is not None else "not reached"


def fastest(recs: dict[str, dict], peers: bool = True) -> tuple[str | None, float | None]:
    """Fastest record (peers, or the library's own methods) that reached the target."""
    best: tuple[str | None, float | None] = (None, None)
    for n, r in recs.items():
        if bool(r.get("peer")) != peers:
            continue
        t = _time(r)
        if t is not None and (best[1] is None or t < best[1]):
            best = (n, t)
    return best


# -- Table 1 and Table 4 -------------------------------------------------------------------

def table1_rows(records: list[dict]) -> list[dict[str, Any]]:
    """Per Table 1 cell: the library's best (non-estimator) method against SciPy L-BFGS-B."""
    rows = []
    for (task, dataset, setting), recs in _index(records).items():
        if task != "table1":
            continue
        lib = {n: r for n, r in recs.items() if not r["peer"] and n != ESTIMATOR}
        best, best_t = fastest(lib, peers=False)
        lb = _time(recs.get("scipy-lbfgsb"))
        ratio = best_t / lb if (best_t is not None and lb) else (math.inf if lb else None)
        fp, fp_t = fastest(recs)
        rows.append({"dataset": dataset, "setting": setting, "best": best, "best_s": best_t,
                     "lbfgs_s": lb, "ratio": ratio, "fastest_peer": fp, "fastest_peer_s": fp_t,
                     "pass": ratio is not None and ratio <= GOALS["table1_vs_lbfgs"]})
    return rows


def _table1_md(doc: dict, idx) -> list[str]:
    lines = ["## Table 1: logistic regression on SRBCT and Text", "",
             "The paper's objective (bias penalized, reg = t lambda), 90/10 split, the paper's "
             "lambda; target = SciPy L-BFGS-B's solution under the paper's termination rule "
             f"within {PAPER_EPS:g} relative. Seconds (median over starts of the median over "
             "repeats) and iterations to the target, ours beside the paper's (their 2012 C++ "
             "code and machine: compare orderings, not seconds).", ""]
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
        lines += ["| method | paper's name | seconds | iterations | paper seconds | "
                  "paper iterations | starts reached | peak MB |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        ours_to_paper = {v: k for k, v in PAPER_TO_OURS.items()}
        for n, r in recs.items():
            pn = ours_to_paper.get(n, "")
            ps, pi = paper.get(pn, (None, None))
            mm = r["metrics"]
            mem = mm.get("peak_memory_mb")
            lines.append(
                f"| {n} | {pn} | {_cell_text(r)} | "
                f"{'' if mm.get('iterations') is None else mm['iterations']} | "
                f"{'' if ps is None else ps} | {'' if pi is None else pi} | "
                f"{mm.get('n_reached', '')}/{mm.get('n_starts', '')} | "
                f"{'' if mem is None else f'{mem:.1f}'} |")
        lines.append("")
    return lines


def _table4_md(doc: dict, idx, out: Path) -> list[str]:
    sweep = doc.get("extra", {}).get("rank_sweep")
    if sweep is None:
        return []
    lines = ["## Table 4: the low-rank bound's rank k on SRBCT", ""]
    if sweep.get("skipped"):
        return lines + [f"**{sweep['skipped']}**: Table 4 was not run.", ""]
    rows = {}
    for (task, _dataset, setting), recs in idx.items():
        if task == "table4":
            rows[setting] = recs.get("bound-lowrank")
    t1 = next((recs for (task, d, _), recs in idx.items()
               if task == "table1" and d == "srbct"), {})
    lines += ["Same cell, target and starts as Table 1 (fewer starts); peers from the Table 1 "
              "cell (they do not depend on k).", "",
              "| k | bound seconds | iterations | peak MB | paper Bound | paper LBFGS | "
              "ours L-BFGS-B | paper CG | ours CG | paper SD | ours SD |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    xs, ours, paper = [], [], []
    for j, k in enumerate(PAPER_RANKS):
        r = rows.get(f"k={k}")
        if r is None:
            continue
        mm = r["metrics"]
        mem = mm.get("peak_memory_mb")
        lines.append(
            f"| {k} | {_cell_text(r)} | {mm.get('iterations')} | "
            f"{'' if mem is None else f'{mem:.1f}'} | {PAPER_TABLE4['Bound'][j]} | "
            f"{PAPER_TABLE4['LBFGS'][j]} | {_s(_time(t1.get('scipy-lbfgsb')))} | "
            f"{PAPER_TABLE4['CG'][j]} | {_s(_time(t1.get('scipy-cg')))} | "
            f"{PAPER_TABLE4['SD'][j]} | {_s(_time(t1.get('steepest')))} |")
        xs.append(k)
        ours.append(_time(r))
        paper.append(PAPER_TABLE4["Bound"][j])
    lines.append("")
    if xs:
        from zbound.bench.plots import Panel, Series, panel_grid

        series = [Series("low-rank bound (ours)", xs, ours),
                  Series("Bound (paper, 2012)", xs, paper)]
        lb = _time(t1.get("scipy-lbfgsb"))
        if lb is not None:
            series.append(Series("SciPy L-BFGS-B (ours)", xs, [lb] * len(xs)))
        path = panel_grid([[Panel("SRBCT: seconds to the Table 1 target against the rank k",
                                  "rank k", "seconds", series, logy=True, logx=True)]],
                          out / "logreg-large-rank-sweep.png",
                          caption="Missing points: the target was not reached in the budget.")
        lines += [f"![rank sweep]({path.name})", ""]
    return lines


# -- larger data -----------------------------------------------------------------------------

def large_rows(records: list[dict]) -> list[dict[str, Any]]:
    """Per larger-data cell and target: the default's time, the fastest peer, the ratio."""
    rows = []
    for (task, dataset, setting), recs in _index(records).items():
        if task != "large":
            continue
        default = next((r for r in recs.values() if r.get("default")), None)
        peer, peer_t = fastest(recs)
        t = _time(default)
        if default is None or peer_t is None:
            ratio = None
        elif t is None:
            ratio = math.inf
        else:
            ratio = t / peer_t
        m = (default or next(iter(recs.values())))["metrics"]
        rows.append({"dataset": dataset, "setting": setting, "C": m.get("C"),
                     "target": m.get("target_name"), "default": default and default["method"],
                     "default_s": t, "peer": peer, "peer_s": peer_t, "ratio": ratio})
    return rows


def estimator_rows(records: list[dict]) -> list[dict[str, Any]]:
    rows = []
    for (task, dataset, setting), recs in _index(records).items():
        est = recs.get(ESTIMATOR)
        if task != "large" or est is None:
            continue
        sk = {n: r for n, r in recs.items() if n.startswith("sklearn-")}
        best, best_t = fastest(sk)
        lb = sk.get("sklearn-lbfgs")
        mem = est["metrics"].get("peak_memory_mb")
        lb_mem = lb["metrics"].get("peak_memory_mb") if lb else None
        t = _time(est)
        rows.append({
            "dataset": dataset, "setting": setting, "est_s": t, "est_mb": mem,
            "sk_best": best, "sk_best_s": best_t, "sk_lbfgs_s": _time(lb), "sk_lbfgs_mb": lb_mem,
            "time_ratio": (t / best_t) if (t is not None and best_t) else
            (math.inf if best_t else None),
            "mem_ratio": (mem / lb_mem) if (mem is not None and lb_mem) else None})
    return rows


def verdicts(doc: dict) -> list[str]:
    """One line per target of the issue: PASS / FAIL / n/a with the numbers."""
    recs = doc["records"]
    lines = []
    t1 = table1_rows(recs)
    if t1:
        ok = all(r["pass"] for r in t1)
        detail = "; ".join(f"{r['dataset']}: {r['best']} {_s(r['best_s'])} vs L-BFGS-B "
                           f"{_s(r['lbfgs_s'])} = {_x(r['ratio'])}" for r in t1)
        lines.append(f"{'PASS' if ok else 'FAIL'}: Table 1 (SRBCT, Text): the library's best "
                     f"method <= {GOALS['table1_vs_lbfgs']}x SciPy L-BFGS-B ({detail})")
    else:
        lines.append("n/a: Table 1 (no SRBCT / Text cell ran)")
    lr = large_rows(recs)
    if lr:
        known = [r["ratio"] for r in lr if r["ratio"] is not None]
        cap_ok = len(known) == len(lr) and all(x <= GOALS["large_cap"] for x in known)
        good = sum(1 for x in known if x <= GOALS["large_good"])
        worst = max(known) if known else None
        lines.append(f"{'PASS' if cap_ok else 'FAIL'}: larger data: the default <= "
                     f"{GOALS['large_cap']}x the fastest peer in every cell at both targets "
                     f"({sum(1 for x in known if x <= GOALS['large_cap'])} of {len(lr)} "
                     f"cell-targets; worst {_x(worst)})")
        half_ok = good * 2 >= len(lr)
        lines.append(f"{'PASS' if half_ok else 'FAIL'}: larger data: the default <= "
                     f"{GOALS['large_good']}x the fastest peer in at least half of the "
                     f"cell-targets ({good} of {len(lr)})")
    else:
        lines.append("n/a: larger data (no cell ran)")
    er = estimator_rows(recs)
    if er:
        mem = [r["mem_ratio"] for r in er if r["mem_ratio"] is not None]
        mem_ok = bool(mem) and len(mem) == len(er) and all(x <= GOALS["estimator_memory"]
                                                             for x in mem)
        lines.append(f"{'PASS' if mem_ok else 'FAIL'}: BoundLogisticRegression.fit peak memory "
                     f"<= {GOALS['estimator_memory']}x LogisticRegression.fit (lbfgs) in every "
                     f"cell (worst {max(mem):.2f}x)" if mem else
                     "FAIL: estimator peak memory not measured")
        tr = [r["time_ratio"] for r in er if r["time_ratio"] is not None]
        faster = sum(1 for x in tr if x <= 1.0)
        lines.append(f"INFO: BoundLogisticRegression.fit at matched final objective is at or "
                     f"below the fastest scikit-learn solver's time in {faster} of {len(er)} "
                     f"cell-targets (worst {_x(max(tr)) if tr else '-'})")
    return lines


def _large_md(doc: dict, idx) -> list[str]:
    rows = [k for k in idx if k[0] == "large"]
    if not rows:
        return []
    methods: list[str] = []
    for k in rows:
        for n in idx[k]:
            if n not in methods:
                methods.append(n)
    lines = ["## Larger data: seconds to target", "",
             "scikit-learn's objective (sum of log-losses + 1/(2C) ||W||^2, intercepts "
             "unpenalized), from 0; targets 1e-3 (loose) and 1e-8 (tight) relative to the best "
             "objective found. scikit-learn, glum and the estimator get the loosest tol that "
             "reaches the target (whole fit timed). 'not reached': missed within the time budget "
             f"({doc.get('extra', {}).get('config', {}).get('time_budget_s')} s per method per "
             "cell); 'skip': not run (reason in the record). Ratio = the default / the "
             "fastest peer.", ""]
    for tname in TARGETS:
        lines += [f"### {tname} target ({TARGETS[tname]:g} relative)", "",
                  "| cell | " + " | ".join(methods) + " | fastest peer | ratio |",
                  "| --- " * (len(methods) + 3) + "|"]
        for k in rows:
            recs = idx[k]
            any_r = next(iter(recs.values()))
            if any_r["metrics"].get("target_name") != tname:
                continue
            peer, peer_t = fastest(recs)
            default = next((r for r in recs.values() if r.get("default")), None)
            t = _time(default)
            ratio = (t / peer_t) if (t is not None and peer_t) else (
                math.inf if peer_t else None)
            label = f"{k[1]} C={any_r['metrics'].get('C'):g}"
            lines.append(f"| {label} | " + " | ".join(_cell_text(recs.get(n)) for n in methods)
                         + f" | {peer or '-'} {_s(peer_t) if peer else ''} | {_x(ratio)} |")
        lines.append("")
    lines += ["### Iterations to the tight target (median; fits: the fit's n_iter_)", "",
              "| cell | " + " | ".join(methods) + " |", "| --- " * (len(methods) + 1) + "|"]
    for k in rows:
        recs = idx[k]
        any_r = next(iter(recs.values()))
        if any_r["metrics"].get("target_name") != "tight":
            continue
        cells = []
        for n in methods:
            r = recs.get(n)
            it = None if r is None else r["metrics"].get("iterations")
            cells.append("" if it is None else (str(it) if r["reached"] else f"({it})"))
        lines.append(f"| {k[1]} C={any_r['metrics'].get('C'):g} | " + " | ".join(cells) + " |")
    lines += ["", "(In parentheses: iterations done when the method stopped without reaching "
              "the target.)", "", "## Peak memory (MB)", "", TRACEMALLOC_NOTE, "",
              "| cell | " + " | ".join(methods) + " |", "| --- " * (len(methods) + 1) + "|"]
    for k in rows:
        recs = idx[k]
        any_r = next(iter(recs.values()))
        if any_r["metrics"].get("target_name") != "loose":
            continue
        cells = []
        for n in methods:
            r = recs.get(n)
            mem = None if r is None else r["metrics"].get("peak_memory_mb")
            cells.append("" if mem is None else f"{mem:.1f}")
        lines.append(f"| {k[1]} C={any_r['metrics'].get('C'):g} | " + " | ".join(cells) + " |")
    lines.append("")
    er = estimator_rows(doc["records"])
    if er:
        lines += ["## BoundLogisticRegression.fit against LogisticRegression.fit", "",
                  "Both at matched final objective (the loosest tol that reaches the target).",
                  "", "| cell | ours s | fastest sklearn | its s | time ratio | sklearn-lbfgs s "
                  "| ours MB | sklearn-lbfgs MB | memory ratio |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        def mb(x):
            return "-" if x is None else f"{x:.1f}"

        for r in er:
            lines.append(
                f"| {r['dataset']} {r['setting']} | {_s(r['est_s'])} | {r['sk_best'] or '-'} | "
                f"{_s(r['sk_best_s'])} | {_x(r['time_ratio'])} | {_s(r['sk_lbfgs_s'])} | "
                f"{mb(r['est_mb'])} | {mb(r['sk_lbfgs_mb'])} | {_x(r['mem_ratio'])} |")
        lines.append("")
    return lines


def _curve_plots(doc: dict, out: Path) -> list[str]:
    from zbound.bench.plots import Panel, Series, panel_grid

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
                          caption="Lines: traces of methods that stop at a target; markers: "
                                  "scikit-learn / glum / estimator fits at their chosen tol.")
        lines += [f"![{dataset} gap vs time]({path.name})", ""]
    return lines


def report(doc: dict, out) -> str:
    out = Path(out)
    idx = _index(doc["records"])
    extra = doc.get("extra", {})
    lines = ["## logreg-large", ""]
    if doc.get("quick"):
        slow = (extra.get("config") or {}).get("slow_unit_s")
        once = (f"; a method whose first repeat took over {slow:g} s is timed once (the "
                "records' `repeats`)") if slow is not None else ""
        lines += ["**Quick run**: fewer starts, repeats and C values, smaller budgets, KMNIST "
                  f"and the synthetic set subsampled (see the data notes){once}. Read it as a "
                  "smoke test of the full run's numbers.", ""]
    if extra.get("datasets"):
        lines += ["Data:", ""] + [f"- {k}: {v}" for k, v in extra["datasets"].items()] + [""]
    if extra.get("skipped"):
        lines += ["Skipped data sets:", ""] + [f"- {k}: {v}" for k, v in
                                                extra["skipped"].items()] + [""]
    if extra.get("notes"):
        lines += ["Methods left out:", ""] + [f"- {k}: {v}" for k, v in
                                               extra["notes"].items()] + [""]
    lines += ["### Verdicts against the issue's targets", ""]
    lines += [f"- {v}" for v in verdicts(doc)] + [""]
    lines += _table1_md(doc, idx)
    lines += _table4_md(doc, idx, out)
    lines += _large_md(doc, idx)
    lines += _curve_plots(doc, out)
    return "\n".join(lines) + "\n"
