"""Weighted logistic regression with a per-parameter L2 penalty: the estimator's objective.

:class:`PenalizedLogistic` is what :class:`zbound.BoundLogisticRegression` minimizes, in
scikit-learn's convention (sample weights, unpenalized intercepts, one weight vector for two
classes). :class:`PenalizedCurvature` adds the penalty to a Kronecker-structured curvature.
"""

from __future__ import annotations

import numpy as np

from zbound.bounds.curvature import Curvature, KroneckerCurvature, SoftmaxCurvature
from zbound.bounds.multinomial import label_bound
from zbound.models._softmax import (
    class_major_product,
    class_major_scores,
    logsumexp_classes,
)
from zbound.models.base import Majorizer


class PenalizedCurvature(Curvature):
    """sum_j B_j (x) x_j x_j^T + diag(penalty) + center * u u^T, never formed unless asked.

    ``penalty`` (p,) is the per-parameter L2 weight (0 on intercepts); ``u`` (p,) is the 0/1
    indicator of the intercept entries and ``center`` >= 0 the weight of the rank-one term that
    pins the mean intercept (see :class:`PenalizedLogistic`). It wraps a
    :class:`KroneckerCurvature` instead of subclassing it: solvers take fast paths on that type
    that read its ``X``, ``B`` and scalar ``reg`` directly and would drop the penalty.
    """

    def __init__(self, kron: KroneckerCurvature, penalty: np.ndarray, u: np.ndarray,
                 center: float):
        self.kron = kron
        self.shape = self.kron.shape
        self.penalty = penalty
        self.u = u
        self.center = float(center)

    def matvec(self, v):
        out = self.kron.matvec(v)
        out += self.penalty * v
        if self.center:
            out += (self.center * float(self.u @ v)) * self.u
        return out

    def diagonal(self):
        diag = self.kron.diagonal() + self.penalty
        if self.center:
            diag += self.center * self.u
        return diag

    def diagonal_blocks(self):
        """Class blocks of the Kronecker sum plus the penalty (and centering) on each block."""
        blocks = self.kron.diagonal_blocks()
        n, d, _ = blocks.shape
        idx = np.arange(d)
        blocks[:, idx, idx] += (self.penalty + self.center * self.u).reshape(n, d)
        return blocks

    def to_dense(self):
        dense = self.kron.to_dense()
        dense.flat[:: dense.shape[0] + 1] += self.penalty
        if self.center:
            dense += self.center * np.outer(self.u, self.u)
        return dense


