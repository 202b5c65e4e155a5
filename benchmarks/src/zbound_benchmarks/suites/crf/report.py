"""Report of the ``crf`` suite: measured table per corpus beside the paper's Table 1."""

from __future__ import annotations

from pathlib import Path

from zbound_benchmarks.report import num, prose, table


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.1f} ms"

# Jebara & Choromanska (2012), Table 1, CRF columns: time (s) and iterations to within 1e-4
PAPER_TABLE1 = {
    "CoNLL (m=9, t=1000, d=33615)": {"LBFGS": (25661.54, 17), "SD": (93821.72, 12),
                                      "CG": (88973.93, 23), "Bound": (16445.93, 4)},
    "PennTree (m=45, t=1000, d=14175)": {"LBFGS": (62848.08, 7), "SD": (156319.31, 12),
                                         "CG": (76332.39, 18), "Bound": (27073.42, 2)},
}


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
    lines = [prose("crf", "intro"), ""]
    for ds in sorted({r["dataset"] for r in recs}):
        rows = [r for r in recs if r["dataset"] == ds and r["task"] == "train"]
        fb = [r for r in recs if r["dataset"] == ds and r["task"] == "forward-backward"]
        m0 = rows[0]["metrics"]
        lines += [f"### {ds}", "", prose("crf", "corpus", **{k: m0.get(k) for k in (
            "n_train", "n_tokens", "n_labels", "n_params")}), ""]
        cs = next((r for r in rows if r["method"] == "crfsuite-lbfgs"), None)
        if cs is not None and cs["metrics"].get("objective_check_rel") is not None:
            lines += [prose("crf", "objective-check", rel=cs["metrics"]["objective_check_rel"]),
                      ""]
        lines += table(("method", "reached", "time to target (s)", "total time (s)",
                        "iterations", "final objective", "test accuracy", "F1",
                        "memory increase in-process (MB)"),
                       [(r["method"], r["reached"], num(r["time_to_target_s"]),
                         num(r["metrics"].get("total_time_s")),
                         r["metrics"].get("iterations", "-"), num(r["final_objective"], ".6g"),
                         num(r["metrics"].get("test_accuracy"), ".4f"),
                         num(r["metrics"].get("f1"), ".4f"),
                         num(r["metrics"].get("peak_memory_mb"), ".0f")) for r in rows])
        lines += [""] + _verdicts(rows, cs)
        if fb:
            lines += ["", prose("crf", "threads", each=", ".join(
                f"{r['method']} {_ms(r['metrics']['value_and_grad_s'])}" for r in fb),
                speedup=num(fb[-1]["metrics"]["speedup"], ".2f"))]
            one = next((r for r in rows if r["method"] == "zbound-lbfgs-bound"), None)
            two = next((r for r in rows if r["method"] == "zbound-lbfgs-bound-2threads"), None)
            if one and two and one["time_to_target_s"] and two["time_to_target_s"]:
                t1, t2 = one["time_to_target_s"], two["time_to_target_s"]
                lines[-1] += prose("crf", "threads-training", one=t1, two=t2, ratio=t1 / t2)
            lines[-1] += "."
        mem = [r for r in recs if r["dataset"] == ds and r["task"] == "memory"]
        if mem:
            lines += ["", prose("crf", "memory", each=", ".join(
                f"{r['method']} {num(r['metrics']['peak_memory_mb'], '.0f')} MB" for r in mem))]
            rt = [r["metrics"]["kernel_runtime_mb"] for r in mem
                  if r["metrics"].get("kernel_runtime_mb")]
            if rt:
                lines[-1] += prose("crf", "kernel-runtime", mb=max(rt))
        lines.append("")
    png = convergence_plot(recs, Path(out))
    if png is not None:
        lines += [prose("crf", "convergence", stem=png.stem, name=png.name), ""]
    paper = [(f"paper: {ds}", *(f"{t:g} / {k}" for t, k in row.values()))
             for ds, row in PAPER_TABLE1.items()]
    for ds, label in (("conll2000", "CoNLL-2000"), ("treebank", "Treebank"),
                      ("conll2002", "CoNLL-2002")):
        rows = {r["method"]: r for r in recs if r["dataset"] == ds and r["task"] == "train"}
        if rows:
            paper.append((f"ours: {label}", f"CRFsuite {_paper_cell(rows, 'crfsuite-lbfgs')}; "
                          f"zbound lbfgs-bound {_paper_cell(rows, 'zbound-lbfgs-bound')}", "-",
                          "-", _paper_cell(rows, "zbound-bound")))
    lines += [prose("crf", "paper"), ""]
    lines += table(("data set", "L-BFGS", "SD", "CG", "Bound"), paper)
    lines += ["", "### Targets, from these numbers", ""] + _done_when(recs)
    return "\n".join(lines) + "\n"


