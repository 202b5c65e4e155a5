"""Report of the ``crf`` suite: measured table per corpus beside the paper's Table 1."""

from __future__ import annotations

from pathlib import Path

from zbound.bench.report import num


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.1f} ms"

# Jebara & Choromanska (2012), Table 1, CRF columns: time (s) and iterations to within 1e-4
PAPER_TABLE1 = {
    "CoNLL (m=9, t=1000, d=33615)": {"LBFGS": (25661.54, 17), "SD": (93821.72, 12),
                                      "CG": (88973.93, 23), "Bound": (16445.93, 4)},
    "PennTree (m=45, t=1000, d=14175)": {"LBFGS": (62848.08, 7), "SD": (156319.31, 12),
                                         "CG": (76332.39, 18), "Bound": (27073.42, 2)},
}


def _fmt(v, spec=".3g"):
    return "-" if v is None else format(v, spec)


def _verdicts(rows, cs):
    out = []
    ref = cs["time_to_target_s"] if cs else None
    f1_ref = cs["metrics"].get("f1") if cs else None
    for r in rows:
        if r["peer"] or r["task"] != "train" or not r["method"].startswith("zbound-"):
            continue
        m = r["metrics"]
        if r["time_to_target_s"] is not None and ref:
            ratio = r["time_to_target_s"] / ref
            verdict = (f"{ratio:.2f}x CRFsuite L-BFGS's time to target "
                       f"({'meets' if ratio <= 1.0 else 'misses'} the 1.0x goal)")
        else:
            verdict = "did not reach the target within its iteration / time limit"
        f1 = m.get("f1")
        if f1 is not None and f1_ref is not None:
            verdict += f", F1 {100 * (f1 - f1_ref):+.2f} points against CRFsuite"
        info = m.get("info") or {}
        if "unit_steps" in info:
            n = sum(info.get(k, 0) for k in ("initial_steps", "unit_steps",
                                             "interpolated_steps", "bound_steps"))
            verdict += (f"; steps: {info.get('initial_steps', 0)} initial (1/||g||), "
                        f"{info.get('unit_steps', 0)} unit, "
                        f"{info.get('interpolated_steps', 0)} interpolated, "
                        f"{info['bound_steps']} of {n} by the bound")
        if "newton_steps" in info:
            verdict += (f"; {info['newton_steps']} Newton steps ({info.get('cg_products')} "
                        f"Hessian products), {info['bound_steps']} by the bound")
        out.append(f"- `{r['method']}`{' (default)' if r['default'] else ''}: {verdict}.")
    return out


