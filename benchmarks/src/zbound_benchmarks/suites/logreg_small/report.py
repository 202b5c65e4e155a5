"""Report of ``logreg-small``: Table 3 next to the paper's, the default solver's time ratios and
their verdicts, SQUAREM's bound-evaluation factors, the paper's ranking, and convergence plots.

Everything is read from the records (``SUITE.json``): numbers of a cell (lambda, C, reg, t, d,
n_classes) come from each record's ``metrics``, never from parsing the setting string.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from zbound_benchmarks.report import by_cell, fastest, prose, table
from zbound_benchmarks.suites.logreg import START_SCALE
from zbound_benchmarks.suites.logreg_small.config import (
    LAMBDAS,
    REL_TARGET,
    SQUAREM_FACTOR,
    SQUAREM_MIN_BOUND_EVALS,
    TABLE3_SETS,
)

#: Supplement Table 3 of Jebara & Choromanska (2012): seconds to reach BFGS's solution, averaged
#: over ten random starts, per (data set, lambda). Their machine and code, for orientation only.
PAPER_TABLE3: dict[str, dict[tuple[str, float], float]] = {
    "BFGS": dict(zip([(d, lam) for d in TABLE3_SETS for lam in LAMBDAS],
                     [1.90, 0.89, 2.45, 3.14, 2.00, 1.60, 4.09, 1.03, 1.90, 5.62, 2.88, 3.28,
                      2.63, 2.01, 1.49])),
    "SD": dict(zip([(d, lam) for d in TABLE3_SETS for lam in LAMBDAS],
                   [1.74, 0.92, 1.60, 2.18, 6.17, 5.83, 1.92, 0.64, 0.56, 12.04, 1.27, 1.94,
                    2.68, 2.49, 1.54])),
    "CG": dict(zip([(d, lam) for d in TABLE3_SETS for lam in LAMBDAS],
                   [0.78, 0.83, 0.85, 0.70, 0.67, 0.83, 0.65, 0.64, 0.72, 1.36, 1.21, 1.23,
                    0.48, 0.55, 0.43])),
    "Newton": dict(zip([(d, lam) for d in TABLE3_SETS for lam in LAMBDAS],
                       [0.31, 0.25, 0.22, 0.43, 0.37, 0.35, 0.39, 0.34, 0.32, 0.92, 0.63, 0.60,
                        0.35, 0.26, 0.20])),
    "Bound": dict(zip([(d, lam) for d in TABLE3_SETS for lam in LAMBDAS],
                      [0.01, 0.01, 0.01, 0.07, 0.04, 0.04, 0.07, 0.02, 0.02, 0.16, 0.09, 0.07,
                       0.03, 0.03, 0.03])),
}
#: The paper's method -> our record of the same algorithm.
PAPER_TO_OURS = {"BFGS": "scipy-bfgs", "SD": "steepest", "CG": "scipy-cg", "Newton": "newton",
                 "Bound": "bound"}

#: Targets for the default solver's time relative to the fastest peer: ratio <= ``ratio`` in
#: ``min_cells`` of the full grid's ``grid`` cells (on a smaller run, the same share of the
#: cells present, rounded up), and never above ``cap``.
TARGETS = {
    "table3": {"ratio": 0.5, "min_cells": 12, "grid": 15, "cap": 1.0},
    "weak-l2": {"ratio": 1.0, "min_cells": 8, "grid": 12, "cap": 2.0},
}
#: Fewest cells on which a share target is decided: below it one cell moves the share by
#: more than 20 points, and the verdict says the run is too small to decide.
MIN_DECIDED_CELLS = 5


def _fmt_s(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 1:
        return f"{t:.2f}"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.0f} us"


def _fmt_tol(x: float | None) -> str:
    return "-" if x is None else f"{x:.0e}"


def _fmt_num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def _cell_value(recs: dict[str, dict], name: str) -> Any:
    """A number of the cell (``lambda``, ``C``, ``reg``, ...) from its records' metrics, where
    ``run_cell`` stores it; None if no record has it."""
    for r in recs.values():
        value = r.get("metrics", {}).get(name)
        if value is not None:
            return value
    return None


#: Peers that are other projects' code (the rest -- steepest descent, Newton -- are the
#: library's own baselines on the same model).
EXTERNAL_PREFIXES = ("scipy-", "sklearn-")


def ratio_rows(records: list[dict], task: str) -> list[dict[str, Any]]:
    """Per cell of ``task``: default's time, fastest peer and their ratio."""
    rows = []
    for (tk, dataset, setting), recs in by_cell(records).items():
        if tk != task:
            continue
        default = next((r for r in recs.values() if r.get("default")), None)
        peer, peer_t = fastest(recs)
        ext, ext_t = fastest(recs, keep=lambda n: n.startswith(EXTERNAL_PREFIXES))
        t = default.get("time_to_target_s") if default else None
        ratio = (t / peer_t) if (t is not None and peer_t) else None
        ext_ratio = (t / ext_t) if (t is not None and ext_t) else None
        if default is not None and not default.get("reached"):
            ratio = ext_ratio = math.inf
        rows.append({"dataset": dataset, "setting": setting,
                     "default": default["method"] if default else None, "default_s": t,
                     "peer": peer, "peer_s": peer_t, "ratio": ratio,
                     "external_peer": ext, "external_s": ext_t, "external_ratio": ext_ratio})
    return rows