def _paper_cell(rows, method):
    r = rows.get(method)
    if r is None:
        return "-"
    it = r["metrics"].get("iterations_to_target") or r["metrics"].get("iterations", "-")
    if r["time_to_target_s"] is None:
        return f"not reached ({it} iteration{'' if it == 1 else 's'})"
    return f"{r['time_to_target_s']:.2f} / {it}"


def _done_when(recs) -> list:
    def get(ds, method):
        return next((r for r in recs if r["dataset"] == ds and r["task"] == "train"
                     and r["method"] == method), None)

    out = [prose("crf", "validity")]
    cs, zb = get("conll2000", "crfsuite-lbfgs"), get("conll2000", "zbound-lbfgs-bound")
    if cs and zb and cs["time_to_target_s"] and zb["time_to_target_s"]:
        ratio = zb["time_to_target_s"] / cs["time_to_target_s"]
        d_f1 = 100 * (zb["metrics"]["f1"] - cs["metrics"]["f1"])
        ok = ratio <= 1.0 and abs(d_f1) <= 0.5
        out.append(prose("crf", "conll-verdict", ratio=ratio, d_f1=d_f1,
                         met="met" if ok else "not met",
                         nb=(zb["metrics"].get("info") or {}).get("bound_steps", "?")))
    else:
        out.append("- CoNLL-2000 time and F1 against CRFsuite: **not met** (no time to target).")
    fb = {r["method"]: r["metrics"]["value_and_grad_s"] for r in recs
          if r["dataset"] == "conll2000" and r["task"] == "forward-backward"
          and r["metrics"].get("value_and_grad_s")}
    two = get("conll2000", "zbound-lbfgs-bound-2threads")
    if len(fb) == 2 and zb and two and zb["time_to_target_s"] and two["time_to_target_s"]:
        sp_fb = fb["n_jobs=1"] / fb["n_jobs=2"]
        sp_tr = zb["time_to_target_s"] / two["time_to_target_s"]
        out.append(prose("crf", "cores", sp_fb=sp_fb, sp_tr=sp_tr,
                         shown="shown" if min(sp_fb, sp_tr) > 1.1 else "not shown"))
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
            m_txt = prose("crf", "memory-fresh", stream=mem.get("zbound-partial_fit", 0),
                          fit=mem.get("zbound-lbfgs-bound", 0),
                          crfsuite=mem.get("crfsuite-lbfgs", 0))
        else:
            cs_mb = cs["metrics"].get("peak_memory_mb") if cs else None
            m_txt = prose("crf", "memory-inprocess",
                          stream=num(pf["metrics"].get("peak_memory_mb"), ".0f"),
                          crfsuite=num(cs_mb, ".0f"))
        out.append(prose("crf", "partial-fit", d=d, met="met" if abs(d) <= 1.0 else "not met",
                         memory=m_txt))
    return out


def convergence_plot(recs, out: Path):
    """One panel per corpus: relative objective gap against seconds for every traced method;
    written to ``out/crf-convergence.png`` (None when nothing was traced)."""
    from zbound_benchmarks.plots import Panel, Series, panel_grid

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
