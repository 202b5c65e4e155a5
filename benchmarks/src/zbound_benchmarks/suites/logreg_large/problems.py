"""Problems of ``logreg-large``: the data, and each cell's reference optimum and targets (the
objective and the maps from a peer's solution are
:class:`zbound_benchmarks.suites.logreg.Problem`'s).

Table 1 cells (task ``table1``)
    The paper's objective on its design: ``MultinomialLogistic(X, y, n_classes, reg)``, J(theta)
    = sum_j log-loss_j + reg/2 ||theta||^2 with reg = t lambda (the paper's (t lambda / 2)
    ||theta||^2, t training rows), X = the data set's own features plus a bias column (penalized
    like every other parameter), so d = n_classes x (features + 1) as in Table 1: SRBCT
    4 x 2309 = 9236, Text 2 x 11961 = 23922. The paper's 90/10 split, stratified, seed 0: the
    objective is on the 90%. Target: the objective of SciPy L-BFGS-B's solution from 0 under
    the paper's termination rule (relative change of f below 1e-6) plus 1e-4 of its magnitude.

Larger-data cells (task ``large``; task ``estimator``: the same objective on SRBCT, the estimator
against scikit-learn only)
    scikit-learn's convention, ``BoundLogisticRegression``'s objective
    (``zbound.models.multinomial.logistic_objective``): sum of log-losses + 1/(2C) ||W||^2,
    intercepts unpenalized (binary: one weight vector, class 0 the reference; multiclass:
    softmax over all classes plus the estimator's intercept-centering term, zero at the
    sum-zero intercepts that every peer's solution is mapped to). Targets: f* + rel |f*| for
    rel = 1e-3 (loose) and 1e-8 (tight), f* the lower of two tightly converged reference runs
    (SciPy L-BFGS-B and the default solver).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from zbound_benchmarks.harness import timed
from zbound_benchmarks.suites.logreg import Data, Problem, with_bias
from zbound_benchmarks.suites.logreg_large.config import PAPER_EPS, PAPER_LAMBDA, TARGETS
from zbound_benchmarks.timing import budget_callback


def load_paper(name: str, seed: int = 0) -> Data:
    """SRBCT or the SSL Text set: the paper's 90/10 split (stratified), training part, raw
    features (Text: unit-norm rows, sparse)."""
    from zbound.datasets import load_srbct, load_ssl_text, split_dataset

    ds = {"srbct": load_srbct, "ssl-text": load_ssl_text}[name]()
    t_all = ds.X.shape[0]
    ds = split_dataset(ds, test_size=0.1, random_state=seed)
    y = np.asarray(ds.y, dtype=np.int64)
    return Data(name, ds.X, y, int(ds.y.max()) + 1,
                f"{ds.X.shape[0]} of {t_all} rows (90/10 split, stratified, seed {seed}), "
                f"{ds.X.shape[1]} raw features + bias")


def _subsample(ds, rows: int, seed: int):
    from zbound.datasets import split_dataset

    part = split_dataset(replace(ds, X_test=None, y_test=None), test_size=int(rows),
                         random_state=seed)
    return part.X_test, part.y_test


def load_large(name: str, synthetic_rows: int = 200_000, kmnist_rows: int | None = None,
               seed: int = 0) -> Data:
    """adult (official training file, one-hot, standardized), KMNIST (the 10000 test images,
    80/20 split, pixels / 255; optionally a stratified subsample of the training part),
    digits (standardized, constant pixels dropped), the synthetic softmax problem (50 features,
    10 classes) or "synthetic-binary" (2000 x 20, 2 classes: a small two-class set for tests)."""
    from zbound.datasets import (
        fit_design,
        load_adult,
        load_digits,
        load_kmnist,
        make_multinomial,
    )

    if name == "adult":
        ds = load_adult()
        X = fit_design(ds.X, bias=False).transform(ds.X)
        note = (f"official training file, {X.shape[0]} x {X.shape[1]} (6 numeric + one-hot, "
                "'?' a category), standardized")
        y = ds.y
    elif name == "kmnist":
        ds = load_kmnist(test_size=0.2, random_state=seed)
        X, y = ds.X, ds.y
        note = ("only KMNIST's 10000 test images exist here: split 80/20 (stratified, seed "
                f"{seed}), the {X.shape[0]} training rows used, pixels / 255")
        if kmnist_rows is not None and kmnist_rows < X.shape[0]:
            X, y = _subsample(replace(ds, X=X, y=y), kmnist_rows, seed)
            note += f"; quick run: a stratified subsample of {kmnist_rows} of them"
    elif name == "digits":
        ds = load_digits()
        X = fit_design(ds.X, bias=False).transform(ds.X)
        y = ds.y
        note = f"scikit-learn's digits, {X.shape[0]} x {X.shape[1]} (constant pixels dropped), " \
               "standardized"
    elif name == "synthetic-binary":
        ds = make_multinomial(2000, 20, 2, random_state=seed)
        X, y = ds.X, ds.y
        note = f"make_multinomial(2000, 20 features, 2 classes, seed {seed}) (tests)"
    elif name == "synthetic":
        ds = make_multinomial(synthetic_rows, 50, 10, random_state=seed)
        X, y = ds.X, ds.y
        note = f"make_multinomial({synthetic_rows}, 50 features, 10 classes, seed {seed})"
        if synthetic_rows != 200_000:
            note += " (the full run has 200 000 rows)"
    else:
        raise ValueError(f"unknown larger data set {name!r}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    return Data(name, X, y, int(y.max()) + 1, note)



def reference(problem: Problem, budget_s: float) -> dict[str, Any]:
    """Reference values of a cell.

    Both tasks: f* = the lower of SciPy L-BFGS-B (tol 1e-12, no objective-change stop) and the
    default solver (tol 1e-12), each from 0 and stopped after ``budget_s``. Table 1 also: the
    paper's L-BFGS solution (SciPy L-BFGS-B from 0, relative objective change below 1e-6).
    """
    import scipy.optimize

    from zbound.solvers import DEFAULT_METHOD, minimize

    x0 = np.zeros(problem.n_params)
    out: dict[str, Any] = {}
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, method in (("lbfgs", "lbfgs"), ("default", DEFAULT_METHOD)):
            out[f"{name}_seconds"], r = timed(lambda method=method: minimize(
                problem.model(), x0, method=method, tol=1e-12, ftol=0.0, max_iter=10**6,
                callback=budget_callback(budget_s)))
            runs[name] = r
            out[f"f_{name}"] = float(r.fun)
            out[f"{name}_message"] = r.message
        if problem.paper:
            m = problem.model()
            res = scipy.optimize.minimize(m.value_and_grad, x0, jac=True, method="L-BFGS-B",
                                          options={"ftol": 1e-6, "gtol": 1e-6,
                                                   "maxiter": 10**6})
            out["f_lbfgs_paper"] = float(res.fun)
            out["lbfgs_paper_iterations"] = int(res.nit)
    f_star = min(out["f_lbfgs"], out["f_default"])
    out["f_star"] = f_star
    out["reference_rel_diff"] = abs(out["f_lbfgs"] - out["f_default"]) / max(1.0, abs(f_star))
    return out


def build(problem: Problem, budget_s: float) -> Problem:
    """The cell with its reference optimum and targets filled in."""
    ref = reference(problem, budget_s)
    f_star = ref["f_star"]
    if problem.paper:
        f_l = ref["f_lbfgs_paper"]
        targets = {"paper": f_l + PAPER_EPS * abs(f_l)}
        rel = {"paper": PAPER_EPS}
        f0 = float(problem.model().value(np.zeros(problem.n_params)))
        ref["f_at_zero"] = f0
        ref["zero_meets_target"] = bool(f0 <= targets["paper"])
    else:
        targets = {n: f_star + r * abs(f_star) for n, r in TARGETS.items()}
        rel = dict(TARGETS)
    return replace(problem, f_star=f_star, targets=targets, rel=rel, reference=ref)


def paper_problem(data: Data) -> Problem:
    lam = PAPER_LAMBDA[data.name]
    return Problem("table1", data.name, f"lambda={lam:g}", data, with_bias(data.X), lam=lam)


def large_problem(data: Data, C: float, task: str = "large") -> Problem:
    """A cell of scikit-learn's objective at ``C``: task "large" (the larger-data block) or
    "estimator" (``BoundLogisticRegression.fit`` against ``LogisticRegression.fit`` only)."""
    return Problem(task, data.name, f"C={C:g}", data, with_bias(data.X), C=float(C),
                   paper=False)

