"""Report of the ``moe`` suite: tables, the verdicts on the paper's claims, Figs. 1-3
analogues."""

from __future__ import annotations

from pathlib import Path

from zbound_benchmarks.plots import Panel, Series, panel_grid
from zbound_benchmarks.report import holds, num, prose, table
from zbound_benchmarks.suites.moe.runs import UNSTABLE_RISE

PAPER = {"em": (0.792, 0.801), "gradient-em": (0.657, 1.30), "gd": (0.619, 1.33),
         "single-original": 0.832, "single-inverted": 0.102}
LABELS = {"em": "EM (bound M-steps)", "em-inner-gd": "EM (inner GD, paper)",
          "gradient-em": "Gradient EM", "gd": "GD", "adam": "Adam"}


def _known(*values) -> bool:
    """Whether every value was measured (a record of a short or interrupted run may lack it)."""
    return all(v is not None for v in values)


def _incomplete(title: str, s: dict, recs: dict) -> list[str] | None:
    """A note instead of the section where the run stopped before every method's record."""
    missing = sorted(set(s.get("methods", {})) - set(recs))
    if not missing:
        return None
    return [title, "", prose("moe", "incomplete", missing=", ".join(missing)), ""]


def _edge_note(s: dict) -> list[str]:
    edge = s.get("grid_edge") or {}
    if not edge:
        return []
    return ["", prose("moe", "grid-edge",
                      methods=", ".join(f"{LABELS[m]} ({num(v)})" for m, v in edge.items()))]


def _synthetic(name: str, s: dict, recs: dict, out: Path) -> list[str]:
    T = s["iters"]
    head = prose("moe", "synthetic", name=name, instances=s["instances"], iters=T)
    note = _incomplete(head.split("\n")[0], s, recs)
    if note is not None:
        return note
    lines = [head, ""] + table(
        ("method", "step size", "iterations to GD's final objective", "seconds to it",
         "reached", "final gap L - L^", "L(theta_T) - L(theta*)", "beta error", "w error"),
        [(LABELS[m], num(mt.get("step_size")), num(mt.get("median_iterations_to_gd_final"), "g"),
          num(r["time_to_target_s"]), num(mt.get("fraction_reaching_gd_final"), ".0%"),
          num(mt.get("median_final_gap"), ".2e"), num(mt.get("median_final_gap_to_truth"), ".2e"),
          num(mt.get("median_beta_error")), num(mt.get("median_w_error")))
         for m, r in recs.items() for mt in [r["metrics"]]])
    it = {m: recs[m]["metrics"].get("median_iterations_to_gd_final") for m in recs}
    lines.append("")
    if _known(it.get("em"), it.get("gradient-em"), it.get("gd")):
        ok_em = it["em"] <= T / 5
        ok_gem = it["em"] <= it["gradient-em"] <= it["gd"]
        lines += prose("moe", "synthetic-claims", iters=T, em=it["em"], gem=it["gradient-em"],
                       gd=it["gd"], ok_em=holds(ok_em), ok_gem=holds(ok_gem)).split("\n")
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
               caption=prose("moe", "synthetic-caption"))
    lines += [f"![{name}]({path.name})", ""]
    return lines


