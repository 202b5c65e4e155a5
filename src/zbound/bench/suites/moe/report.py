"""Report of the ``moe`` suite: tables, the verdicts on the paper's claims, Figs. 1-3
analogues."""

from __future__ import annotations

from pathlib import Path

from zbound.bench.plots import Panel, Series, panel_grid
from zbound.bench.suites.moe.runs import UNSTABLE_RISE

PAPER = {"em": (0.792, 0.801), "gradient-em": (0.657, 1.30), "gd": (0.619, 1.33),
         "single-original": 0.832, "single-inverted": 0.102}
LABELS = {"em": "EM (bound M-steps)", "em-inner-gd": "EM (inner GD, paper)",
          "gradient-em": "Gradient EM", "gd": "GD", "adam": "Adam"}


def _fmt(x, spec=".3g"):
    if x is None:
        return "-"
    if isinstance(x, list | tuple):
        return ", ".join(_fmt(v, spec) for v in x)
    return format(x, spec)


def _known(*values) -> bool:
    """Whether every value was measured (a record of a short or interrupted run may lack it)."""
    return all(v is not None for v in values)


def _incomplete(title: str, s: dict, recs: dict) -> list[str] | None:
    """A note instead of the section where the run stopped before every method's record."""
    missing = sorted(set(s.get("methods", {})) - set(recs))
    if not missing:
        return None
    return [title, "", f"Incomplete: no records for {', '.join(missing)} (the run stopped "
            "before them); tables and claims not drawn.", ""]


def _edge_note(s: dict) -> list[str]:
    edge = s.get("grid_edge") or {}
    if not edge:
        return []
    return ["", "Tuned at the edge of the step-size grid (a better step may lie beyond it): "
            + ", ".join(f"{LABELS[m]} ({_fmt(v)})" for m, v in edge.items()) + "."]