def report(doc: dict, out: Path) -> str:
    recs = doc.get("records", [])
    lines = ["## CRF suite", "",
             "Same features (every attribute x label, every transition), same objective "
             "(NLL + c2 ||w||^2), target = CRFsuite L-BFGS final objective x (1 + 1e-3) for "
             "every method. Times to target are medians over alternating rounds for CRFsuite "
             "L-BFGS, zbound lbfgs-bound and zbound lbfgs (one run for the others). Timings on "
             "a shared 2-core machine are noisy.", ""]
    for ds in sorted({r["dataset"] for r in recs}):
        rows = [r for r in recs if r["dataset"] == ds and r["task"] == "train"]
        fb = [r for r in recs if r["dataset"] == ds and r["task"] == "forward-backward"]
        m0 = rows[0]["metrics"]
        lines += [f"### {ds}", "",
                  f"{m0.get('n_train')} training sequences ({m0.get('n_tokens')} tokens), "
                  f"{m0.get('n_labels')} labels, {m0.get('n_params')} parameters.", ""]
        cs = next((r for r in rows if r["method"] == "crfsuite-lbfgs"), None)
        if cs is not None and cs["metrics"].get("objective_check_rel") is not None:
            lines += [f"Objective check: CRFsuite's final weights under our objective differ "
                      f"from CRFsuite's own loss by {cs['metrics']['objective_check_rel']:.2e} "
                      "(relative).", ""]
        lines += ["| method | reached | time to target (s) | total time (s) | iterations | "
                  "final objective | test accuracy | F1 | memory increase in-process (MB) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            m = r["metrics"]
            lines.append(f"| {r['method']} | {r['reached']} | {_fmt(r['time_to_target_s'])} | "
                         f"{_fmt(m.get('total_time_s'))} | {m.get('iterations', '-')} | "
                         f"{_fmt(r['final_objective'], '.6g')} | "
                         f"{_fmt(m.get('test_accuracy'), '.4f')} | {_fmt(m.get('f1'), '.4f')} |"
                         f" {_fmt(m.get('peak_memory_mb'), '.0f')} |")
        lines += [""] + _verdicts(rows, cs)
        if fb:
            lines += ["", "Threads: one value and gradient " + ", ".join(
                f"{r['method']} {_ms(r['metrics']['value_and_grad_s'])}"
                for r in fb) + f" (2 threads: {num(fb[-1]['metrics']['speedup'], '.2f')}x the "
                "speed of one, on a 2-core machine shared with other processes)"]
            one = next((r for r in rows if r["method"] == "zbound-lbfgs-bound"), None)
            two = next((r for r in rows if r["method"] == "zbound-lbfgs-bound-2threads"), None)
            if one and two and one["time_to_target_s"] and two["time_to_target_s"]:
                lines[-1] += (f"; training to the target {one['time_to_target_s']:.2f} s with 1 "
                              f"thread, {two['time_to_target_s']:.2f} s with 2 "
                              f"({one['time_to_target_s'] / two['time_to_target_s']:.2f}x)")
            lines[-1] += "."
        mem = [r for r in recs if r["dataset"] == ds and r["task"] == "memory"]
        if mem:
            lines += ["", "Peak memory of training, each in a fresh process (above the loaded "
                      "corpus; the table's column is the increase inside the bench's process, "
                      "which reuses memory freed by earlier runs and undercounts): " + ", ".join(
                          f"{r['method']} {num(r['metrics']['peak_memory_mb'], '.0f')} MB"
                          for r in mem)
                      + "."]
        lines.append("")
    png = convergence_plot(recs, Path(out))
    if png is not None:
        lines += ["### Convergence", "",
                  "Relative gap (f - f_ref) / f_ref against seconds from the start of training "
                  "(first round; f_ref = CRFsuite L-BFGS's final objective, the dashed line is "
                  "the target 1e-3). CRFsuite's trace is its own loss per iteration (it equals "
                  "ours to ~1e-10); the library's starts after building the objective.", "",
                  f"![{png.stem}]({png.name})", ""]
    lines += ["### Paper, Table 1 (CRF columns) beside ours", "",
              "Paper: C++, time in s / iterations to within 1e-4 of the optimum (their "
              "features and data sizes). Ours: s / iterations to CRFsuite L-BFGS's objective "
              "within 0.1% (the bench's corpora and features; `bound` is Alg. 2 alone, run "
              "under the quick time limit).", "",
              "| data set | L-BFGS | SD | CG | Bound |", "| --- | --- | --- | --- | --- |"]
    for ds, row in PAPER_TABLE1.items():
        lines.append(f"| paper: {ds} | " + " | ".join(f"{t:g} / {k}" for t, k in row.values())
                     + " |")
    for ds, label in (("conll2000", "CoNLL-2000"), ("treebank", "Treebank"),
                      ("conll2002", "CoNLL-2002")):
        rows = {r["method"]: r for r in recs if r["dataset"] == ds and r["task"] == "train"}
        if not rows:
            continue

        def cell(method, rows=rows):
            r = rows.get(method)
            if r is None:
                return "-"
            it = r["metrics"].get("iterations_to_target") or r["metrics"].get("iterations", "-")
            if r["time_to_target_s"] is None:
                return f"not reached ({it} iteration{'' if it == 1 else 's'})"
            return f"{r['time_to_target_s']:.2f} / {it}"

        lines.append(f"| ours: {label} | CRFsuite {cell('crfsuite-lbfgs')}; zbound lbfgs-bound "
                     f"{cell('zbound-lbfgs-bound')} | - | - | {cell('zbound-bound')} |")
    lines += ["", "### Targets, from these numbers", ""] + _done_when(recs)
    return "\n".join(lines) + "\n"


def _done_when(recs) -> list:
    def get(ds, method):
        return next((r for r in recs if r["dataset"] == ds and r["task"] == "train"
                     and r["method"] == method), None)

    out = ["- Bound validity and exactness for trees and chains: checked by the test suite "
           "(tests/bounds/test_junction.py, tests/models/test_crf.py), not by this bench."]
    cs, zb = get("conll2000", "crfsuite-lbfgs"), get("conll2000", "zbound-lbfgs-bound")
    if cs and zb and cs["time_to_target_s"] and zb["time_to_target_s"]:
        ratio = zb["time_to_target_s"] / cs["time_to_target_s"]
        d_f1 = 100 * (zb["metrics"]["f1"] - cs["metrics"]["f1"])
        ok = ratio <= 1.0 and abs(d_f1) <= 0.5
        nb = (zb["metrics"].get("info") or {}).get("bound_steps", "?")
        out.append(f"- CoNLL-2000, default `lbfgs-bound` against CRFsuite L-BFGS: "
                   f"{ratio:.2f}x its time to target (goal <= 1.0x), F1 {d_f1:+.2f} points "
                   f"(goal within 0.5): **{'met' if ok else 'not met'}**. The steps are "
                   f"L-BFGS's; the bound took {nb} of them (it is the monotone safeguard, "
                   "not what makes it fast).")
    else:
        out.append("- CoNLL-2000 time and F1 against CRFsuite: **not met** (no time to target).")
    fb = {r["method"]: r["metrics"]["value_and_grad_s"] for r in recs
          if r["dataset"] == "conll2000" and r["task"] == "forward-backward"
          and r["metrics"].get("value_and_grad_s")}
    two = get("conll2000", "zbound-lbfgs-bound-2threads")
    if len(fb) == 2 and zb and two and zb["time_to_target_s"] and two["time_to_target_s"]:
        sp_fb = fb["n_jobs=1"] / fb["n_jobs=2"]
        sp_tr = zb["time_to_target_s"] / two["time_to_target_s"]
        out.append(f"- Forward-backward spread over the cores (an aim, not a "
                   f"target): on CoNLL-2000 2 threads run one value and gradient at {sp_fb:.2f}x "
                   f"and the training at {sp_tr:.2f}x the speed of one thread: a multi-core "
                   f"speed-up is {'shown' if min(sp_fb, sp_tr) > 1.1 else 'not shown'} in "
                   "this run (the 2 cores are shared with other processes).")
    present = sorted({r["dataset"] for r in recs})
    out.append(f"- All three corpora reported: **{'met' if len(present) == 3 else 'not met'}** "
               f"({', '.join(present)}).")
    fit, pf = get("conll2000", "zbound-lbfgs-bound"), get("conll2000", "zbound-partial_fit")
    if fit and pf and fit["metrics"].get("f1") is not None:
        d = 100 * (pf["metrics"]["f1"] - fit["metrics"]["f1"])
        mem = {r["method"]: r["metrics"]["peak_memory_mb"] for r in recs
               if r["dataset"] == "conll2000" and r["task"] == "memory"
               and r["metrics"].get("peak_memory_mb") is not None}
        if mem:
            m_txt = (f"peak memory (fresh processes) {mem.get('zbound-partial_fit', 0):.0f} MB "
                     f"streaming, {mem.get('zbound-lbfgs-bound', 0):.0f} MB `fit`, "
                     f"{mem.get('crfsuite-lbfgs', 0):.0f} MB CRFsuite L-BFGS (reported)")
        else:
            cs_mb = cs["metrics"].get("peak_memory_mb") if cs else None
            m_txt = (f"peak memory {num(pf['metrics'].get('peak_memory_mb'), '.0f')} MB "
                     f"streaming against {num(cs_mb, '.0f')} MB for CRFsuite L-BFGS (reported)")
        out.append(f"- `partial_fit` over a generator on CoNLL-2000: F1 {d:+.2f} points against "
                   f"`fit` (goal within 1): **{'met' if abs(d) <= 1.0 else 'not met'}**; "
                   + m_txt + ".")
    return out


def convergence_plot(recs, out: Path):
    """One panel per corpus: relative objective gap against seconds for every traced method;
    written to ``out/crf-convergence.png`` (None when nothing was traced)."""
    from zbound.bench.plots import Panel, Series, panel_grid

    panels = []
    for ds in sorted({r["dataset"] for r in recs}):
        rows = [r for r in recs if r["dataset"] == ds and r["task"] == "train"
                and r["metrics"].get("trace")]
        cs = next((r for r in rows if r["method"] == "crfsuite-lbfgs"), None)
        if cs is None or not cs["final_objective"]:
            continue
        f_ref = cs["final_objective"]
        series = []
        for r in rows:
            tr = r["metrics"]["trace"]
            gap = [max((f - f_ref) / abs(f_ref), 1e-7) for _, f in tr]
            series.append(Series(label=r["method"], x=[max(t, 1e-3) for t, _ in tr], y=gap))
        panels.append(Panel(title=ds, xlabel="seconds", ylabel="(f - f_ref) / f_ref",
                            series=series, logy=True, logx=True, hline=1e-3))
    if not panels:
        return None
    return panel_grid([panels], out / "crf-convergence.png", title="crf: objective against time",
                      caption="f_ref: CRFsuite L-BFGS's final objective under the shared "
                              "objective; dashed: the target, f_ref (1 + 1e-3)")