class PenalizedLogistic:
    """Weighted softmax log-loss with a per-parameter L2 penalty, as a zbound Model.

    J(theta) = sum_j s_j [log sum_a exp(S_ja) - S_{j, y_j}] + 1/2 sum_i pen_i theta_i^2
               + center/2 (u^T theta)^2,

    theta = vec(W), W of shape (k, d) row-major, X of shape (t, d) (the intercept, if any, is a
    column of ones in X). Multinomial: k = n_classes and S = X W^T. Binary: k = 1 and
    S = [0, X w] (class 0 is the reference), which is exactly scikit-learn's binary logistic
    loss. The label bound of Alg. 1 (``label_bound``) restricted to the free classes is a valid
    majorizer of the restricted objective.

    With unpenalized intercepts the multinomial objective is flat along "add c to every
    intercept" (the Hessian and the bound curvature both annihilate it: B_j 1 = 0). The term
    center/2 (u^T theta)^2, u the intercept indicator (the last column of each class), is zero
    on the sum-zero representative and makes the curvature definite without moving W or the
    centered intercepts. When bounds on the intercepts cut the flat direction, the sum-zero
    point may be infeasible and the term could trade objective for centering, so the estimator
    then uses a weight 1e-8 times smaller: enough to keep the step QP definite (a QP solver may
    stop short on a singular one), and a gradient perturbation far below ``tol``.

    Inputs are the estimator's, already validated: X float64 ndarray or CSR, y (t,) integer
    class indices, penalty (k d,), sample_weight (t,) >= 0.
    """

    def __init__(self, X, y, n_classes: int, penalty: np.ndarray, sample_weight: np.ndarray,
                 center: float = 0.0):
        self.X = X
        self.y = np.asarray(y, dtype=np.intp)
        self.n_classes = int(n_classes)
        self.binary = self.n_classes == 2
        self.k = 1 if self.binary else self.n_classes
        self.d = X.shape[1]
        self.n_params = self.k * self.d
        self.penalty = np.asarray(penalty, dtype=np.float64)
        self.sw = np.asarray(sample_weight, dtype=np.float64)
        self.center = float(center)
        self.u = np.zeros(self.n_params)
        self.u[self.d - 1 :: self.d] = 1.0
        # sum_j s_j S_{j, y_j} = theta . vec(sum_j s_j e_{y_j} x_j^T) over the free classes
        t = X.shape[0]
        Y = np.zeros((self.n_classes, t))
        Y[self.y, np.arange(t)] = self.sw
        if self.binary:
            Y = Y[1:]
        self._observed = class_major_product(Y, X).ravel()
        self.n_evals = 0

    # -- internals: scores class-major, (n_classes, t) -----------------------------------------
    def _scores_t(self, theta):
        ST = class_major_scores(self.X, theta.reshape(self.k, self.d))
        if self.binary:
            ST = np.vstack([np.zeros((1, ST.shape[1])), ST])
        return ST

    def _penalty_value(self, theta):
        val = 0.5 * float(self.penalty @ (theta * theta))
        if self.center:
            val += 0.5 * self.center * float(self.u @ theta) ** 2
        return val

    def _value_from(self, theta, lse):
        return float(self.sw @ lse - theta @ self._observed) + self._penalty_value(theta)

    def _grad_from(self, theta, PT):
        """Gradient from the probabilities of the free classes, class-major (k, t)."""
        R = PT * self.sw
        g = class_major_product(R, self.X).ravel()
        g -= self._observed
        g += self.penalty * theta
        if self.center:
            g += self.center * float(self.u @ theta) * self.u
        return g

    def _value_grad_p(self, theta):
        self.n_evals += 1
        ST = self._scores_t(theta)
        lse, s = logsumexp_classes(ST)
        ST /= s                                             # P^T
        free = ST[1:] if self.binary else ST
        return self._value_from(theta, lse), self._grad_from(theta, free), free

    # -- Model protocol (zbound.models.base.Model) ----------------------------------------------
    def value(self, theta):
        self.n_evals += 1
        return self._value_from(theta, logsumexp_classes(self._scores_t(theta))[0])

    def value_and_grad(self, theta):
        f, g, _ = self._value_grad_p(theta)
        return f, g

    def value_grad_hessian(self, theta):
        """Value, gradient and the penalized softmax Hessian (structured products; binary:
        the free class only, whose probabilities do not sum to one)."""
        f, g, PT = self._value_grad_p(theta)
        kron = SoftmaxCurvature(self.X, PT.T, 0.0, weights=self.sw,
                                complete=not self.binary)
        return f, g, PenalizedCurvature(kron, self.penalty, self.u, self.center)

    def hessian(self, theta):
        return self.value_grad_hessian(theta)[2]

    def majorizer(self, theta, order: str = "descending") -> Majorizer:
        """Alg. 1 on every sample's label vectors, weighted and summed, plus the penalty."""
        self.n_evals += 1
        theta = np.asarray(theta, dtype=np.float64)
        S = np.ascontiguousarray(self._scores_t(theta).T)
        log_z, P, B = label_bound(S, order)
        if self.binary:
            P, B = P[:, 1:], B[:, 1:, 1:]
        kron = KroneckerCurvature(self.X, B * self.sw[:, None, None], 0.0)
        return Majorizer(theta, self._value_from(theta, log_z), self._grad_from(theta, P.T),
                         PenalizedCurvature(kron, self.penalty, self.u, self.center))


__all__ = ["PenalizedLogistic", "PenalizedCurvature"]