def _synthetic(name: str, s: dict, recs: dict, out: Path) -> list[str]:
    T = s["iters"]
    lines = [f"### Synthetic {name} (d = 10, ||beta*|| = ||w*|| = 4, n = 1000, unit noise, "
             f"{s['instances']} instances, {T} iterations)", "",
             "Target: each instance's GD objective after its last iteration. Median over "
             "instances; step sizes tuned on a separate instance on one grid "
             "(final objective).", "",
             "| method | step size | iterations to GD's final objective | seconds to it | "
             "reached | final gap L - L^ | L(theta_T) - L(theta*) | beta error | w error |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    note = _incomplete(lines[0], s, recs)
    if note is not None:
        return note
    for m, r in recs.items():
        mt = r["metrics"]
        lines.append(f"| {LABELS[m]} | {_fmt(mt.get('step_size'))} | "
                     f"{_fmt(mt.get('median_iterations_to_gd_final'), 'g')} | "
                     f"{_fmt(r['time_to_target_s'])} | "
                     f"{_fmt(mt.get('fraction_reaching_gd_final'), '.0%')} | "
                     f"{_fmt(mt.get('median_final_gap'), '.2e')} | "
                     f"{_fmt(mt.get('median_final_gap_to_truth'), '.2e')} | "
                     f"{_fmt(mt.get('median_beta_error'))} | "
                     f"{_fmt(mt.get('median_w_error'))} |")
    it = {m: recs[m]["metrics"].get("median_iterations_to_gd_final") for m in recs}
    lines.append("")
    if _known(it.get("em"), it.get("gradient-em"), it.get("gd")):
        ok_em = it["em"] <= T / 5
        ok_gem = it["em"] <= it["gradient-em"] <= it["gd"]
        lines += [f"- Claim (EM reaches GD's final objective in <= 1/5 of GD's {T} "
                  f"iterations): EM needs {it['em']:g} (median) -> "
                  f"**{'holds' if ok_em else 'does not hold'}**.",
                  f"- Claim (Gradient EM between EM and GD): Gradient EM needs "
                  f"{it['gradient-em']:g}, GD {it['gd']:g} -> "
                  f"**{'holds' if ok_gem else 'does not hold'}**."]
    else:
        lines.append("- Claims not decided: the iterations to GD's final objective were not "
                     "measured for EM, Gradient EM and GD.")
    lines += _edge_note(s) + [""]
    panels = []
    for key, ylabel, logy in (("curve_gap", "L(theta_t) - L^ (geometric mean)", True),
                              ("curve_beta", "||beta_t - beta*|| / ||beta*|| (mean)", False),
                              ("curve_w", "||w_t - w*|| / ||w*|| (mean)", False)):
        series = [Series(LABELS[m], list(range(len(v[key]))), v[key])
                  for m, v in s["methods"].items()]
        panels.append(Panel(f"{name}: {ylabel.split(' (')[0]}", "iteration", ylabel, series,
                            logy=logy))
    series_t = [Series(LABELS[m], v["curve_time"], v["curve_gap"])
                for m, v in s["methods"].items()]
    panels.append(Panel(f"{name}: gap against time", "seconds (median)",
                        "L(theta_t) - L^", series_t, logy=True))
    path = out / f"moe_{name.lower()}.png"
    panel_grid([panels[:2], panels[2:]], path,
               caption="L^ = the best objective found (EM continued 300 iterations from the "
                       "best final point). Figs. 1-2 of the paper.")
    lines += [f"![{name}]({path.name})", ""]
    return lines


def _inverted(ds: str, s: dict, recs: dict, out: Path) -> list[str]:
    single = s["single"]
    lines = [f"### Inverted images: {ds} ({s['instances']} instances, {s['iters']} "
             "iterations, each image inverted with probability 1/2)", "",
             "| model | random invert | test accuracy | test cross entropy |",
             "| --- | --- | --- | --- |"]
    note = _incomplete(lines[0], s, recs)
    if note is not None:
        return note
    for label in ("original", "inverted"):
        r = single[label]
        lines.append(f"| single logistic expert | {'yes' if label == 'inverted' else 'no'} | "
                     f"{_fmt(r['accuracy'], '.1%')} | {_fmt(r['cross_entropy'], '.3f')} |")
    lines += ["", "| 2-expert MoE | step size | test accuracy (mean +- sd) | test cross entropy "
              "(mean +- sd) | final objective (median) | seconds (median) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for m, r in recs.items():
        mt = r["metrics"]
        lines.append(f"| {LABELS[m]} | {_fmt(mt.get('step_size'))} | "
                     f"{_fmt(mt.get('test_accuracy'), '.1%')} +- "
                     f"{_fmt(mt.get('test_accuracy_std'), '.1%')} | "
                     f"{_fmt(mt.get('test_cross_entropy'), '.3f')} +- "
                     f"{_fmt(mt.get('test_cross_entropy_std'), '.3f')} | "
                     f"{_fmt(r['final_objective'], '.4f')} | "
                     f"{_fmt(mt.get('median_total_time_s'))} |")
    checkpoints = list(recs["em"]["metrics"].get("test_accuracy_at") or {})
    if checkpoints and all(r["metrics"].get("test_accuracy_at") for r in recs.values()):
        lines += ["", "Test accuracy after t iterations (mean +- sd over instances; the paper "
                  "reports the last):", "",
                  "| 2-expert MoE | " + " | ".join(f"t = {c}" for c in checkpoints) + " |",
                  "| --- |" + " --- |" * len(checkpoints)]
        for m, r in recs.items():
            at, sd = r["metrics"]["test_accuracy_at"], r["metrics"]["test_accuracy_at_std"]
            lines.append(f"| {LABELS[m]} | " + " | ".join(f"{at[c]:.1%} +- {sd[c]:.1%}"
                                                        for c in checkpoints) + " |")
        gaps = {c: recs["em"]["metrics"]["test_accuracy_at"][c]
                - recs["gd"]["metrics"]["test_accuracy_at"][c] for c in checkpoints}
        lines += ["", "EM minus GD, test accuracy: " + ", ".join(
            f"{gaps[c] * 100:+.1f} points at t = {c}" for c in checkpoints) + "."]
    tuning = s.get("tuning", {})
    if tuning.get("gd"):
        rose = tuning.get("unstable", {})
        lines += ["", "Step-size tuning, mean final objective over the tuning instances "
                  f"({s.get('tune_instances', 1)}, {s.get('tune_search', 'grid')} search; "
                  f"* = unstable: the objective jumped by > {UNSTABLE_RISE:g} max(1, L) in one "
                  "iteration, or diverged, on some tuning instance): "
                  + "; ".join(f"{LABELS[m]}: " + ", ".join(
                      f"{k}{'*' if k in rose.get(m, ()) else ''} -> "
                      f"{'diverged' if v is None else format(v, '.4g')}"
                      for k, v in tuning[m].items()) for m in
                      ("gd", "gradient-em", "em-inner-gd", "adam") if m in tuning) + "."]
    lines += _edge_note(s)
    em_mt = recs["em"]["metrics"]
    if _known(em_mt.get("median_mstep_cg_products"),
              em_mt.get("median_mstep_preconditioner_builds")):
        lines += ["", f"EM's M-steps (median per run): {em_mt['median_mstep_cg_products']:g} "
                  f"Hessian products, {em_mt['median_mstep_preconditioner_builds']:g} "
                  "preconditioner builds (warm-started across EM iterations)."]
    acc = {m: recs[m]["metrics"].get("test_accuracy") for m in recs}
    single_acc = single["original"]["accuracy"]
    t_em = recs["em"]["metrics"].get("median_time_to_common_objective_s")
    t_in = recs["em-inner-gd"]["metrics"].get("median_time_to_common_objective_s")
    lines += ["", "Paper (Fashion-MNIST): EM 79.2%, Gradient EM 65.7%, GD 61.9%, single expert "
              "83.2% (10.2% on inverted data).", ""]
    if _known(acc.get("em"), acc.get("gd"), single_acc):
        beat = acc["em"] - acc["gd"]
        close = single_acc - acc["em"]
        lines += [f"- Claim (EM beats GD by >= 10 points): {beat * 100:+.1f} points -> "
                  f"**{'holds' if beat >= 0.10 else 'does not hold'}**.",
                  f"- Claim (EM within 5 points of a single expert on non-inverted data): "
                  f"{close * 100:.1f} points below -> "
                  f"**{'holds' if close <= 0.05 else 'does not hold'}**."]
    else:
        lines.append("- Claims on test accuracy not decided: accuracies were not measured.")
    if _known(t_em, t_in):
        lines.append(f"- EM with bound M-steps against EM with the paper's inner GD, time to "
                     f"the objective both reach (median): {_fmt(t_em)} s against {_fmt(t_in)} "
                     f"s, ratio inner-GD / bound = {_fmt(t_in / t_em if t_em else None)} -> "
                     f"bound M-steps **{'faster' if t_em < t_in else 'not faster'}**.")
    lines += [f"- Adam: {_fmt(acc.get('adam'), '.1%')} test accuracy.", ""]
    gem = recs["gradient-em"]["metrics"].get("step_size")
    if isinstance(gem, list) and len(set(gem)) == 1 and gem[0] == recs["gd"]["metrics"][
            "step_size"]:
        lines[-1:-1] = ["- Gradient EM's tuned steps are equal to GD's step, and with equal "
                        "steps Gradient EM is GD: the two rows and curves coincide."]
    series = [Series(LABELS[m], list(range(len(v["curve"]))), v["curve"])
              for m, v in s["methods"].items()]
    series_t = [Series(LABELS[m], v["curve_time"], v["curve"]) for m, v in s["methods"].items()]
    panels = [Panel(f"{ds}: training objective", "iteration", "L(theta_t) (mean)", series,
                    logy=True),
              Panel(f"{ds}: against time", "seconds (median)", "L(theta_t)", series_t,
                    logy=True)]
    if all("curve_accuracy" in v for v in s["methods"].values()):
        series_a = [Series(LABELS[m], list(range(len(v["curve_accuracy"]))),
                           v["curve_accuracy"]) for m, v in s["methods"].items()]
        panels.append(Panel(f"{ds}: test accuracy", "iteration", "test accuracy (mean)",
                            series_a))
    path = out / f"moe_inverted_{ds}.png"
    panel_grid([panels], path,
               caption="Training objective (mean NLL + penalty) and test accuracy of the "
                       "2-expert logistic MoE on randomly inverted images (Fig. 3 of the "
                       "paper).")
    lines += [f"![{ds}]({path.name})", ""]
    return lines


def report(doc: dict, out: Path) -> str:
    out = Path(out)
    extra = doc.get("extra", {}).get("moe", {})
    by = {}
    for r in doc["records"]:
        by.setdefault((r["task"], r["dataset"]), {})[r["method"]] = r
    lines = ["## Mixtures of experts: EM, Gradient EM, GD, Adam", "",
             "Timings were taken on a shared 2-core machine with one BLAS thread; they are "
             "noisy.", ""]
    for key, s in extra.items():
        if key.startswith("synthetic/"):
            name = key.split("/", 1)[1]
            lines += _synthetic(name, s, by.get(("synthetic", name), {}), out)
        elif key.startswith("inverted/"):
            ds = key.split("/", 1)[1]
            recs = {m: r for m, r in by.get(("inverted", ds), {}).items()
                    if not m.startswith("single")}
            lines += _inverted(ds, s, recs, out)
    return "\n".join(lines)
