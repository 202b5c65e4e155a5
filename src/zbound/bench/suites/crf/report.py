"""Report of the ``crf`` suite: measured table per corpus beside the paper's Table 1."""

from __future__ import annotations

from pathlib import Path

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
            verdict += (f"; steps: {info.get('unit_steps', 0)} unit, "
                        f"{info.get('interpolated_steps', 0)} interpolated, "
                        f"{info.get('hessian_steps', 0)} Hessian-length, "
                        f"{info['bound_steps']} by the bound")
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
                  "final objective | test accuracy | F1 | peak memory (MB) |",
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
            lines += ["", "Forward-backward (one value and gradient): " + ", ".join(
                f"{r['method']} {1e3 * r['metrics']['value_and_grad_s']:.1f} ms"
                for r in fb) + f" (speedup with 2 threads "
                f"{fb[-1]['metrics']['speedup']:.2f}x on a machine shared with other jobs)."]
        lines.append("")
    lines += ["### Paper, Table 1 (CRF columns; C++, time in s / iterations to 1e-4)", "",
              "| data set | L-BFGS | SD | CG | Bound |", "| --- | --- | --- | --- | --- |"]
    for ds, row in PAPER_TABLE1.items():
        lines.append(f"| {ds} | " + " | ".join(f"{t:g} / {k}" for t, k in row.values()) + " |")
    return "\n".join(lines) + "\n"
