"""The Fig. 1 problems: data, the mean-form objective, the L-BFGS reference optimum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax

from zbound.models.loss import SoftmaxLoss
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty


@dataclass
class Problem:
    """J(theta) = sum_j log-loss_j + reg/2 ||theta||^2 with reg = T lambda (its mean form J / T
    is the paper's L); binary problems use a reference class (one weight vector)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    lam: float
    model: Objective
    f_star: float = np.nan          # optimum of J / T
    theta_star: np.ndarray | None = None

    @property
    def T(self) -> int:
        return self.X.shape[0]

    @property
    def p(self) -> int:
        return self.model.n_params

    def mean_objective(self, theta) -> float:
        return self.model.value(theta) / self.T

    def test_loss(self, theta) -> tuple[float, float]:
        """Mean test log-loss and accuracy at theta."""
        W = theta.reshape(-1, self.X.shape[1])
        S = self.X_test @ W.T
        if self.n_classes == 2 and W.shape[0] == 1:
            S = np.hstack([np.zeros((S.shape[0], 1)), S])
        L = log_softmax(S, axis=1)
        rows = np.arange(S.shape[0])
        return float(-L[rows, self.y_test].mean()), float((S.argmax(1) == self.y_test).mean())


def _with_bias(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def load_data(name: str, seed: int = 0):
    """(X, y, X_test, y_test, n_classes): Adult one-hot (standardized with the training
    statistics), KMNIST's 10000 test images split 8000 / 2000, digits split 80 / 20; pixels
    scaled to [0, 1]; a bias column appended."""
    from zbound import datasets

    if name == "adult":
        ds = datasets.load_adult()
        mu, sd = ds.X.mean(0), ds.X.std(0)
        sd[sd == 0] = 1.0
        X, Xt = (ds.X - mu) / sd, (ds.X_test - mu) / sd
        return _with_bias(X), ds.y, _with_bias(Xt), ds.y_test, 2
    if name == "kmnist":
        ds = datasets.load_kmnist(test_size=2000, random_state=seed)
        return _with_bias(ds.X), ds.y, _with_bias(ds.X_test), ds.y_test, 10
    if name == "digits":
        ds = datasets.load_digits()
        rng = np.random.default_rng(seed)
        perm = rng.permutation(ds.X.shape[0])
        cut = int(0.8 * len(perm))
        X = ds.X / 16.0
        a, b = perm[:cut], perm[cut:]
        return _with_bias(X[a]), ds.y[a], _with_bias(X[b]), ds.y[b], 10
    raise ValueError(f"unknown data set {name!r}")


def build_problem(name: str, lam: float, seed: int = 0, max_rows: int | None = None) -> Problem:
    X, y, Xt, yt, n = load_data(name, seed)
    if max_rows is not None:
        X, y = X[:max_rows], y[:max_rows]
    y = np.asarray(y, dtype=np.intp)
    T = X.shape[0]
    loss = SoftmaxLoss(X, y, n, reference_class=n == 2)
    model = Objective(loss, L2Penalty(T * lam))
    return Problem(name, X, y, Xt, np.asarray(yt, dtype=np.intp), n, lam, model)


def reference_optimum(prob: Problem) -> None:
    """Full-batch L-BFGS (SciPy) to a tight tolerance: the optimum f* every gap is measured to."""
    from zbound.solvers import minimize

    res = minimize(prob.model, np.zeros(prob.p), method="lbfgs", tol=1e-11, max_iter=20000)
    prob.theta_star = res.x
    prob.f_star = res.fun / prob.T