def ratio_verdict(rows: list[dict], task: str) -> dict[str, Any]:
    """Counts on the cells present: ``needed`` is the target's share of them (rounded up);
    ``decided`` is False on a run of fewer than ``MIN_DECIDED_CELLS`` cells (then ``pass``
    says how this run came out, not whether the target holds)."""
    tg = TARGETS[task]
    ratios = [r["ratio"] for r in rows]
    known = [x for x in ratios if x is not None]
    good = sum(1 for x in known if x <= tg["ratio"])
    worst = max(known) if known else None
    cells = len(rows)
    needed = math.ceil(tg["min_cells"] * cells / tg["grid"] - 1e-9)
    ok = bool(rows) and good >= needed and worst is not None and worst <= tg["cap"] \
        and len(known) == len(rows)
    return {"cells": cells, "good": good, "worst": worst, "pass": ok, "needed": needed,
            "decided": cells >= min(MIN_DECIDED_CELLS, tg["grid"]), **tg}


def squarem_rows(records: list[dict]) -> list[dict[str, Any]]:
    rows = []
    for (task, dataset, setting), recs in by_cell(records).items():
        b, s = recs.get("bound"), recs.get("squarem")
        if b is None or s is None:
            continue
        be = b["metrics"].get("bound_evaluations")
        se = s["metrics"].get("bound_evaluations")
        applies = (be is not None and be > SQUAREM_MIN_BOUND_EVALS) or not b.get("reached")
        factor = (be / se) if (be and se) else None
        check = b["metrics"].get("count_check")
        lower = bool(s.get("reached")) and not b.get("reached")
        ok = None
        if check is not None:
            # untimed re-run of plain Alg. 2 up to 5x SQUAREM's count (see squarem_count_check)
            cs = check["starts"]
            factor = statistics.median(r["factor"] for r in cs)
            be = int(statistics.median(r["bound_evaluations"] for r in cs))
            se = int(statistics.median(r["squarem_evaluations"] for r in cs))
            lower = not all(r["exact"] for r in cs)
            applies = be > SQUAREM_MIN_BOUND_EVALS or not all(r["reached"] for r in cs)
            ok = {"pass": True, "fail": False}.get(check["verdict"]) if applies else None
        elif applies:
            ok = bool(s.get("reached")) and factor is not None and factor >= SQUAREM_FACTOR
            if not ok and lower:
                # plain Alg. 2 was cut off by the budget: its count, and so the factor, is only
                # a lower bound; below 5x that decides nothing
                ok = None
        rows.append({"task": task, "dataset": dataset, "setting": setting, "bound": be,
                     "factor_is_lower_bound": lower,
                     "bound_reached": b.get("reached") or (
                         check is not None and all(r["reached"] for r in check["starts"])),
                     "squarem": se, "squarem_reached": s.get("reached") or (
                         check is not None and all(r["squarem_reached"] for r in check["starts"])),
                     "factor": factor,
                     "applies": applies, "pass": ok,
                     "count_check": check is not None})
    return rows


