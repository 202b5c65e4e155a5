"""Mixtures of k experts with a softmax gate: likelihood, posteriors, EM objective, gradients.

The model (Jordan & Jacobs 1994; Fruytier, Mokhtari & Sanghavi, Sections 2-3)::

    P(z = j | x) = softmax_j(G x~),   j = 1..k     (gate G: (k - 1, p), expert 0 the reference)
    p(y | x, z = j) = N(y; b_j . x~, s2_j)         (linear experts)
                    = softmax_c(B_j x~)_y          (logistic experts, class 0 the reference)

with x~ = [x, 1] when an intercept is fitted (p = d + 1) and x~ = x otherwise (p = d). The
objective is the weighted mean negative log-likelihood plus an L2 penalty on the non-intercept
weights, ``reg / 2 * ||coef||^2``::

    L(theta) = sum_i v_i * -log sum_j P(z = j | x_i) p(y_i | x_i, z = j) + reg / 2 ||coef||^2

with v = sample_weight / sum(sample_weight). The EM objective at theta_t (eq. (7)) fixes the
responsibilities R = P(z | x, y; theta_t) and separates into the gate's soft-label softmax
regression and one weighted regression per expert; its gradient at theta = theta_t equals
grad L(theta_t) (Section 3), which the tests check against finite differences.

Parameters are one flat vector: ``vec(G)``, then the experts (linear: ``vec(Bl)`` (k, p), then
``log s2`` (k,) when the noise variance is fitted; logistic: ``vec(B)`` (k, m, p), m = n_classes
- 1). :class:`MoEProblem` packs and unpacks them (:meth:`MoEProblem.unpack`).

Nothing here imports :mod:`zbound.solvers` (models never do); the EM M-steps that call the
library's solvers live in :mod:`zbound.moe.em`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import log_softmax, logsumexp, softmax

from zbound.models.loss import Rows, SoftmaxLoss, check_design_magnitude, check_sample_weight
from zbound.models.softmax import class_major_product, class_major_scores, logsumexp_classes
from zbound.utils import logspace

_LOG_2PI = float(np.log(2.0 * np.pi))
#: a fitted noise variance's ceiling, relative to the weighted mean square of y
MAX_RELATIVE_VARIANCE = 1e6
EXPERTS = ("linear", "logistic")


class SoftLabelSoftmaxLoss(SoftmaxLoss):
    """Softmax loss with soft labels: sum_j s_j [log sum_a exp(S_ja) - sum_a R_ja S_ja].

    The gate's EM M-step (cross-entropy against the responsibilities R, rows summing to 1) and
    the symmetric experts' soft-label logistic regressions. Only the observed-feature term
    differs from :class:`~zbound.models.loss.SoftmaxLoss` (R replaces the one-hot labels), so
    the value, gradient, Hessian and the Alg. 1 majorizer (a bound on log Z_j, which does not
    depend on the labels) are inherited unchanged.

    Parameters
    ----------
    X : (t, d) array
    labels : (t, n_classes) non-negative, rows summing to 1
    sample_weight, reference_class, chunk_size, fit_intercept : as for SoftmaxLoss
    """

    def __init__(self, X, labels, sample_weight=None, reference_class: bool = True,
                 chunk_size: int | None = None, fit_intercept: bool = False):
        R = np.asarray(labels, dtype=np.float64)
        if R.ndim != 2 or R.shape[1] < 2:
            raise ValueError(f"soft labels must be a (t, n_classes >= 2) array, got {R.shape}")
        if not np.isfinite(R).all() or (R < 0).any():
            raise ValueError("soft labels must be finite and >= 0")
        if not np.allclose(R.sum(axis=1), 1.0, rtol=0, atol=1e-8):
            raise ValueError("soft labels must sum to 1 in every row")
        self.labels = R
        super().__init__(X, np.argmax(R, axis=1), R.shape[1], sample_weight, reference_class,
                         chunk_size, fit_intercept)

    def _chunk(self, a: int, b: int):
        whole = a == 0 and b == self.n_samples
        X = self.X if whole else self.X[a:b]
        R = self.labels if whole else self.labels[a:b]
        sw = self.sample_weight
        if sw is not None and not whole:
            sw = sw[a:b]
        Y = R.T if sw is None else R.T * sw
        observed = class_major_product(np.ascontiguousarray(Y[self.free:]), X,
                                       self.fit_intercept).ravel()
        return Rows(X, sw, None, observed)

    # value and gradient in the observed form, log Z - theta . observed (soft labels have no
    # single observed class for the residual form of SoftmaxLoss)
    def _value(self, theta, c):
        lse = logsumexp_classes(self._scores_t(theta, c.X))[0]
        return self._data_value(theta, lse, c.sw, c.observed)

    def _value_grad_p(self, theta, c, keep_p: bool = True):
        ST = self._scores_t(theta, c.X)
        lse, s = logsumexp_classes(ST)
        ST /= s                                         # P^T
        PT = ST[self.free:]
        return (self._data_value(theta, lse, c.sw, c.observed),
                self._grad_from(PT, c.X, c.sw, c.observed), PT)

    def subset(self, rows) -> SoftLabelSoftmaxLoss:
        sw = None if self.sample_weight is None else self.sample_weight[rows]
        return SoftLabelSoftmaxLoss(self.X[rows], self.labels[rows], sw, self.reference_class,
                                    None, self.fit_intercept)

    def reweighted(self, sample_weight) -> SoftLabelSoftmaxLoss:
        return SoftLabelSoftmaxLoss(self.X, self.labels, sample_weight, self.reference_class,
                                    self.chunk_size, self.fit_intercept)


@dataclass
class Params:
    """Unpacked parameters (views into the flat vector where possible)."""

    gate: np.ndarray            # (k - 1, p)
    coef: np.ndarray            # linear (k, p); logistic (k, m, p)
    log_var: np.ndarray | None  # (k,) log noise variances (linear experts), or None


def _log_sigmoid_rows(S: np.ndarray) -> np.ndarray:
    """log softmax over [0, S] along the last axis (reference class 0 prepended)."""
    zero = np.zeros(S.shape[:-1] + (1,))
    return log_softmax(np.concatenate([zero, S], axis=-1), axis=-1)


class GatedMixture(Protocol):
    """A mixture whose parameters split into the gate's and the experts'
    (``gate_slice``), with the value and gradient of its objective: what the first-order
    methods of the paper (Gradient EM, GD; and the Adam peer) need. :class:`MoEProblem` and
    the symmetric models have it."""

    def gate_slice(self): ...

    def value_and_grad(self, theta): ...


class MixtureLikelihood(Protocol):
    """What the mixture-of-experts solvers need of a model (:class:`MoEProblem` has it): the
    log joint log p(y, z = j | x) per sample and expert, the EM objective Q and its gradient
    at given responsibilities, the experts' responsibility mass, the parameter layout
    (``unpack``, ``gate_slice``), and the value and gradient of the objective."""

    def log_joint(self, theta): ...

    def q_value_and_grad(self, theta, R): ...

    def expert_mass(self, R): ...

    def unpack(self, theta): ...

    def gate_slice(self): ...

    def value_and_grad(self, theta): ...


class MoEProblem:
    """Data and objective of a mixture of k experts (see the module docstring).

    Parameters
    ----------
    X : (n, d) finite float array
    y : (n,) targets: real numbers (linear experts) or class indices 0..n_classes-1 (logistic)
    n_experts : int >= 1
    expert : "linear" or "logistic"
    n_classes : int >= 2 for logistic experts (default max(y) + 1)
    sample_weight : (n,) >= 0 with a positive sum, or None
    reg : float >= 0, L2 strength on the non-intercept gate and expert weights
    noise : None (fit one noise variance per linear expert) or a fixed variance > 0
    fit_intercept : bool, append the column of ones (x~ = [x, 1])
    min_variance : floor of a fitted noise variance, relative to the weighted variance of y
    units : (d,) positive or None: X holds the features divided by ``units`` (X = X_0 / u), and
        the penalty is on the weights of X_0 (strength reg / u^2 per column), so the problem is
        the one on X_0 in the coordinates theta = u theta_0; :meth:`original` maps back
    """

    def __init__(self, X, y, n_experts: int, expert: str = "linear", n_classes=None,
                 sample_weight=None, reg: float = 0.0, noise=None, fit_intercept: bool = True,
                 min_variance: float = 1e-6, units=None):
        if isinstance(n_experts, bool) or not isinstance(n_experts, int | np.integer) \
                or n_experts < 1:
            raise ValueError(f"the number of experts k must be an integer >= 1, got "
                             f"{n_experts!r}")
        if expert not in EXPERTS:
            raise ValueError(f"expert must be one of {EXPERTS}, got {expert!r}")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or inf")
        # entries whose sums over the rows would overflow: the error, before any statistic
        X = check_design_magnitude(X)[0]
        n = X.shape[0]
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}")
        reg = float(reg)
        if not (np.isfinite(reg) and reg >= 0):
            raise ValueError(f"reg must be finite and >= 0, got {reg}")
        sw = check_sample_weight(sample_weight, n)
        if sw is None:
            sw = np.ones(n)
        if not sw.sum() > 0:
            raise ValueError("sample_weight must have a positive sum")
        self.k = int(n_experts)
        self.expert = expert
        self.n_samples = n
        self.n_features = X.shape[1]
        self.fit_intercept = bool(fit_intercept)
        self.Xb = np.hstack([X, np.ones((n, 1))]) if self.fit_intercept else X
        self.p = self.Xb.shape[1]
        self.sample_weight = sw
        self.v = sw / sw.sum()
        self.reg = reg
        if expert == "linear":
            self._linear_targets(y, noise, min_variance)
        else:
            self._class_targets(y, n_classes)
        self._label_index = None            # logistic: (rows with y > 0, flat (y - 1, row))
        self.n_gate = (self.k - 1) * self.p
        self.n_coef = self.k * self.m * self.p
        self.fit_var = expert == "linear" and self.noise is None
        self.n_params = self.n_gate + self.n_coef + (self.k if self.fit_var else 0)
        self._penalty_layout(reg, units)

    def _linear_targets(self, y, noise, min_variance) -> None:
        """Real targets of Gaussian experts, the fixed noise variance (or None) and the
        variances' floor and ceiling, in units of y's spread and mean square."""
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or inf")
        self.y = y
        ybar = float(self.v @ y)
        self.y_var = max(float(self.v @ (y - ybar) ** 2), 1e-300)
        if noise is not None:
            noise = float(noise)
            if not (np.isfinite(noise) and noise > 0):
                raise ValueError(f"a fixed noise variance must be finite and > 0, got {noise}")
        self.noise = noise
        self.min_variance = float(min_variance) * self.y_var
        # the ceiling: an expert flatter than 1e6 times y's mean square explains nothing, and
        # its variance times the squared units of y must stay in float64's range
        self.max_variance = MAX_RELATIVE_VARIANCE * max(float(self.v @ y ** 2), 1e-300)
        self.n_classes = None
        self.m = 1

    def _class_targets(self, y, n_classes) -> None:
        """Class indices of logistic experts and their one-hot rows."""
        if y.dtype.kind not in "iu":
            raise TypeError(f"y must hold integer class indices for logistic experts, got "
                            f"dtype {y.dtype}")
        C = int(y.max()) + 1 if n_classes is None else int(n_classes)
        if C < 2:
            raise ValueError("logistic experts need at least 2 classes")
        if y.min() < 0 or y.max() >= C:
            raise ValueError(f"class indices must lie in [0, {C}), got [{y.min()}, {y.max()}]")
        n = y.shape[0]
        self.y = y.astype(np.intp)
        self.n_classes = C
        self.m = C - 1
        self.noise = None
        self.Y = np.zeros((n, C))
        self.Y[np.arange(n), self.y] = 1.0

    def _penalty_layout(self, reg: float, units) -> None:
        """The units of the columns of Xb (the ones column: 1) and the L2 strengths per column
        (0 on the intercept) and over the flat vector (0 on log variances)."""
        u = np.ones(self.p)
        if units is not None:
            units = np.asarray(units, dtype=np.float64)
            if units.shape != (self.n_features,) or not (np.isfinite(units).all()
                                                        and (units > 0).all()):
                raise ValueError(f"units must be ({self.n_features},) finite and > 0")
            u[: self.n_features] = units
        self.units = u
        ridge = reg / u**2
        if self.fit_intercept:
            ridge[-1] = 0.0
        self.ridge = ridge
        pen = np.zeros(self.n_params)
        pen[: self.n_gate + self.n_coef] = np.tile(ridge, (self.n_gate + self.n_coef) // self.p)
        self.penalty = pen

    # -- layout ---------------------------------------------------------------------------------
    def original(self, theta: np.ndarray) -> np.ndarray:
        """theta in the coordinates of the unscaled features (``units``): each weight divided
        by its column's unit, intercepts and log variances as they are."""
        out = np.array(theta, dtype=np.float64, copy=True)
        n = self.n_gate + self.n_coef
        out[:n].reshape(-1, self.p)[...] /= self.units
        return out

    def unpack(self, theta: np.ndarray) -> Params:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        gate = theta[: self.n_gate].reshape(self.k - 1, self.p)
        c = theta[self.n_gate: self.n_gate + self.n_coef]
        coef = c.reshape(self.k, self.p) if self.expert == "linear" else \
            c.reshape(self.k, self.m, self.p)
        if self.expert == "linear":
            log_var = theta[self.n_gate + self.n_coef:] if self.fit_var else \
                np.full(self.k, np.log(self.noise))
        else:
            log_var = None
        return Params(gate, coef, log_var)

    def pack(self, gate, coef, log_var=None) -> np.ndarray:
        parts = [np.asarray(gate, dtype=np.float64).ravel(),
                 np.asarray(coef, dtype=np.float64).ravel()]
        if self.fit_var:
            parts.append(np.asarray(log_var, dtype=np.float64).ravel())
        theta = np.concatenate(parts)
        if theta.shape != (self.n_params,):
            raise ValueError(f"packed parameters have {theta.size} entries, expected "
                             f"{self.n_params}")
        return theta

    def gate_slice(self) -> slice:
        return slice(0, self.n_gate)

    def expert_slice(self) -> slice:
        return slice(self.n_gate, self.n_params)

    # -- the model ------------------------------------------------------------------------------
    def log_gate(self, theta, X=None) -> np.ndarray:
        """(n, k) log P(z = j | x)."""
        P = self.unpack(theta)
        Xb = self.Xb if X is None else X
        if self.k == 1:
            return np.zeros((Xb.shape[0], 1))
        return _log_sigmoid_rows(Xb @ P.gate.T)

    def _scores(self, Xb, coef) -> np.ndarray:
        """(n, k, m) expert scores B_j x~ (one matrix product)."""
        return (Xb @ coef.reshape(-1, self.p).T).reshape(Xb.shape[0], self.k, self.m)

    def log_expert(self, theta, X=None, y=None) -> np.ndarray:
        """(n, k) log p(y | x, z = j)."""
        P = self.unpack(theta)
        Xb = self.Xb if X is None else X
        y = self.y if y is None else y
        if self.expert == "linear":
            mu = Xb @ P.coef.T
            s2 = np.exp(P.log_var)
            return -0.5 * (_LOG_2PI + P.log_var) - 0.5 * (y[:, None] - mu) ** 2 / s2
        logq = _log_sigmoid_rows(self._scores(Xb, P.coef))   # (n, k, C)
        return np.take_along_axis(logq, y[:, None, None], axis=2)[:, :, 0]

    def log_joint(self, theta) -> np.ndarray:
        """(n, k) log P(z = j | x) + log p(y | x, z = j)."""
        return self.log_gate(theta) + self.log_expert(theta)

    def in_domain(self, theta) -> bool:
        """Whether theta's fitted noise variances lie at or below ``max_variance`` (always
        true for logistic experts and fixed noise)."""
        if self.expert != "linear" or not self.fit_var:
            return True
        return bool(np.all(self.unpack(theta).log_var <= np.log(self.max_variance)))

    def penalty_value(self, theta) -> float:
        return 0.5 * float((self.penalty * theta) @ theta)

    def value(self, theta) -> float:
        """The objective L(theta): weighted mean NLL + penalty."""
        theta = np.asarray(theta, dtype=np.float64)
        return -float(self.v @ logsumexp(self.log_joint(theta), axis=1)) + \
            self.penalty_value(theta)

    def nll(self, theta) -> float:
        """The weighted mean negative log-likelihood alone."""
        return -float(self.v @ logsumexp(self.log_joint(np.asarray(theta, float)), axis=1))

    def responsibilities(self, theta) -> np.ndarray:
        """(n, k) posteriors P(z = j | x, y; theta) (the E-step)."""
        return softmax(self.log_joint(theta), axis=1)

    def _log_expert_probs(self, theta) -> np.ndarray:
        """Logistic experts: (n, k, C) log softmax_c(B_j x~) on the training rows."""
        return _log_sigmoid_rows(self._scores(self.Xb, self.unpack(theta).coef))

    def q_value_and_grad(self, theta, R) -> tuple[float, np.ndarray]:
        """The EM objective Q(theta | theta_t) (+ penalty) for responsibilities R of theta_t,
        and its gradient in theta."""
        theta = np.asarray(theta, dtype=np.float64)
        Pm = self.unpack(theta)
        v = self.v
        Xb = self.Xb
        grad = np.zeros(self.n_params)
        lg = self.log_gate(theta)
        f = -float(v @ np.sum(R * lg, axis=1))
        if self.k > 1:
            pi = np.exp(lg)
            Gg = ((pi - R) * v[:, None])[:, 1:]                   # (n, k - 1)
            grad[: self.n_gate] = (Gg.T @ Xb).ravel()
        if self.expert == "linear":
            mu = Xb @ Pm.coef.T
            s2 = np.exp(Pm.log_var)
            res = self.y[:, None] - mu
            W = R * v[:, None]
            f += float(np.sum(W * (0.5 * (_LOG_2PI + Pm.log_var) + 0.5 * res ** 2 / s2)))
            grad[self.n_gate: self.n_gate + self.n_coef] = (-(W * res / s2).T @ Xb).ravel()
            if self.fit_var:
                grad[self.n_gate + self.n_coef:] = np.sum(W * (0.5 - 0.5 * res ** 2 / s2),
                                                          axis=0)
        else:
            logq = self._log_expert_probs(theta)                            # (n, k, C)
            W = R * v[:, None]                                     # (n, k)
            f -= float(np.sum(W * np.take_along_axis(
                logq, self.y[:, None, None], axis=2)[:, :, 0]))
            D = (np.exp(logq) - self.Y[:, None, :])[:, :, 1:] * W[:, :, None]   # (n, k, m)
            grad[self.n_gate: self.n_gate + self.n_coef] = \
                (D.reshape(D.shape[0], -1).T @ Xb).ravel()
        f += self.penalty_value(theta)
        grad += self.penalty * theta
        return f, grad

    def value_and_grad(self, theta) -> tuple[float, np.ndarray]:
        """L(theta) and its gradient (= the gradient of Q(. | theta) at theta); the gate and
        expert scores are computed once for both."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.expert == "logistic":
            return self._logistic_value_and_grad(theta)
        J = self.log_gate(theta) + self.log_expert(theta)
        lse = logsumexp(J, axis=1)
        R = np.exp(J - lse[:, None])
        _, g = self.q_value_and_grad(theta, R)
        return -float(self.v @ lse) + self.penalty_value(theta), g

    def _logistic_value_and_grad(self, theta) -> tuple[float, np.ndarray]:
        """Logistic experts' L and gradient from one product [gate; experts] X~^T and one
        product back. The scores are laid out (rows of W, samples), so every reduction over
        classes or experts runs over contiguous rows of length n; the reference class and
        the reference expert (score 0) stay implicit."""
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        n, k, m, v = self.n_samples, self.k, self.m, self.v
        W = theta.reshape(-1, self.p)                       # (k - 1 + k m, p)
        S = class_major_scores(self.Xb, W)                  # (k - 1 + k m, n)
        if self._label_index is None:
            rows = np.flatnonzero(self.y > 0)
            self._label_index = (rows, (self.y[rows] - 1) * n + rows)
        rows, flat = self._label_index
        # gate: log softmax over [0, S_gate]
        lg = np.zeros((k, n))
        if k > 1:
            G = S[: k - 1]
            log_zg, eg, zg = logspace.logsumexp(G, axis=0, include_zero=True, return_exp=True)
            lg[0] = -log_zg
            lg[1:] = G - log_zg
        if m == 1:
            # two classes: log p(y | x, z = j) = -(max(z, 0) + log1p(e^-|s|)), z = -+s (y = 0
            # / 1), s = s_{j,1}: one exponential and one logarithm per expert and row
            E = S[k - 1:]                                       # (k, n)
            y1 = self.Y[:, 1]                                   # y as 0 / 1
            a = np.abs(E)
            np.negative(a, out=a)
            np.exp(a, out=a)                                    # e^-|s|
            J = np.maximum(E, 0.0)
            J -= E * y1                                         # max(z, 0), exactly
            J += np.log1p(a)
            np.subtract(lg, J, out=J)                           # log gate + log p(y | z)
        else:
            # experts: log p(y | x, z = j) = s_{j,y} - log(1 + sum_c exp s_{j,c}), s_{j,0} = 0
            E = S[k - 1:].reshape(k, m, n)
            # q (k, m, n) unnormalized, z (k, 1, n) with the reference class
            lse_e, q, z = logspace.logsumexp(E, axis=1, include_zero=True, return_exp=True)
            J = lg - lse_e                                      # log gate + log p(y = 0 | z)
            J[:, rows] += E.reshape(k, m * n)[:, flat]          # + s_{j, y} where y > 0
        lse, R = logspace.log_softmax(J, axis=0, overwrite_a=True)
        f = -float(v @ lse) + self.penalty_value(theta)
        # gradient: d/dS of -sum_i v_i lse_i, then back through the one product
        D = np.empty_like(S)
        if k > 1:
            D[: k - 1] = (eg / zg - R[1:]) * v                  # (gate probability - R) v
        Wr = R * v                                           # (k, n)
        if m == 1:
            # Wr (p(y = 1 | z) - y): expit(s) = (1 where s >= 0, else e^-|s|) / (1 + e^-|s|)
            De = D[k - 1:]
            np.maximum(a, E >= 0.0, out=De)
            a += 1.0
            De /= a
            De -= y1
            De *= Wr
        else:
            De = D[k - 1:].reshape(k, m, n)
            np.multiply(q, Wr[:, None, :] / z, out=De)
            De.reshape(k, m * n)[:, flat] -= Wr[:, rows]
        grad = class_major_product(D, self.Xb).ravel()
        grad += self.penalty * theta
        return f, grad

    # -- prediction -----------------------------------------------------------------------------
    def design(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return np.hstack([X, np.ones((X.shape[0], 1))]) if self.fit_intercept else X

    def predict_mean(self, theta, X) -> np.ndarray:
        """Linear experts: E[y | x] = sum_j P(z = j | x) b_j . x~."""
        Xb = self.design(X)
        pi = np.exp(self.log_gate(theta, Xb))
        return np.sum(pi * (Xb @ self.unpack(theta).coef.T), axis=1)

    def predict_proba(self, theta, X) -> np.ndarray:
        """Logistic experts: P(y = c | x) = sum_j P(z = j | x) softmax_c(B_j x~), (n, C)."""
        Xb = self.design(X)
        pi = np.exp(self.log_gate(theta, Xb))
        q = np.exp(_log_sigmoid_rows(self._scores(Xb, self.unpack(theta).coef)))
        return np.einsum("nk,nkc->nc", pi, q)

    def predict_log_proba(self, theta, X) -> np.ndarray:
        """Logistic experts: log P(y = c | x) = logsumexp_j (log P(z = j | x) + log
        softmax_c(B_j x~)), (n, C), in log space (no probability rounded to 0 first)."""
        Xb = self.design(X)
        lg = self.log_gate(theta, Xb)
        lq = _log_sigmoid_rows(self._scores(Xb, self.unpack(theta).coef))
        return logsumexp(lg[:, :, None] + lq, axis=1)

    def test_nll(self, theta, X, y) -> float:
        """Mean negative log-likelihood on other data (test cross-entropy for logistic)."""
        Xb = self.design(X)
        y = np.asarray(y)
        J = self.log_gate(theta, Xb) + self.log_expert(theta, Xb, y)
        return -float(np.mean(logsumexp(J, axis=1)))

    # -- diagnostics ----------------------------------------------------------------------------
    def expert_mass(self, R) -> np.ndarray:
        """(k,) weighted share of the data each expert is responsible for."""
        return self.v @ R
