"""Markdown and figures of ``latent``: Table 2 and Table 5 of paper 003 beside ours, the toy's
decision boundaries (Fig. 1), and verdicts computed from the records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from zbound.bench.suites.latent.config import PAPER_M
from zbound.bench.suites.latent.runs import PAPER_TABLE5, PAPER_TOY

_NAMES = {"bound": "Bound (Alg. 2)", "em": "EM (conditional)", "em-joint": "EM (joint, generative)",
          "bfgs": "BFGS", "cg": "CG", "steepest": "SD", "newton": "Newton"}


def toy_figure(X, y, thetas: dict[str, np.ndarray], path: Path) -> Path:
    """Decision regions p(y = 1 | x) of each method on the toy, with the training data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from zbound.models.latent import LatentSoftmaxLoss

    loss = LatentSoftmaxLoss(X, y, 2)
    g0 = np.linspace(X[:, 0].min() - 1, X[:, 0].max() + 1, 200)
    g1 = np.linspace(X[:, 1].min() - 1, X[:, 1].max() + 1, 200)
    G0, G1 = np.meshgrid(g0, g1)
    grid = np.c_[G0.ravel(), G1.ravel()]
    fig, axes = plt.subplots(1, len(thetas), figsize=(4.2 * len(thetas), 3.8), squeeze=False)
    for ax, (name, theta) in zip(axes[0], thetas.items(), strict=True):
        p1 = np.exp(loss.log_proba(theta, grid)[:, 1]).reshape(G0.shape)
        ax.contourf(G0, G1, p1, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.5)
        ax.contour(G0, G1, p1, levels=[0.5], colors="k", linewidths=1.5)
        ax.scatter(X[y == 0, 0], X[y == 0, 1], s=6, c="tab:blue", marker="o", label="class 0")
        ax.scatter(X[y == 1, 0], X[y == 1, 1], s=6, c="tab:red", marker="^", label="class 1")
        acc = float(np.mean(loss.log_proba(theta).argmax(axis=1) == y))
        ax.set_title(f"{_NAMES.get(name, name)}\ntrain accuracy {acc:.2f}", fontsize=10)
        ax.set_xlabel("x1")
    axes[0][0].set_ylabel("x2")
    axes[0][0].legend(loc="lower left", fontsize=8)
    fig.suptitle("Toy problem (8 Gaussians, m = 2): decision boundary p(y=1|x) = 0.5",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _f(v, digits=2):
    if v is None:
        return "-"
    if abs(v) >= 1e4:
        return f"{v:.2e}"
    return f"{v:.{digits}f}"


def _index(records):
    out: dict[tuple, dict] = {}
    for r in records:
        out[(r["task"], r["dataset"], r["metrics"].get("m"), r["method"])] = r
    return out


def _table5(records) -> tuple[list[str], dict]:
    idx = _index(records)
    sets = list(dict.fromkeys(r["dataset"] for r in records if r["task"] == "table5"))
    methods = list(dict.fromkeys(r["method"] for r in records if r["task"] == "table5"))
    ms = sorted({r["metrics"]["m"] for r in records if r["task"] == "table5"})
    lines: list[str] = []
    wins: dict = {}
    for ds in sets:
        lines.append(f"**{ds}** (test rows: "
                     f"{idx[('table5', ds, ms[0], methods[0])]['metrics']['t_test']}, "
                     f"{idx[('table5', ds, ms[0], methods[0])]['metrics']['preprocessing']})\n")
        lines.append("| method | " + " | ".join(f"m = {m} ours (paper)" for m in ms) + " |")
        lines.append("| --- |" + " --- |" * len(ms))
        best = {}
        for m in ms:
            vals = {meth: idx[("table5", ds, m, meth)]["metrics"]["test_loglik"]
                    for meth in methods if ("table5", ds, m, meth) in idx}
            best[m] = max(vals, key=vals.get)
            wins[(ds, m)] = (best[m], vals)
        for meth in methods:
            cells = []
            for m in ms:
                rec = idx.get(("table5", ds, m, meth))
                if rec is None:
                    cells.append("-")
                    continue
                v = _f(rec["metrics"]["test_loglik"])
                if best[m] == meth:
                    v = f"**{v}**"
                paper = PAPER_TABLE5.get(ds, {}).get(meth)
                pv = _f(paper[m - 1]) if paper is not None and m <= 4 else "-"
                cells.append(f"{v} ({pv})")
            lines.append(f"| {_NAMES.get(meth, meth)} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines, wins


def _status_lines(records) -> list[str]:
    lines = ["| data set | m | method | mean iterations | median s | ||theta|| | "
             "train objective | test accuracy | endings |", "| --- |" + " --- |" * 8]
    for r in records:
        if r["task"] != "table5":
            continue
        mt = r["metrics"]
        ends = ", ".join(f"{k} {v}" for k, v in sorted(mt["status_counts"].items()))
        lines.append(f"| {r['dataset']} | {mt['m']} | {r['method']} | {mt['iterations']:.0f} | "
                     f"{mt['seconds_median']:.3f} | {mt['theta_norm_mean']:.3g} | "
                     f"{mt['train_objective_mean']:.3g} | {mt['test_accuracy']:.3f} | {ends} |")
    return lines


def report(doc: dict[str, Any], out: Path) -> str:
    records = doc["records"]
    cfg = doc.get("extra", {}).get("config", {})
    parts = ["## Latent conditional likelihood (paper 003, Sec. 4, Tables 2 and 5, Fig. 1)\n"]
    parts.append(
        "Model: per class y and component m, scores theta_{y,m}^T x + nu_{y,m} (phi(x) = x), "
        "p(y|x) = sum_m p(y,m|x) with one softmax over all (y, m) pairs; objective the negative "
        "latent conditional log-likelihood of the training split, lambda = "
        f"{cfg.get('lam', 0)}. Every method minimizes that same objective from the same "
        f"random starts (N(0, {cfg.get('start_scale')}^2), {cfg.get('starts')} per split, "
        f"{cfg.get('splits')} stratified 90/10 split(s), features standardized on the "
        f"training part, SRBCT projected on {cfg.get('srbct_pca')} principal components). Stop: "
        f"objective change < {cfg.get('ftol')} (relative; the paper's rule), or "
        f"{cfg.get('max_iter')} iterations, or {cfg.get('time_budget_s')} s per run. Reported: "
        "the test latent log-likelihood summed over the test rows (the paper's scale), mean "
        "over splits x starts. Timings are from a shared 2-core machine and noisy.\n")
    parts.append(
        "**lambda = 0.** The objective is then unbounded below on data the (y, m) pairs can "
        "separate (wine, SRBCT, most splits of ionosphere): the training objective goes to 0 "
        "and ||theta|| grows without limit, and 'the test log-likelihood at convergence' "
        "depends on where each method stops (the paper's rule stops a method once its "
        "per-iteration progress falls below 1e-6, so slow methods stop early, near their "
        "start). We ran the paper's protocol as stated (no ridge) and report ||theta|| and how "
        "each run ended, so this is visible; the Alg. 1 curvature is singular at lambda = 0 "
        "(a common shift of all pairs leaves the softmax unchanged) and the bound step is the "
        "minimum-norm minimizer of the quadratic.\n")
    toy = [r for r in records if r["task"] == "toy"]
    if toy:
        parts.append("### Toy problem (Fig. 1): two classes from 8 Gaussians, m = 2\n")
        parts.append("| method | test log-likelihood (sum, mean over starts) | test accuracy | "
                     "paper |")
        parts.append("| --- | --- | --- | --- |")
        for r in toy:
            mt = r["metrics"]
            parts.append(f"| {_NAMES.get(r['method'], r['method'])} | {_f(mt['test_loglik'])} | "
                         f"{mt['test_accuracy']:.3f} | {_f(PAPER_TOY.get(r['method']))} |")
        parts.append("")
        if (Path(out) / "latent_toy.png").exists():
            parts.append("![toy decision boundaries](latent_toy.png)\n")
        acc = {r["method"]: r["metrics"]["test_accuracy"] for r in toy}
        if "bound" in acc and "em-joint" in acc:
            holds = acc["bound"] >= 0.9 and acc["em-joint"] <= 0.6
            parts.append(
                f"Verdict (Fig. 1 claim: the bound separates the classes, EM is at chance): "
                f"measured test accuracy (mean over starts) bound {acc['bound']:.2f}, "
                f"generative EM {acc['em-joint']:.2f} (chance 0.5): the claim "
                f"{'holds' if holds else 'does NOT hold in this run'}. Generative EM's result "
                "depends on its start: its maximum-likelihood grouping of each class's four "
                "clusters (left pair / right pair, the smaller shared covariance) gives a "
                "chance-level conditional, while a start that groups them by stripe gives a "
                "perfect one. EM on the conditional likelihood itself (E-step responsibilities, "
                f"M-step a convex soft-target softmax regression) reaches "
                f"{acc.get('em', float('nan')):.2f}.\n")
    t5 = [r for r in records if r["task"] == "table5"]
    if t5:
        lines, wins = _table5(records)
        parts.append("### Table 2 at the paper's m (bound's best m in its Table 5)\n")
        methods = list(dict.fromkeys(r["method"] for r in t5))
        sets = list(dict.fromkeys(r["dataset"] for r in t5))
        parts.append("| method | " + " | ".join(f"{d} (m={PAPER_M.get(d)}) ours (paper)"
                                               for d in sets) + " |")
        parts.append("| --- |" + " --- |" * len(sets))
        n_bound = 0
        n_sets = 0
        for meth in methods:
            cells = []
            for d in sets:
                key = (d, PAPER_M.get(d))
                if key not in wins:
                    cells.append("-")
                    continue
                best, vals = wins[key]
                v = _f(vals.get(meth))
                paper = PAPER_TABLE5.get(d, {}).get(meth)
                pv = _f(paper[PAPER_M[d] - 1]) if paper else "-"
                cells.append((f"**{v}**" if best == meth else v) + f" ({pv})")
            parts.append(f"| {_NAMES.get(meth, meth)} | " + " | ".join(cells) + " |")
        for d in sets:
            key = (d, PAPER_M.get(d))
            if key in wins:
                n_sets += 1
                n_bound += wins[key][0] == "bound"
        parts.append("")
        all_cells = len(wins)
        bound_cells = sum(1 for b, _ in wins.values() if b == "bound")
        per_set_best = {}
        for d in sets:
            bests = {meth: max(wins[(d, m)][1].get(meth, -np.inf) for (dd, m) in wins
                               if dd == d) for meth in methods}
            per_set_best[d] = max(bests, key=bests.get)
        n_best_over_m = sum(1 for v in per_set_best.values() if v == "bound")
        holds = n_bound >= 4
        parts.append(
            f"Verdict (done-when: the bound best on >= 4 of 5 sets): at the paper's m the bound "
            f"has the highest test log-likelihood on **{n_bound} of {n_sets}** data sets; over "
            f"all (data set, m) cells on {bound_cells} of {all_cells}; with every method at its "
            f"own best m, on {n_best_over_m} of {len(sets)}. The paper's ranking "
            f"{'holds' if holds else 'does NOT hold in our runs'}"
            + ("" if holds else "; the winners per cell are "
               + ", ".join(f"{d} m={m}: {b}" for (d, m), (b, _) in wins.items())) + ".\n")
        idx = _index(records)
        small = 0
        for (d, m), (b, _) in wins.items():
            norms = {meth: idx[("table5", d, m, meth)]["metrics"]["theta_norm_mean"]
                     for meth in methods if ("table5", d, m, meth) in idx}
            small += norms[b] <= min(norms.values()) * 1.5
        parts.append(
            f"Why: in {small} of {all_cells} cells the winner is a run with (near) the smallest "
            "||theta|| of the cell (see the last table): at lambda = 0 the methods that "
            "separate the training data fastest (BFGS, Newton, EM, CG) drive the training "
            "objective to ~0 and ||theta|| to 10^2-10^4, and a few confidently wrong test rows "
            "then cost tens to thousands of nats; Alg. 2 and steepest descent advance slowly "
            "and end on the iteration / time cap or the paper's 1e-6 rule at moderate norms, "
            "which acts as early stopping. Where the methods reach the same stationary point "
            "(bupa, m = 1 and 2) they tie. A higher test log-likelihood at lambda = 0 is thus "
            "not evidence of a better local optimum of the training objective.\n")
        parts.append("### Table 5: test latent log-likelihood, ours (paper)\n")
        parts += lines
        parts.append("### How the runs ended\n")
        parts.append("Mean iterations, median seconds per run, mean ||theta||, mean training "
                     "objective, test accuracy, and the stopping reasons (ftol: the paper's "
                     "rule; max_iter; time_budget; line_search_failed / failed: the method "
                     "gave up, stationary: gradient test).\n")
        parts += _status_lines(records)
        parts.append("")
    return "\n".join(parts)