def ranking_rows(records: list[dict]) -> list[dict[str, Any]]:
    """The paper's five methods in our run, ordered by time, and whether its ranking holds."""
    rows = []
    for (task, dataset, setting), recs in by_cell(records).items():
        if task != "table3":
            continue
        times = {}
        for paper, ours in PAPER_TO_OURS.items():
            r = recs.get(ours)
            if r is not None:
                t = r.get("time_to_target_s")
                times[paper] = t if (r.get("reached") and t is not None) else math.inf
        if len(times) < len(PAPER_TO_OURS):
            continue
        order = sorted(times, key=times.get)
        bound_first = order[0] == "Bound"
        newton_second = times["Newton"] < min(times["CG"], times["BFGS"], times["SD"])
        cg_before = times["CG"] < min(times["BFGS"], times["SD"])
        rows.append({"dataset": dataset, "setting": setting,
                     "lambda": _cell_value(recs, "lambda"), "order": order, "times": times,
                     "bound_first": bound_first, "newton_before_cg": newton_second,
                     "cg_before_bfgs_sd": cg_before,
                     "holds": bound_first and newton_second and cg_before})
    return rows


def _yes(b: bool | None) -> str:
    return "-" if b is None else ("yes" if b else "**no**")


def _ratio_text(x):
    return "-" if x is None else ("not reached" if math.isinf(x) else f"{x:.2f}")


def report(doc: dict[str, Any], out: Path) -> str:
    """Markdown sections of ``logreg-small.md``; writes the convergence PNGs into ``out``."""
    records = doc.get("records", [])
    extra = doc.get("extra", {})
    cfgx = extra.get("config", {})
    idx = by_cell(records)
    default = next((r["method"] for r in records if r.get("default")), cfgx.get("default_method"))
    lines = [prose("logreg-small", "what-was-run", rel=REL_TARGET, scale=START_SCALE,
                   default=default, **{k: cfgx.get(k) for k in (
                       "starts_table3", "starts_weak", "repeats")}), ""]
    refs = extra.get("references", {})
    if refs:
        worst = max(r.get("bfgs_newton_rel_diff", 0.0) or 0.0 for r in refs.values())
        lines += [prose("logreg-small", "references", worst=worst), ""]
    lines += _costs(extra.get("eval_costs", {}))
    lines += _table3(idx)
    for task, title in (("table3", "Table 3 regime"), ("weak-l2", "weak regularization")):
        lines += _all_methods(idx, task, title, default)
    for task, title in (("table3", "Table 3 regime"), ("weak-l2", "weak regime")):
        lines += _ratios(records, task, title)
    lines += _squarem(squarem_rows(records))
    lines += _ranking(ranking_rows(records))
    curves = extra.get("curves", {})
    files = convergence_plots(curves, Path(out)) if curves else []
    if files:
        lines += [prose("logreg-small", "convergence"), ""]
        lines += [f"![{f.stem}]({f.name})" for f in files] + [""]
    return "\n".join(lines)


def _costs(costs: dict) -> list[str]:
    if not costs:
        return []
    rows = []
    for d, c in costs.items():
        ratio = c["bound"] / c["value_and_grad"] if c.get("value_and_grad") else None
        rows.append((d, f"{c['shape'][0]} x {c['shape'][1]}, {c['n_classes']}",
                     *(_fmt_s(c.get(k)) for k in ("construct", "value_and_grad",
                                                  "value_grad_hessian", "hessian_dense",
                                                  "bound")),
                     "-" if ratio is None else f"{ratio:.0f}x"))
    return [prose("logreg-small", "eval-costs"), ""] + table(
        ("data", "t x d, classes", "model", "value+grad", "+Hessian", "dense Hessian",
         "bound (Alg. 1)", "bound / (value+grad)"), rows) + [""]


def _table3(idx) -> list[str]:
    t3_keys = [k for k in idx if k[0] == "table3"]
    if not t3_keys:
        return []
    rows = []
    for key in t3_keys:
        d, lam = key[1], _cell_value(idx[key], "lambda")
        cells = []
        for p, ours in PAPER_TO_OURS.items():
            paper = PAPER_TABLE3[p].get((d, lam))
            r = idx[key].get(ours)
            cells += [f"{paper:.2f}" if paper is not None else "-",
                      _fmt_s(r.get("time_to_target_s")) if r else "n/a"]
        rows.append((d, _fmt_num(lam), *cells))
    return [prose("logreg-small", "table3"), ""] + table(
        ("data", "lambda", *(f"{p} {who}" for p in PAPER_TO_OURS for who in ("paper", "ours"))),
        rows) + [""]


