"""``zbound demo``: the main job on bundled data (scikit-learn's sets and synthetic models).

1. The Alg. 1 bound on log Z along a line, next to the exact log Z and its second-order Taylor
   expansion (which is not a bound).
2. BoundLogisticRegression against scikit-learn's LogisticRegression on wine, iris, breast cancer,
   digits and a synthetic softmax problem: fit time, objective, test accuracy.
3. Convergence of every solver on one objective (weakly regularized wine): objective gap against
   iterations and seconds.
4. Upper bounds on an Ising log-partition function (quantum relaxation, TRW, log-det) against the
   exact value.

Timing rules, for every time the demo prints: one BLAS thread (``threadpool_limits(1)``: these
problems are small, and on a 2-core machine extra BLAS threads only add synchronization, which
can make a peer look many times slower than it is); the compared methods alternate over
the repeats (A B A B ...); medians are reported; time ratios are printed as measured, whichever
side wins. The machine (CPU count, platform) and the BLAS thread count are printed with them.

Writes ``OUT/report.md`` and PNG figures, prints the tables, and takes about 20 s on two cores.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from sklearn.exceptions import ConvergenceWarning

from .report import table as markdown_table
from .timing import time_alternating

REPEATS = 3
"""Timed repeats per method (alternating); every printed time is the median over them."""

# Library methods of zbound.solvers.minimize; the others in SOLVER_METHODS are peers (SciPy's
# solvers and the library's own baseline Newton and steepest descent).
LIBRARY_METHODS = ("newton-bound", "bound", "squarem")
SOLVER_METHODS = LIBRARY_METHODS + ("lbfgs", "bfgs", "cg", "newton-cg", "newton", "steepest")


def _table(title: str, columns: list[str], rows: list[list[str]]) -> tuple[Table, str]:
    table = Table(title=title)
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*r)
    return table, "\n".join(markdown_table(columns, rows))


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bound_along_line(out: Path, console: Console) -> str:
    """Figure: log Z, the Alg. 1 bound (two orders) and the Taylor quadratic along a line; the
    terminal gets the numbers the figure shows."""
    from scipy.special import logsumexp

    from zbound import quadratic_bound

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
    gaps = {}
    for order, style in (("descending", "-"), ("given", "--")):
        qb = quadratic_bound(features, theta0, order=order)
        values = qb.evaluate(thetas)
        gaps[order] = values - exact
        ax.plot(s, values, style, label=f"Alg. 1 bound, {order} order")
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
    ax.set_title("Quadratic upper bound on log Z\n(Jebara & Choromanska 2012, Alg. 1)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "bound_along_line.png", dpi=110)
    plt.close(fig)
    below = float(np.min(taylor - exact))
    lines = [f"log Z of {n} configurations in {d} parameters, along a line through theta0 "
             f"(steps -6..6): the bound touches log Z at theta0 (value and gradient) and stays "
             f"above it everywhere on the line."]
    for order, gap in gaps.items():
        lines.append(f"- {order} order: bound - log Z from {gap.min():.2e} (at theta0) to "
                     f"{gap.max():.2f} (at the ends)")
    lines.append(f"- the 2nd-order Taylor expansion, not a bound, falls {-below:.2f} below log Z")
    for line in lines:
        console.print(line)
    return "\n".join(lines) + "\n\n![bound](bound_along_line.png)"


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


def _load_thread_pools() -> None:
    """Import what the demo times, so that their BLAS and OpenMP pools exist before the limit.

    ``threadpool_limits`` only limits libraries already loaded: scikit-learn's OpenMP runtime and
    SciPy's own OpenBLAS load with their modules, and would otherwise keep two threads each.
    """
    import scipy.optimize  # noqa: F401
    import sklearn.linear_model  # noqa: F401

    import zbound.estimators.logistic  # noqa: F401
    import zbound.ising.logdet  # noqa: F401
    import zbound.solvers  # noqa: F401


def _thread_counts() -> str:
    """Threads per kind of pool in force now, e.g. "blas 1 (2 libraries), openmp 1"."""
    from threadpoolctl import threadpool_info

    by_api: dict[str, list[int]] = {}
    for pool in threadpool_info():
        by_api.setdefault(pool["user_api"], []).append(pool["num_threads"])
    if not by_api:
        return "no BLAS or OpenMP thread pool found"
    parts = []
    for api, counts in sorted(by_api.items()):
        threads = "/".join(str(c) for c in sorted(set(counts)))
        libs = f" ({len(counts)} libraries)" if len(counts) > 1 else ""
        parts.append(f"{api} {threads}{libs}")
    return ", ".join(parts)


def machine_line() -> str:
    """The machine and thread settings every printed time was measured under."""
    return (f"Machine: {os.cpu_count()} CPUs, {platform.platform()}, Python "
            f"{platform.python_version()}. Threads during all timings: {_thread_counts()}. "
            f"Times are medians of {REPEATS} repeats, the compared methods alternating "
            f"(A B A B ...).")


def _faster(ours: float, theirs: float, peer: str) -> str:
    """Who is faster and by how much, from two median times, whichever side wins."""
    if ours <= theirs:
        return f"zbound {theirs / ours:.1f}x"
    return f"{peer} {ours / theirs:.1f}x"


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
            "sklearn": LogisticRegression(C=1.0, tol=1e-8, max_iter=10000),
        }
        timed = time_alternating({label: (lambda e=est, X=X_tr, y=y_tr: e.fit(X, y))
                                  for label, est in fits.items()}, repeats=REPEATS)
        ms = {label: timed[label]["median_s"] * 1e3 for label in fits}
        objective, accuracy = {}, {}
        for label, est in fits.items():
            proba = est.predict_proba(X_tr)
            loss = -np.log(proba[np.arange(len(y_tr)), np.searchsorted(est.classes_, y_tr)]).sum()
            objective[label] = loss + 0.5 * float(np.sum(est.coef_ ** 2))
            accuracy[label] = est.score(X_te, y_te)
        diff = objective["zbound"] - objective["sklearn"]
        rows.append([name, f"{ms['zbound']:.1f}", f"{ms['sklearn']:.1f}",
                     _faster(ms["zbound"], ms["sklearn"], "sklearn"),
                     f"{objective['zbound']:.6f} ({diff:+.0e})",
                     f"{accuracy['zbound']:.3f} / {accuracy['sklearn']:.3f}"])
    table, md = _table(
        "BoundLogisticRegression vs scikit-learn LogisticRegression (lbfgs), C = 1",
        ["data", "zbound fit ms", "sklearn fit ms", "faster", "objective (zbound - sklearn)",
         "test accuracy zbound / sklearn"], rows)
    console.print(table)
    note = ("Same objective (sum of log-losses + 1/2 ||W||^2 on standardized features), same "
            "data, both fitted to tol = 1e-8 (the objective column shows they reach the same "
            "optimum; at scikit-learn's default tol = 1e-4 it stops earlier, less accurately), "
            "one BLAS thread, the two fits alternating, median of "
            f"{REPEATS}. The \"faster\" column is the ratio of the medians, whichever side "
            "wins. With the default BLAS threads on a 2-core machine, scikit-learn's lbfgs "
            "(SciPy's L-BFGS-B) spends most of a small fit in thread synchronization, which "
            "can make it look many times slower on digits than it is; one thread excludes "
            "that.")
    console.print(note)
    return md + "\n\n" + note


def solver_convergence(out: Path, console: Console) -> str:
    """Every solver on weakly regularized wine (C = 10): objective gap vs iterations and time."""
    from zbound.datasets import design_matrix, load_wine
    from zbound.models.multinomial import MultinomialLogistic
    from zbound.solvers import minimize

    ds = load_wine()
    X = design_matrix(ds.X)
    n_classes = int(np.max(ds.y)) + 1
    model = MultinomialLogistic(X, ds.y, n_classes, reg=1.0 / 10.0)
    x0 = np.zeros(model.n_params)
    ref = minimize(model, x0, method="newton", tol=1e-12, max_iter=200)
    f_star = ref.fun
    target = f_star + 1e-6 * abs(f_star)
    default_method = minimize(model, x0, target=target, max_iter=5000).method
    timed = time_alternating(
        {m: (lambda m=m: minimize(MultinomialLogistic(X, ds.y, n_classes, reg=0.1), x0,
                                  method=m, target=target, max_iter=5000))
         for m in SOLVER_METHODS},
        repeats=REPEATS)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    rows = []
    for method in SOLVER_METHODS:
        res = timed[method]["result"]
        gap = np.maximum(np.asarray(res.trace.objective) - f_star, 1e-16)
        # library methods solid and wider, peers dashed: coinciding paths stay visible
        style = dict(lw=2.2, ls="-") if method in LIBRARY_METHODS else dict(lw=1.2, ls="--")
        axes[0].semilogy(np.arange(1, len(gap) + 1), gap, label=method, **style)
        axes[1].semilogy(res.trace.seconds, gap, label=method, **style)
        if method not in LIBRARY_METHODS:
            kind = "peer"
        else:
            kind = "library default" if method == default_method else "library"
        reached = res.fun <= target
        rows.append([method, kind, "yes" if reached else "no", str(res.nit), str(res.n_evals),
                     f"{timed[method]['median_s'] * 1e3:.1f}" if reached else "-"])
    for ax, xl in zip(axes, ("iteration (log scale, from 1)", "seconds")):
        ax.set_xlabel(xl)
        ax.set_ylabel("J(θ) − J*")
        ax.set_xscale("log")
        ax.axhline(target - f_star, color="0.4", linestyle="--", linewidth=0.8)
        ax.grid(alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center", fontsize=7)
    fig.suptitle("Multinomial logistic regression on wine, C = 10 (weak regularization)\n"
                 "J* = reference optimum (Newton to tol 1e-12); thin grey line: the target "
                 "J* + 1e-6 |J*|; solid: zbound's methods, dashed: peers", fontsize=9)
    fig.savefig(out / "solver_convergence.png", dpi=110)
    plt.close(fig)
    table, md = _table("Solvers to 1e-6 relative suboptimality (wine, C = 10)",
                       ["method", "kind", "reached", "iterations", "evaluations",
                        f"ms (median of {REPEATS})"], rows)
    console.print(table)
    plain = minimize(model, x0, method="bound")          # its own stopping rule, no target
    note = (f"Every method runs until its objective is within 1e-6 of the optimum J* (a "
            f"target: minimize(..., target=...)), at most 5000 iterations. Without a target a "
            f"solver stops by its own rule (gradient norm below tol, relative change below "
            f"ftol, or max_iter): plain Alg. 2 ('bound') reaches this target after "
            f"{timed['bound']['result'].nit} iterations, while minimize(model, x0, "
            f"method='bound') with its defaults ends {plain.status.name} after {plain.nit} "
            f"iterations ({'converged' if plain.converged else 'not converged'}).")
    console.print(note)
    return md + "\n\n" + note + "\n\n![convergence](solver_convergence.png)"


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
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = trw_bound(m, rho_steps=10)
        # the returned value is the tree-decomposition certificate whether or not the
        # messages converged (docs/ising.md); non-convergence only makes it looser
        note = f" ({res.rho_steps} rho steps" + ("" if res.converged else
                                                ", messages not converged to 1e-6") + ")"
        return res.bound, res.certified, note

    def logdet(m):
        # the relaxation's optimal value bounds log Z; a solve that stops short is not certified
        res = logdet_bound(m)
        return res.bound, res.converged, "" if res.converged else f" ({res.message})"

    rows = []
    for d in (8, 12):
        model = generators.gaussian_model(d, random_state=d)
        truth = ising_exact.log_partition(model)
        entries = {
            "quantum (1, x)": lambda m=model: (quantum_bound(m).bound, True, ""),
            "quantum, greedy k = 5": lambda m=model: (greedy_features(m, 5).bound, True, ""),
            "TRW (optimized rho)": lambda m=model: trw(m),
            "log-det (CVXPY)": lambda m=model: logdet(m),
        }
        timed = time_alternating(entries, repeats=REPEATS)
        for name in entries:
            value, guaranteed, note = timed[name]["result"]
            rows.append([str(d), name, f"{value:.4f}", f"{truth:.4f}",
                         f"{(value - truth) / d:.4f}",
                         ("yes" if guaranteed else "no") + note,
                         f"{timed[name]['median_s']:.3f}"])
    table, md = _table("Upper bounds on Ising log Z (Gaussian parameters, complete graph)",
                       ["d", "method", "bound", "exact", "(bound - exact) / d", "guaranteed",
                        f"seconds (median of {REPEATS})"], rows)
    console.print(table)
    return md


def run_demo(out: str | Path = "demo-out") -> Path:
    """Run the four parts, print their tables, write ``out/report.md`` and figures into ``out``.

    Everything runs with one BLAS thread; returns the report's path.
    """
    from threadpoolctl import threadpool_limits

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    console = Console()
    start = time.perf_counter()
    sections = ["# zbound demo", ""]
    steps = [
        ("Alg. 1 bound on log Z", lambda: bound_along_line(out, console)),
        ("Estimator against scikit-learn", lambda: estimator_comparison(console)),
        ("Solvers on one objective", lambda: solver_convergence(out, console)),
        ("Ising log-partition bounds", lambda: ising_bounds(console)),
    ]
    _load_thread_pools()
    with threadpool_limits(limits=1):
        machine = machine_line()
        console.print(machine)
        sections += [machine, ""]
        for title, step in steps:
            console.rule(title)
            sections += [f"## {title}", "", step(), ""]
    elapsed = time.perf_counter() - start
    sections.append(f"Demo finished in {elapsed:.1f} s.")
    path = out / "report.md"
    path.write_text("\n".join(sections))
    console.print(f"Report written to {path} ({elapsed:.1f} s)")
    return path
