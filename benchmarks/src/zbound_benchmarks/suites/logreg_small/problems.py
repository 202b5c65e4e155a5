"""Problems of ``logreg-small``: data loading, the reference optimum and target, and the cells
(task, data set, setting) of a run.

What is solved
    L2-regularized logistic regression in the library's softmax parametrization,
    ``MultinomialLogistic(X, y, n_classes, reg)``: J(theta) = sum_j log-loss_j + reg/2 ||theta||^2,
    theta = vec(W), W (n_classes, d). X is ``design_matrix(dataset.X)``: constant columns dropped,
    standardized, bias column appended, which gives the paper's dimensions (Bupa 7, Wine 14,
    SPECT heart test set 23, Ionosphere 34, Hepatitis 20 with mean imputation).

Target
    A reference optimum f* from SciPy BFGS at gtol 1e-10, confirmed and polished by Newton steps
    with the exact Hessian; target = f* + 1e-6 |f*| ("the solution BFGS converged to", paper).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from zbound.solvers.linesearch import armijo_search
from zbound_benchmarks.suites.logreg import Data, Problem
from zbound_benchmarks.suites.logreg_small.config import REL_TARGET, Config

#: Design-matrix columns (features + bias) of the Table 3 sets in the paper.
PAPER_DIMS = {"bupa": 7, "wine": 14, "spect": 23, "ionosphere": 34, "hepatitis": 20}


def load_design(name: str) -> Data:
    """The data set as a design matrix (constant columns dropped, standardized, a bias column
    last), its labels and number of classes."""
    from zbound.datasets import design_matrix, load

    ds = load(name)
    X = np.ascontiguousarray(design_matrix(ds.X), dtype=np.float64)
    y = np.asarray(ds.y, dtype=np.int64)
    return Data(name, X, y, int(y.max()) + 1, f"{X.shape[0]} x {X.shape[1]} design")


def reference_optimum(model) -> dict[str, Any]:
    """f* from SciPy BFGS (gtol 1e-10), then Newton steps with the exact Hessian as a check.

    Returns f_star (the lower of the two), both values, their relative difference, and the
    gradient norm at the polished point.
    """
    import scipy.linalg
    import scipy.optimize

    p = model.n_params
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = scipy.optimize.minimize(model.value_and_grad, np.zeros(p), jac=True,
                                      method="BFGS",
                                      options={"gtol": 1e-10, "maxiter": 50 * p + 2000})
    theta, f_bfgs = res.x, float(res.fun)
    f, g, H = model.value_grad_hessian(theta)
    newton_steps = 0
    for _ in range(30):
        if np.max(np.abs(g)) <= 1e-13 * max(1.0, abs(f)):
            break
        step = scipy.linalg.solve(H.to_dense(), g, assume_a="pos")
        found = armijo_search(lambda t, theta=theta, step=step: (model.value(theta - t * step),
                                                                 None),
                              f, -float(g @ step), 1.0, shrink="halve", min_step=1e-8,
                              accept=lambda t, v, f=f: v <= f)
        if found is None:
            break
        f_prev = f
        theta = theta - found[0] * step
        f, g, H = model.value_grad_hessian(theta)
        newton_steps += 1
        if f_prev - f <= 1e-16 * abs(f):
            break
    f_star = min(f_bfgs, float(f))
    return {
        "f_star": f_star,
        "f_bfgs": f_bfgs,
        "f_newton": float(f),
        "bfgs_newton_rel_diff": abs(f_bfgs - float(f)) / max(1.0, abs(f_star)),
        "bfgs_iterations": int(res.nit),
        "newton_polish_steps": newton_steps,
        "grad_inf_norm": float(np.max(np.abs(g))),
        "theta_star": theta,
    }


class Cell(NamedTuple):
    """One cell of a run; ``lam`` is set for task ``table3``, ``C`` for ``weak-l2``."""

    task: str
    dataset: str
    setting: str
    lam: float | None
    C: float | None


def cells(cfg: Config) -> list[Cell]:
    """(task, dataset, setting, lambda, C) for every cell of the run, in order."""
    out: list[Cell] = []
    for d in cfg.table3_sets:
        for lam in cfg.lambdas:
            out.append(Cell("table3", d, f"lambda={lam:g}", lam, None))
    for d in cfg.weak_sets:
        for C in cfg.weak_C_by_set.get(d, cfg.weak_C):
            out.append(Cell("weak-l2", d, f"C={C:g}", None, C))
    return out


def build_problem(task: str, dataset: str, setting: str, lam: float | None, C: float | None,
                  data: Data) -> Problem:
    """The cell's problem with its reference optimum f* and target f* + REL_TARGET |f*|.

    Table 3 regime: reg = t * lam (the paper's (t lambda / 2)||theta||^2, t samples); weak
    regime: reg = 1 / C (scikit-learn's convention); both on the paper's objective (the bias
    a penalized column, scikit-learn fitted without intercept).
    """
    prob = Problem(task, dataset, setting, data, data.X, lam=lam, C=C)
    ref = reference_optimum(prob.model())
    f_star = ref.pop("f_star")
    ref.pop("theta_star")
    prob.f_star, prob.reference = f_star, ref
    prob.targets, prob.rel = {"target": f_star + REL_TARGET * abs(f_star)}, {"target": REL_TARGET}
    return prob
