"""``zbound demo``: the main job on bundled data (scikit-learn's sets and synthetic models).

1. The Alg. 1 bound on log Z along a line, next to the exact log Z and its second-order Taylor
   expansion (which is not a bound).
2. BoundLogisticRegression against scikit-learn's LogisticRegression on wine, iris, breast cancer,
   digits and a synthetic softmax problem: time, objective, test accuracy.
3. Convergence of every solver on one objective (weakly regularized wine): objective gap against
   iterations and seconds.
4. Upper bounds on an Ising log-partition function (quantum relaxation, TRW, log-det) against the
   exact value.

Writes ``OUT/report.md`` and PNG figures, prints the tables, and finishes in well under two
minutes on two cores.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table


def _table(title: str, columns: list[str], rows: list[list[str]]) -> tuple[Table, str]:
    table = Table(title=title)
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*r)
    md = [f"| {' | '.join(columns)} |", "|" + " --- |" * len(columns)]
    md += [f"| {' | '.join(r)} |" for r in rows]
    return table, "\n".join(md)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bound_along_line(out: Path) -> str:
    """Figure: log Z, the Alg. 1 bound (two orders) and the Taylor quadratic along a line."""
    from scipy.special import logsumexp

    from zbound.bounds.enumerate import quadratic_bound

    rng = np.random.default_rng(0)
    n, d = 6, 3
    features = rng.normal(size=(n, d))
    theta0 = rng.normal(size=d)
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    s = np.linspace(-6, 6, 241)
    thetas = theta0 + s[:, None] * direction
    exact = logsumexp(thetas @ features.T, axis=1)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(s, exact, "k", lw=2, label="log Z (exact)")
    for order, style in (("descending", "-"), ("given", "--")):
        qb = quadratic_bound(features, theta0, order=order)
        ax.plot(s, qb.evaluate(thetas), style, label=f"Alg. 1 bound, {order} order")
    qb = quadratic_bound(features, theta0)
    p = np.exp(features @ theta0 - qb.log_z)
    hess = (features * p[:, None]).T @ features - np.outer(qb.mean, qb.mean)
    delta = thetas - theta0
    taylor = qb.log_z + delta @ qb.mean + 0.5 * np.einsum("mi,ij,mj->m", delta, hess, delta)
    ax.plot(s, taylor, ":", label="2nd-order Taylor (not a bound)")
    ax.set_xlabel("step along a random direction")
    ax.set_ylabel("log Z")
    ax.set_ylim(exact.min() - 1, exact.max() + 6)
    ax.legend(fontsize=8)
    ax.set_title("Quadratic upper bound on log Z (Jebara & Choromanska 2012, Alg. 1)")
    fig.tight_layout()
    fig.savefig(out / "bound_along_line.png", dpi=110)
    plt.close(fig)
    return "![bound](bound_along_line.png)"


def _problems():
    from zbound.datasets import (
        load_breast_cancer,
        load_digits,
        load_iris,
        load_wine,
        make_multinomial,
    )

    yield "wine", load_wine()
    yield "iris", load_iris()
    yield "breast cancer", load_breast_cancer()
    yield "digits", load_digits()
    yield "synthetic", make_multinomial(2000, 20, 5, random_state=0)


def estimator_comparison(console: Console) -> str:
    """BoundLogisticRegression vs scikit-learn LogisticRegression (same C, same objective)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from zbound import BoundLogisticRegression

    rows = []
    for name, ds in _problems():
        X_tr, X_te, y_tr, y_te = train_test_split(ds.X, ds.y, test_size=0.25, random_state=0,
                                                  stratify=ds.y)
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
        fits = {
            "zbound": BoundLogisticRegression(C=1.0, tol=1e-8),
            "sklearn-lbfgs": LogisticRegression(C=1.0, tol=1e-8, max_iter=10000),
        }
        for label, est in fits.items():
            times = []
            for _ in range(3):
                start = time.perf_counter()
                est.fit(X_tr, y_tr)
                times.append(time.perf_counter() - start)
            proba = est.predict_proba(X_tr)
            loss = -np.log(proba[np.arange(len(y_tr)), np.searchsorted(est.classes_, y_tr)]).sum()
            penalty = 0.5 * float(np.sum(est.coef_ ** 2))
            rows.append([name, label, f"{np.median(times) * 1e3:.1f}", f"{loss + penalty:.6f}",
                         f"{est.score(X_te, y_te):.3f}"])
    table, md = _table("BoundLogisticRegression vs scikit-learn (C = 1)",
                       ["data", "estimator", "fit ms (median of 3)", "objective", "test accuracy"],
                       rows)
    console.print(table)
    return md


