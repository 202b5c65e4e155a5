"""Problems of ``logreg-small``: data loading, :class:`Problem`, the reference optimum and target,
the shared start points, and the cells (task, data set, setting) of a run.

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

import math
import warnings
import zlib
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from zbound.bench.suites.logreg_small.config import REL_TARGET, START_SCALE, Config
from zbound.solvers.linesearch import armijo_search

#: Design-matrix columns (features + bias) of the Table 3 sets in the paper.
PAPER_DIMS = {"bupa": 7, "wine": 14, "spect": 23, "ionosphere": 34, "hepatitis": 20}


@dataclass
class Problem:
    """One cell: the data, the regularization and the target every method has to reach.

    ``lam`` (Table 3: reg = t * lam) or ``C`` (weak regime: reg = 1 / C) is the value the
    setting names; the other is None.
    """

    task: str
    dataset: str
    setting: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    reg: float
    f_star: float
    target: float
    reference: dict[str, Any]
    lam: float | None = None
    C: float | None = None

    @property
    def group(self) -> str:
        return f"{self.task}/{self.dataset}/{self.setting}"

    def model(self):
        from zbound.models.multinomial import MultinomialLogistic

        return MultinomialLogistic(self.X, self.y, self.n_classes, self.reg)

    def describe(self) -> dict[str, Any]:
        """The cell's numbers, stored in every record's metrics (the report reads them there):
        lambda, C, reg, t (samples), d (design columns, bias included), n_classes, f_star."""
        return {"lambda": self.lam, "C": self.C, "reg": self.reg, "t": int(self.X.shape[0]),
                "d": int(self.X.shape[1]), "n_classes": int(self.n_classes),
                "f_star": self.f_star}


def load_design(name: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Design matrix (standardized, bias column), labels and number of classes of a data set."""
    from zbound.datasets import design_matrix, load

    ds = load(name)
    X = np.ascontiguousarray(design_matrix(ds.X), dtype=np.float64)
    y = np.asarray(ds.y, dtype=np.int64)
    return X, y, int(y.max()) + 1


def sklearn_C(reg: float, n_classes: int) -> float:
    """scikit-learn's C whose solution is our optimum.

    scikit-learn minimizes C sum_j loss_j + 1/2 ||w||^2. With >= 3 classes its multinomial model
    has our parametrization (coef_ = W), so C = 1 / reg. With 2 classes it fits one vector w
    with p(y=1) = sigmoid(w^T x), while ours has w_0, w_1 with p(y=1) = sigmoid((w_1 - w_0)^T x);
    at our optimum w_0 = -w_1 (the loss depends on w_1 - w_0 only, and the penalty is smallest
    there), so w = w_1 - w_0 = 2 w_1 and reg/2 (||w_0||^2 + ||w_1||^2) = reg/4 ||w||^2. Dividing
    scikit-learn's objective by C gives sum loss + 1/(2C) ||w||^2, equal to ours when C = 2/reg.
    """
    return (2.0 if n_classes == 2 else 1.0) / reg


def sklearn_theta(coef: np.ndarray, n_classes: int) -> np.ndarray:
    """Our theta from scikit-learn's ``coef_`` (see :func:`sklearn_C`)."""
    coef = np.asarray(coef, dtype=np.float64)
    if n_classes == 2:
        w = coef.ravel()
        return np.concatenate([-0.5 * w, 0.5 * w])
    return coef.ravel().copy()


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


def start_points(dataset: str, n_starts: int, p: int) -> np.ndarray:
    """The shared random starts N(0, 0.01^2), fixed per data set (same for every setting)."""
    rng = np.random.default_rng(zlib.crc32(dataset.encode()))
    return START_SCALE * rng.standard_normal((n_starts, p))


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
                  data: tuple[np.ndarray, np.ndarray, int]) -> Problem:
    """The cell's problem with its reference optimum f* and target f* + REL_TARGET |f*|.

    Table 3 regime: reg = t * lam (the paper's (t lambda / 2)||theta||^2, t samples); weak
    regime: reg = 1 / C (scikit-learn's convention).
    """
    X, y, K = data
    reg = X.shape[0] * lam if lam is not None else 1.0 / C
    prob = Problem(task, dataset, setting, X, y, K, reg, math.nan, math.nan, {}, lam=lam, C=C)
    ref = reference_optimum(prob.model())
    f_star = ref.pop("f_star")
    ref.pop("theta_star")
    return replace(prob, f_star=f_star, target=f_star + REL_TARGET * abs(f_star), reference=ref)
