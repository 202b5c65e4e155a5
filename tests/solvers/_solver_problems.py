"""Problems shared by the solver tests (small, so the whole module runs in seconds)."""

from __future__ import annotations

import numpy as np

from zbound.models.loglinear import LogLinearModel
from zbound.models.multinomial import MultinomialLogistic


def logistic_problem(seed: int, t: int = 60, d: int = 4, n: int = 3, reg: float = 1.0,
                     separation: float = 1.5) -> MultinomialLogistic:
    """Random softmax regression with a bias column; ``separation`` scales the true weights
    (large = nearly separable = slow plain Alg. 2 when ``reg`` is small)."""
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.standard_normal((t, d - 1)), np.ones((t, 1))])
    W = separation * rng.standard_normal((n, d))
    S = X @ W.T
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(n, p=p) for p in P])
    y[:n] = np.arange(n)  # every class present
    return MultinomialLogistic(X, y, n_classes=n, reg=reg)


def loglinear_problem(seed: int, t: int = 25, n: int = 5, d: int = 3,
                      reg: float = 0.5) -> LogLinearModel:
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((t, n, d))
    log_prior = rng.standard_normal((t, n))
    log_prior[:, -1] = -np.inf  # a zero-weight configuration in every partition function
    observed = rng.integers(0, n - 1, size=t)
    return LogLinearModel(features, observed, log_prior=log_prior, reg=reg)


def reference_optimum(model, x0) -> tuple[np.ndarray, float]:
    """Tight Newton solution (the objectives here are strictly convex)."""
    from zbound.solvers import minimize

    res = minimize(model, x0, method="newton", tol=1e-13, max_iter=200)
    assert res.converged, res.message
    return res.x, res.fun