def solver_convergence(out: Path, console: Console) -> str:
    """Every solver on weakly regularized wine (C = 10): objective gap vs iterations and time."""
    from zbound.datasets import design_matrix, load_wine
    from zbound.models.multinomial import MultinomialLogistic
    from zbound.solvers import DEFAULT_METHOD, METHODS, minimize

    ds = load_wine()
    X = design_matrix(ds.X)
    model = MultinomialLogistic(X, ds.y, reg=1.0 / 10.0)
    x0 = np.zeros(model.n_params)
    ref = minimize(model, x0, method="newton", tol=1e-12, max_iter=200)
    f_star = ref.fun
    target = f_star + 1e-6 * abs(f_star)
    results = {}
    for method in METHODS:
        results[method] = minimize(model, x0, method=method, target=target, max_iter=5000)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    rows = []
    for method, res in results.items():
        gap = np.maximum(res.trace.objective - f_star, 1e-16)
        axes[0].semilogy(np.arange(len(gap)), gap, label=method)
        axes[1].semilogy(res.trace.seconds, gap, label=method)
        peer = "peer" if METHODS[method].peer else ("library default" if method == DEFAULT_METHOD
                                                    else "library")
        t = res.trace.time_to(target)
        rows.append([method, peer, str(res.target_reached), str(res.nit), str(res.n_evals),
                     "-" if t is None else f"{t * 1e3:.1f}"])
    for ax, xl in zip(axes, ("iteration", "seconds")):
        ax.set_xlabel(xl)
        ax.set_ylabel("J - J*")
        ax.set_xscale("log" if xl == "seconds" else "linear")
        ax.grid(alpha=0.3)
    axes[0].set_xlim(0, 200)
    axes[1].legend(fontsize=7)
    fig.suptitle("Multinomial logistic regression on wine, C = 10 (weak regularization)")
    fig.tight_layout()
    fig.savefig(out / "solver_convergence.png", dpi=110)
    plt.close(fig)
    table, md = _table("Solvers to 1e-6 relative suboptimality (wine, C = 10)",
                       ["method", "kind", "reached", "iterations", "evaluations", "ms"], rows)
    console.print(table)
    return md + "\n\n![convergence](solver_convergence.png)"


def ising_bounds(console: Console) -> str:
    """Quantum (plain and greedy), TRW and log-det upper bounds against exact log Z."""
    import warnings

    from zbound.ising import exact as ising_exact
    from zbound.ising import generators
    from zbound.ising.hierarchy import greedy_features
    from zbound.ising.logdet import logdet_bound
    from zbound.ising.quantum import quantum_bound
    from zbound.ising.trw import trw_bound

    def trw(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = trw_bound(m)
        return res.bound, res.converged

    rows = []
    for d in (8, 12):
        model = generators.gaussian_model(d, random_state=d)
        truth = ising_exact.log_partition(model)
        entries = {
            "quantum (1, x)": lambda m=model: (quantum_bound(m).bound, True),
            "quantum, greedy k = 5": lambda m=model: (greedy_features(m, 5).bound, True),
            "TRW (optimized rho)": trw,
            "log-det (CVXPY)": lambda m=model: (logdet_bound(m).bound, True),
        }
        for name, fn in entries.items():
            start = time.perf_counter()
            value, guaranteed = (fn(model) if name.startswith("TRW") else fn())
            secs = time.perf_counter() - start
            rows.append([str(d), name, f"{value:.4f}", f"{truth:.4f}",
                         f"{(value - truth) / d:.4f}",
                         "yes" if guaranteed else "no (messages did not converge)",
                         f"{secs:.2f}"])
    table, md = _table("Upper bounds on Ising log Z (Gaussian parameters, complete graph)",
                       ["d", "method", "bound", "exact", "(bound - exact) / d", "guaranteed",
                        "seconds"], rows)
    console.print(table)
    return md


def run_demo(out: str | Path = "demo-out") -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    console = Console()
    start = time.perf_counter()
    sections = ["# zbound demo", ""]
    steps = [
        ("Alg. 1 bound on log Z", lambda: bound_along_line(out)),
        ("Estimator against scikit-learn", lambda: estimator_comparison(console)),
        ("Solvers on one objective", lambda: solver_convergence(out, console)),
        ("Ising log-partition bounds", lambda: ising_bounds(console)),
    ]
    for title, step in steps:
        console.rule(title)
        sections += [f"## {title}", "", step(), ""]
    elapsed = time.perf_counter() - start
    sections.append(f"Demo finished in {elapsed:.1f} s.")
    path = out / "report.md"
    path.write_text("\n".join(sections))
    console.print(f"Report written to {path} ({elapsed:.1f} s)")
    return path
