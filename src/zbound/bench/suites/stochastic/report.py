"""Report of the ``stochastic`` suite: the epochs / seconds table, the done-when verdict and the
Fig. 1 curves (training objective gap and test loss, against epochs and against seconds)."""

from __future__ import annotations

import math
from pathlib import Path

from zbound.bench.plots import Panel, Series, panel_grid
from zbound.bench.suites.stochastic.config import PEERS

FIRST_ORDER = ("sgd", "momentum", "adam")


def _f(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def table(records) -> str:
    lines = ["| data | lambda | method | lr, schedule (winner) | epochs to 1% | s to 1% | "
             "epochs to 0.1% | s to 0.1% | final gap | test loss | test acc |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in records:
        m = r["metrics"]
        gap = None
        if r["final_objective"] is not None and m.get("f_star"):
            gap = r["final_objective"] / m["f_star"] - 1.0
        name = r["method"] + ("" if m.get("same_objective", True) else " (OvR)")
        lr = _f(m["lr"]) + ("*" if m.get("lr_at_edge") else "")
        lr += f", {m['schedule']}" if m.get("schedule") else ""
        lines.append(
            f"| {r['dataset']} | {_f(m.get('lam'))} | {name} | {lr} | "
            f"{_f(m['epochs_to_target'])} | "
            f"{_f(r['time_to_target_s'])} | {_f(m['epochs_to_0.1%'])} | "
            f"{_f(m['seconds_to_0.1%'])} | {_f(gap)} | "
            f"{_f(None if m['test_loglik'] is None else -m['test_loglik'], 4)} | "
            f"{_f(m['test_accuracy'], 3)} |")
    return "\n".join(lines)


def _key(r):
    return (r["dataset"], r["metrics"].get("lam"))


def verdict(records) -> list[str]:
    """Done-when: SPFB (the paper's or our averaged one) or LSPFB within 1% in <= 1/3 of the
    epochs of the best-tuned SGD, momentum and Adam, and in no more wall time. Where no
    first-order method reached 1% within the budget of E epochs, their epochs are only known
    to exceed E: the claim then holds for a method that reached 1% within E/3 epochs (and
    within the time the fastest first-order run spent on all E)."""
    out = []
    for key in dict.fromkeys(_key(r) for r in records):
        rs = [r for r in records if _key(r) == key]
        first = [r for r in rs if r["method"] in FIRST_ORDER]
        ours = [r for r in rs if r["method"].startswith(("spfb", "lspfb"))]
        budget = rs[0]["metrics"].get("epochs")
        reached = [r for r in first if r["reached"]]
        if reached:
            best_e = min(r["metrics"]["epochs_to_target"] for r in reached)
            best_s = min(r["time_to_target_s"] for r in reached)
        else:
            best_e = None
            best_s = min((r["metrics"].get("seconds_total") or math.inf for r in first),
                         default=math.inf)
        lines = []
        holds_any = False
        for r in ours:
            e, s = r["metrics"]["epochs_to_target"], r["time_to_target_s"]
            if e is None:
                lines.append(f"{r['method']} did not reach 1%")
                continue
            ep_ok = 3 * e <= (best_e if best_e is not None else (budget or 0))
            t_ok = s <= best_s
            holds_any |= ep_ok and t_ok
            lines.append(f"{r['method']}: {e} epochs, {s:.3g} s (epochs "
                         f"{'<=' if ep_ok else '>'} 1/3 of the best first-order; time "
                         f"{'<=' if t_ok else '>'} theirs)")
        fo = (f"best first-order: {best_e} epochs, {_f(best_s)} s" if reached else
              f"no first-order method reached 1% within {budget} epochs "
              f"(fastest spent {_f(best_s)} s on them)")
        out.append(f"- **{key[0]}, lambda = {_f(key[1])}: "
                   f"{'holds' if holds_any else 'does not hold'}** ({fo}). "
                   + "; ".join(lines) + ".")
    return out


def plots(doc, out: Path) -> list[str]:
    probs = doc.get("extra", {}).get("problems", {})
    if not probs:
        return []
    rows = []
    for ds, info in probs.items():
        curves = info.get("curves", {})
        ser = {k: [] for k in ("ge", "gs", "te", "ts")}
        for name, c in curves.items():
            ep = list(range(len(c["gap"])))
            gap = [max(g, 1e-8) for g in c["gap"]]
            ser["ge"].append(Series(name, ep, gap))
            ser["gs"].append(Series(name, c["seconds"], gap))
            ser["te"].append(Series(name, ep, c["test_loss"]))
            ser["ts"].append(Series(name, c["seconds"], c["test_loss"]))
        rows.append([
            Panel(f"{ds}: training objective", "epochs", "L/L* - 1", ser["ge"], logy=True,
                  hline=1e-2, hline_label="1%"),
            Panel(f"{ds}: training objective", "seconds (updates only)", "L/L* - 1",
                  ser["gs"], logy=True, hline=1e-2, hline_label="1%"),
            Panel(f"{ds}: test loss", "epochs", "mean test log-loss", ser["te"]),
            Panel(f"{ds}: test loss", "seconds (updates only)", "mean test log-loss",
                  ser["ts"]),
        ])
    path = panel_grid(rows, out / "stochastic_fig1.png",
                      title="SGB Fig. 1: L2 logistic regression, mini-batch 1000",
                      caption="Each method at its best step size on the shared grid (fewest "
                              "epochs to 1% of the L-BFGS optimum). Curves stop at 0.1%.")
    return [f"![Fig. 1 reproduction]({path.name})"]


def report(doc: dict, out: Path) -> str:
    recs = [r for r in doc["records"] if r["task"] == "fig1"]
    cfg = doc.get("extra", {}).get("config", {})
    md = ["## Stochastic bound majorization (SGB Fig. 1)", ""]
    md.append(f"L2 logistic regression, L = mean log-loss + lambda/2 ||theta||^2 with lambda = "
              f"{cfg.get('lam')}, mini-batch {cfg.get('batch_size')}, one shared shuffled "
              f"stream, epoch budget {cfg.get('epochs')}. Step-size grid for every method: "
              f"{cfg.get('grid')} (bound methods: eta_0 with eta_t = eta_0 / (1 + t / "
              f"batches per epoch); first-order peers: constant). Winner = fewest epochs to 1% "
              f"of the L-BFGS optimum. Seconds: updates only, median of {cfg.get('repeats')} "
              "repeats on a loaded 2-core machine (noisy). LSPFB builds its bound from "
              f"{cfg.get('curvature_rows')} rows of the batch every {cfg.get('lowrank_refresh')} "
              "updates; SPFB above 1000 parameters likewise, solving by 20 warm-started "
              "Jacobi-PCG steps.")
    md += ["", table(recs), "", "### Done-when verdict", ""]
    md += verdict(recs)
    optima = [f"{k}: f* = {_f(v.get('f_star'), 4)}, test loss at the optimum "
              f"{_f(v.get('optimum_test_loss'), 4)}, accuracy {_f(v.get('optimum_test_accuracy'))}"
              for k, v in doc.get("extra", {}).get("problems", {}).items()
              if v.get("optimum_test_loss") is not None]
    if optima:
        md += ["", "### The lambda grid: the L-BFGS optimum of each problem", "",
               "The paper does not state lambda (hyperparameters were chosen for the best test "
               "performance); the test loss at each optimum says which lambda that implies.", ""]
        md += [f"- {o}" for o in optima]
    skipped = {ds: p.get("skipped") for ds, p in doc.get("extra", {}).get("problems", {}).items()
               if p.get("skipped")}
    if skipped:
        md += ["", f"Not run (O(p^2) per rank-one term): {skipped}."]
    peers_over = [r["method"] for r in recs if r["method"] in PEERS and not
                  r["metrics"].get("same_objective", True)]
    if peers_over:
        md += ["", "sklearn-sgd (OvR) on more than two classes fits one-vs-rest binary models, "
                   "a different objective; its gap is our softmax objective at its weights."]
    md += [""] + plots(doc, out)
    return "\n".join(md)