def _all_methods(idx, task: str, title: str, default) -> list[str]:
    keys = [k for k in idx if k[0] == task]
    if not keys:
        return []
    methods = list(dict.fromkeys(m for k in keys for m in idx[k]))
    lib = [m for m in methods if not idx[keys[0]].get(m, {}).get("peer", False)]
    methods = lib + [m for m in methods if m not in lib]

    def cell(r):
        if r is None:
            return "n/a"
        t = _fmt_s(r.get("time_to_target_s")) if r.get("reached") else "not reached"
        return f"{t} ({r['metrics'].get('iterations')})"

    lines = [f"## All methods, {title}: time to target (median iterations)", ""] + table(
        ("data", "setting", *(f"{m}{' (default)' if m == default else ''}" for m in methods)),
        [(k[1], k[2], *(cell(idx[k].get(m)) for m in methods)) for k in keys]) + [""]
    sk = [m for m in methods if m.startswith("sklearn-")]
    if sk:
        lines += ["scikit-learn tol chosen per cell (loosest that reaches the target): "
                  + "; ".join(f"{k[1]} {k[2]}: " + ", ".join(
                      f"{m.removeprefix('sklearn-')} "
                      f"{_fmt_tol(idx[k][m]['metrics'].get('tol'))}"
                      + ("" if idx[k][m].get("reached") else " (never)")
                      for m in sk if m in idx[k]) for k in keys), ""]
    return lines


def _ratios(records, task: str, title: str) -> list[str]:
    rows = ratio_rows(records, task)
    if not rows:
        return []
    v = ratio_verdict(rows, task)
    target = prose("logreg-small", "ratio-target", **{k: v[k] for k in (
        "ratio", "min_cells", "grid", "cap")})
    if len(rows) < v["grid"]:
        target += prose("logreg-small", "ratio-share", cells=len(rows), needed=v["needed"])
    lines = [f"## Default solver vs fastest peer, {title}", "", target, ""] + table(
        ("data", "setting", "default (s)", "fastest peer", "peer (s)", "ratio",
         f"<= {v['ratio']:g}", f"<= {v['cap']:g}", "fastest SciPy/sklearn", "its (s)",
         "ratio to it"),
        [(r["dataset"], r["setting"], _fmt_s(r["default_s"]), r["peer"], _fmt_s(r["peer_s"]),
          _ratio_text(x), _yes(None if x is None else x <= v["ratio"]),
          _yes(None if x is None else x <= v["cap"]), r["external_peer"],
          _fmt_s(r["external_s"]), _ratio_text(r["external_ratio"]))
         for r in rows for x in [r["ratio"]]]) + [""]
    word = ("PASS" if v["pass"] else "FAIL") if v["decided"] else prose(
        "logreg-small", "not-decided", cells=v["cells"], outcome="pass" if v["pass"] else "fail")
    lines.append(prose("logreg-small", "ratio-verdict", word=word, ratio=v["ratio"],
                       good=v["good"], cells=v["cells"], needed=v["needed"], cap=v["cap"],
                       worst="-" if v["worst"] is None else f"{v['worst']:.2f}"))
    fastest: dict[str, int] = {}
    for r in rows:
        if r["peer"]:
            fastest[r["peer"]] = fastest.get(r["peer"], 0) + 1
    lines.append("Fastest peer by cells: " + ", ".join(
        f"{k} {n}" for k, n in sorted(fastest.items(), key=lambda kv: -kv[1])) + ".")
    ext = [r["external_ratio"] for r in rows if r["external_ratio"] is not None]
    if ext:
        lines.append(prose("logreg-small", "external", lo=min(ext), hi=max(ext),
                           half=sum(1 for x in ext if x <= 0.5), n=len(ext),
                           one=sum(1 for x in ext if x <= 1.0)))
    return lines + [""]