def _inverted(ds: str, s: dict, recs: dict, out: Path) -> list[str]:
    single = s["single"]
    head = prose("moe", "inverted", ds=ds, instances=s["instances"], iters=s["iters"])
    note = _incomplete(head, s, recs)
    if note is not None:
        return note
    lines = [head, ""] + table(
        ("model", "random invert", "test accuracy", "test cross entropy"),
        [("single logistic expert", "yes" if label == "inverted" else "no",
          num(single[label]["accuracy"], ".1%"), num(single[label]["cross_entropy"], ".3f"))
         for label in ("original", "inverted")])
    lines += [""] + table(
        ("2-expert MoE", "step size", "test accuracy (mean +- sd)",
         "test cross entropy (mean +- sd)", "final objective (median)", "seconds (median)"),
        [(LABELS[m], num(mt.get("step_size")),
          f"{num(mt.get('test_accuracy'), '.1%')} +- {num(mt.get('test_accuracy_std'), '.1%')}",
          f"{num(mt.get('test_cross_entropy'), '.3f')} +- "
          f"{num(mt.get('test_cross_entropy_std'), '.3f')}",
          num(r["final_objective"], ".4f"), num(mt.get("median_total_time_s")))
         for m, r in recs.items() for mt in [r["metrics"]]])
    checkpoints = list(recs["em"]["metrics"].get("test_accuracy_at") or {})
    if checkpoints and all(r["metrics"].get("test_accuracy_at") for r in recs.values()):
        lines += ["", prose("moe", "checkpoints"), ""] + table(
            ("2-expert MoE", *(f"t = {c}" for c in checkpoints)),
            [(LABELS[m], *(f"{at[c]:.1%} +- {sd[c]:.1%}" for c in checkpoints))
             for m, r in recs.items() for at, sd in [(r["metrics"]["test_accuracy_at"],
                                                      r["metrics"]["test_accuracy_at_std"])]])
        gaps = {c: recs["em"]["metrics"]["test_accuracy_at"][c]
                - recs["gd"]["metrics"]["test_accuracy_at"][c] for c in checkpoints}
        lines += ["", "EM minus GD, test accuracy: " + ", ".join(
            f"{gaps[c] * 100:+.1f} points at t = {c}" for c in checkpoints) + "."]
    tuning = s.get("tuning", {})
    if tuning.get("gd"):
        rose = tuning.get("unstable", {})
        lines += ["", prose(
            "moe", "tuning", instances=s.get("tune_instances", 1),
            search=s.get("tune_search", "grid"), rise=UNSTABLE_RISE, steps="; ".join(
                f"{LABELS[m]}: " + ", ".join(
                      f"{k}{'*' if k in rose.get(m, ()) else ''} -> "
                      f"{'diverged' if v is None else format(v, '.4g')}"
                    for k, v in tuning[m].items()) for m in
                ("gd", "gradient-em", "em-inner-gd", "adam") if m in tuning))]
    lines += _edge_note(s)
    return lines + _inverted_claims(recs, single) + _inverted_figure(ds, s, out)


def _inverted_claims(recs: dict, single: dict) -> list[str]:
    """EM's M-step costs and the paper's claims on test accuracy and time."""
    lines = []
    em_mt = recs["em"]["metrics"]
    if _known(em_mt.get("median_mstep_cg_products"),
              em_mt.get("median_mstep_preconditioner_builds")):
        lines += ["", prose("moe", "msteps", cg=em_mt["median_mstep_cg_products"],
                            builds=em_mt["median_mstep_preconditioner_builds"])]
    acc = {m: recs[m]["metrics"].get("test_accuracy") for m in recs}
    single_acc = single["original"]["accuracy"]
    t_em = recs["em"]["metrics"].get("median_time_to_common_objective_s")
    t_in = recs["em-inner-gd"]["metrics"].get("median_time_to_common_objective_s")
    lines += ["", prose("moe", "paper"), ""]
    if _known(acc.get("em"), acc.get("gd"), single_acc):
        beat = acc["em"] - acc["gd"]
        close = single_acc - acc["em"]
        lines += prose("moe", "accuracy-claims", beat=beat * 100, ok_beat=holds(beat >= 0.10),
                       close=close * 100, ok_close=holds(close <= 0.05)).split("\n")
    else:
        lines.append("- Claims on test accuracy not decided: accuracies were not measured.")
    if _known(t_em, t_in):
        lines.append(prose("moe", "msteps-claim", t_em=num(t_em), t_in=num(t_in),
                           ratio=num(t_in / t_em if t_em else None),
                           faster="faster" if t_em < t_in else "not faster"))
    lines += [f"- Adam: {num(acc.get('adam'), '.1%')} test accuracy.", ""]
    gem = recs["gradient-em"]["metrics"].get("step_size")
    if isinstance(gem, list) and len(set(gem)) == 1 and gem[0] == recs["gd"]["metrics"][
            "step_size"]:
        lines[-1:-1] = [prose("moe", "gem-equals-gd")]
    return lines


def _inverted_figure(ds: str, s: dict, out: Path) -> list[str]:
    """Fig. 3: training objective (against iterations and time) and test accuracy."""
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
    panel_grid([panels], path, caption=prose("moe", "inverted-caption"))
    return [f"![{ds}]({path.name})", ""]


def report(doc: dict, out: Path) -> str:
    out = Path(out)
    extra = doc.get("extra", {}).get("moe", {})
    by = {}
    for r in doc["records"]:
        by.setdefault((r["task"], r["dataset"]), {})[r["method"]] = r
    lines = [prose("moe", "intro"), ""]
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
