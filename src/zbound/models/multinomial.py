"""Multinomial logistic regression as a log-linear model (paper 003, eq. (1), softmax features).

J(theta) = sum_j [log sum_a exp(w_a^T x_j) - w_{y_j}^T x_j] + reg/2 ||theta||^2,
theta = vec(W), W of shape (n, d) row-major. The paper's regularizer (t lambda / 2)||theta||^2 is
reg = t * lambda; scikit-learn's C convention is reg = 1 / C.
"""

from __future__ import annotations

import numpy as np

from zbound._validation import check_design, check_reg
from zbound.bounds.curvature import KroneckerCurvature, SoftmaxCurvature
from zbound.bounds.multinomial import label_bound
from zbound.models._softmax import (
    class_major_product,
    class_major_scores,
    logsumexp_classes,
)
from zbound.models.base import Majorizer


class MultinomialLogistic:
    """Objective, gradient, Hessian and Alg. 1 majorizer of L2-regularized softmax regression.

    Parameters
    ----------
    X : (t, d) array or CSR matrix of inputs (append a bias column yourself if wanted)
    y : (t,) integer class indices in [0, n_classes)
    n_classes : int, default max(y) + 1
    reg : float >= 0, weight of reg/2 ||theta||^2
    """

    def __init__(self, X, y, n_classes: int | None = None, reg: float = 0.0):
        X = check_design(X, nonempty=True)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
        if not np.issubdtype(y.dtype, np.integer):
            raise TypeError(f"y must hold integer class indices, got dtype {y.dtype}")
        n = int(y.max()) + 1 if n_classes is None else int(n_classes)
        if y.min() < 0 or y.max() >= n:
            raise ValueError(f"class indices must lie in [0, {n}), got [{y.min()}, {y.max()}]")
        if n < 2:
            raise ValueError("multinomial logistic regression needs at least 2 classes")
        self.X = X
        self.y = y.astype(np.intp)
        self.n_classes = n
        self.n_features = X.shape[1]
        self.n_params = n * X.shape[1]
        self.reg = check_reg(reg)
        # sum_j f_j(y_j) = vec(Y^T X), constant across iterations; sum_j s_j(y_j) = theta . it.
        Y = np.zeros((n, X.shape[0]))
        Y[self.y, np.arange(X.shape[0])] = 1.0
        self._observed = class_major_product(Y, X).ravel()
        self.n_evals = 0

    # -- internals: scores class-major, (n_classes, t) (see zbound.models._softmax) ----------
    def _scores_t(self, theta):
        return class_major_scores(self.X, theta.reshape(self.n_classes, self.n_features))

    def _value_from(self, theta, lse):
        return float(lse.sum() - theta @ self._observed + 0.5 * self.reg * (theta @ theta))

    def _grad_from(self, theta, PT):
        g = class_major_product(PT, self.X).ravel()
        g -= self._observed
        g += self.reg * theta
        return g

    def _value_grad_p(self, theta):
        self.n_evals += 1
        ST = self._scores_t(theta)
        lse, s = logsumexp_classes(ST)
        ST /= s                                             # P^T
        return self._value_from(theta, lse), self._grad_from(theta, ST), ST

    # -- Model protocol ----------------------------------------------------------------------
    def value(self, theta: np.ndarray) -> float:
        self.n_evals += 1
        return self._value_from(theta, logsumexp_classes(self._scores_t(theta))[0])

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        f, g, _ = self._value_grad_p(theta)
        return f, g

    def value_grad_hessian(self, theta: np.ndarray):
        """Value, gradient and exact Hessian sum_j (diag p_j - p_j p_j^T) (x) x_j x_j^T + reg I."""
        f, g, PT = self._value_grad_p(theta)
        return f, g, SoftmaxCurvature(self.X, PT.T, self.reg, complete=True)

    def hessian(self, theta: np.ndarray) -> KroneckerCurvature:
        return self.value_grad_hessian(theta)[2]

    def majorizer(self, theta: np.ndarray, order: str = "descending") -> Majorizer:
        """Alg. 1 bound on every log Z_j, summed: curvature sum_j B_j (x) x_j x_j^T + reg I."""
        self.n_evals += 1
        theta = np.asarray(theta, dtype=np.float64)
        S = np.ascontiguousarray(self._scores_t(theta).T)
        log_z, P, B = label_bound(S, order)
        value = self._value_from(theta, log_z)
        return Majorizer(theta, value, self._grad_from(theta, P.T),
                         KroneckerCurvature(self.X, B, self.reg))

    def predict_proba(self, theta: np.ndarray, X=None) -> np.ndarray:
        if X is None:
            ST = self._scores_t(theta)
        else:
            ST = np.ascontiguousarray(np.asarray(
                X @ theta.reshape(self.n_classes, self.n_features).T).T)
        _, s = logsumexp_classes(ST)
        ST /= s
        return ST.T