def _squarem(sq: list[dict]) -> list[str]:
    if not sq:
        return []
    rows = []
    for r in sq:
        be = f"{r['bound']}" + ("" if r["bound_reached"] else " (not reached)")
        if r["count_check"]:
            be = (f">= {r['bound']} (stopped at {SQUAREM_FACTOR:g}x SQUAREM, target not "
                  "reached)" if r["factor_is_lower_bound"] else f"{r['bound']}") + " [1]"
        se = f"{r['squarem']}" + ("" if r["squarem_reached"] else " (not reached)")
        fac = "-" if r["factor"] is None else f"{r['factor']:.1f}"
        if r["factor"] is not None and r["factor_is_lower_bound"]:
            fac = ">= " + fac
        verdict = _yes(r["pass"])
        if r["applies"] and r["pass"] is None:
            verdict = "undetermined"
        rows.append((r["task"], r["dataset"], r["setting"], be, se, fac, _yes(r["applies"]),
                     verdict))
    lines = [prose("logreg-small", "squarem", factor=SQUAREM_FACTOR,
                   min_evals=SQUAREM_MIN_BOUND_EVALS), ""] + table(
        ("task", "data", "setting", "bound evals (Alg. 2)", "SQUAREM evals", "factor",
         "target applies", "pass"), rows)
    applies = [r for r in sq if r["applies"]]
    n_ok = sum(1 for r in applies if r["pass"])
    n_fail = sum(1 for r in applies if r["pass"] is False)
    n_open = len(applies) - n_ok - n_fail
    word = "FAIL" if n_fail else ("UNDETERMINED" if n_open else "PASS")
    lines += ["", f"**{word}**: passes in {n_ok} of {len(applies)} cells where the target "
              f"applies, fails in {n_fail}"
              + (prose("logreg-small", "squarem-open", n=n_open) if n_open else "") + "."]
    if any(r["count_check"] for r in sq):
        lines += ["", prose("logreg-small", "squarem-note", factor=SQUAREM_FACTOR)]
    return lines + [""]


def _ranking(rk: list[dict]) -> list[str]:
    if not rk:
        return []
    lines = [prose("logreg-small", "ranking"), ""] + table(
        ("data", "lambda", "our order (fastest first)", "Bound first",
         "Newton before CG/BFGS/SD", "CG before BFGS/SD"),
        [(r["dataset"], _fmt_num(r["lambda"]), " < ".join(r["order"]), _yes(r["bound_first"]),
          _yes(r["newton_before_cg"]), _yes(r["cg_before_bfgs_sd"])) for r in rk])
    lines += ["", prose("logreg-small", "plainly", n=len(rk),
                        nb=sum(r["bound_first"] for r in rk),
                        nn=sum(r["newton_before_cg"] for r in rk),
                        nc=sum(r["cg_before_bfgs_sd"] for r in rk),
                        nh=sum(r["holds"] for r in rk))]
    not_first = [r for r in rk if not r["bound_first"]]
    if not_first:
        lines.append("Where plain Alg. 2 is not fastest: " + "; ".join(
            f"{r['dataset']} {r['setting']} ({r['order'][0]} fastest, Alg. 2 rank "
            f"{r['order'].index('Bound') + 1} of 5)" for r in not_first) + ".")
    return lines + [""]


def convergence_plots(curves: dict[str, Any], out: Path) -> list[Path]:
    """One PNG per (task, data set): rows = settings, columns = gap vs seconds / vs iterations."""
    from zbound_benchmarks.plots import Panel, Series, panel_grid

    groups: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    for c in curves.values():
        groups.setdefault((c["task"], c["dataset"]), []).append((c["setting"], c))
    files = []
    for (task, dataset), items in groups.items():
        rows = []
        for setting, c in items:
            floor = max(abs(c.get("f_star") or 1.0), 1.0) * 1e-13
            pair = []
            for xkey, xlabel in (("seconds", "seconds"), ("iteration", "iterations")):
                series = []
                for m, cur in c["methods"].items():
                    gap = [max(g, floor) if g is not None else None for g in cur["gap"]]
                    series.append(Series(label=m, x=cur[xkey], y=gap,
                                         marker_only=bool(cur.get("point"))))
                pair.append(Panel(title=f"{dataset} {setting}", xlabel=xlabel,
                                  ylabel="f(θ) − f*", series=series, logy=True,
                                  logx=(xkey == "seconds"),
                                  hline=c.get("target_gap")))
            rows.append(pair)
        path = out / f"logreg-small-{task}-{dataset}.png"
        panel_grid(rows, path, title=f"logreg-small {task}: {dataset}",
                   caption=prose("logreg-small", "caption"))
        files.append(path)
    return files
