"""Multinomial logistic regression as a log-linear model (paper 003, eq. (1), softmax features).

J(theta) = sum_j [log sum_a exp(w_a^T x_j) - w_{y_j}^T x_j] + reg/2 ||theta||^2,
theta = vec(W), W of shape (n, d) row-major. The paper's regularizer (t lambda / 2)||theta||^2 is
reg = t * lambda; scikit-learn's C convention is reg = 1 / C.
"""

from __future__ import annotations

import numpy as np

from zbound._validation import check_design
from zbound.bounds.curvature import KroneckerCurvature, SoftmaxCurvature
from zbound.bounds.multinomial import label_bound
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
        if not np.isfinite(reg) or reg < 0:
            raise ValueError(f"reg must be finite and >= 0, got {reg}")
        self.X = X
        self.y = y.astype(np.intp)
        self.n_classes = n
        self.n_features = X.shape[1]
        self.n_params = n * X.shape[1]
        self.reg = float(reg)
        self._rows = np.arange(X.shape[0])
        # sum_j f_j(y_j) = vec(Y^T X), constant across iterations.
        Y = np.zeros((X.shape[0], n))
        Y[self._rows, self.y] = 1.0
        self._observed = np.asarray(X.T @ Y).T.ravel()
        self.n_evals = 0

    # -- internals ---------------------------------------------------------------------------
    def _scores(self, theta):
        W = theta.reshape(self.n_classes, self.n_features)
        return np.asarray(self.X @ W.T)

    def _softmax(self, S):
        m = S.max(axis=1, keepdims=True)
        E = np.exp(S - m)
        s = E.sum(axis=1, keepdims=True)
        lse = (m + np.log(s)).ravel()
        return lse, E / s

    def _value_from(self, theta, S, lse):
        return float(lse.sum() - S[self._rows, self.y].sum() + 0.5 * self.reg * (theta @ theta))

    def _grad_from(self, theta, P):
        return np.asarray(self.X.T @ P).T.ravel() - self._observed + self.reg * theta

    # -- Model protocol ----------------------------------------------------------------------
    def value(self, theta: np.ndarray) -> float:
        self.n_evals += 1
        S = self._scores(theta)
        m = S.max(axis=1)
        lse = m + np.log(np.exp(S - m[:, None]).sum(axis=1))
        return self._value_from(theta, S, lse)

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        self.n_evals += 1
        S = self._scores(theta)
        lse, P = self._softmax(S)
        return self._value_from(theta, S, lse), self._grad_from(theta, P)

    def value_grad_hessian(self, theta: np.ndarray):
        """Value, gradient and exact Hessian sum_j (diag p_j - p_j p_j^T) (x) x_j x_j^T + reg I."""
        self.n_evals += 1
        S = self._scores(theta)
        lse, P = self._softmax(S)
        return (self._value_from(theta, S, lse), self._grad_from(theta, P),
                SoftmaxCurvature(self.X, P, self.reg))

    def hessian(self, theta: np.ndarray) -> KroneckerCurvature:
        return self.value_grad_hessian(theta)[2]

    def majorizer(self, theta: np.ndarray, order: str = "descending") -> Majorizer:
        """Alg. 1 bound on every log Z_j, summed: curvature sum_j B_j (x) x_j x_j^T + reg I."""
        self.n_evals += 1
        theta = np.asarray(theta, dtype=np.float64)
        S = self._scores(theta)
        log_z, P, B = label_bound(S, order)
        value = self._value_from(theta, S, log_z)
        return Majorizer(theta, value, self._grad_from(theta, P),
                         KroneckerCurvature(self.X, B, self.reg))

    def predict_proba(self, theta: np.ndarray, X=None) -> np.ndarray:
        S = self._scores(theta) if X is None else np.asarray(
            X @ theta.reshape(self.n_classes, self.n_features).T)
        return self._softmax(S)[1]
