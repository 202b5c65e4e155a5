"""Alg. 1 of Jebara & Choromanska (2012) over explicit configurations, in log space.

For Z(theta) = sum_y h(y) exp(theta^T f(y)), Alg. 1 visits configurations in some order
i = 1..n and accumulates

    z_i = z_{i-1} + alpha_i,           alpha_i = h(y_i) exp(theta~^T f(y_i))
    mu_i = mu_{i-1} + alpha_i / z_i * l_i,   l_i = f(y_i) - mu_{i-1}
    Sigma += beta(log(alpha_i / z_{i-1})) l_i l_i^T,

so that, with delta = theta - theta~,
    log Z(theta) <= log z + mu^T delta + 1/2 delta^T Sigma delta
(Theorem 1). The recursion closes in prefix sums: z_i is a running log-sum-exp and mu_i the
alpha-weighted mean of the first i features, so the whole algorithm is vectorized over
configurations and over a batch of partition functions, with no Python loop. The running mean is
kept in log space by splitting features into positive and negative parts, which stays finite for
scores near +-700 and for zero prior weights (log h = -inf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zbound.bounds.scalar import beta, ordering
from zbound.utils.logspace import log_cumsum_exp


@dataclass
class QuadraticBound:
    """log Z(theta) <= log_z + mean @ (theta - theta0) + 1/2 (theta - theta0) @ curvature @ (...).

    Shapes: for one partition function ``log_z`` is a float, ``mean`` (d,), ``curvature`` (d, d);
    for a batch of t of them, (t,), (t, d) and (t, d, d). ``mean`` is the gradient of log Z at
    ``theta`` and ``log_z`` its exact value.

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import quadratic_bound
    >>> b = quadratic_bound(np.eye(3), np.zeros(3))
    >>> b.curvature.shape
    (3, 3)
    >>> round(float(b.evaluate(np.zeros(3))), 4)              # log 3 at theta0
    1.0986
    """

    log_z: float | np.ndarray
    mean: np.ndarray
    curvature: np.ndarray
    theta: np.ndarray

    def evaluate(self, theta_new: np.ndarray) -> float | np.ndarray:
        """Log of the bound at ``theta_new`` of shape (d,) or (m, d).

        Returns a float / (m,) for one partition function and (t,) / (m, t) for a batch.
        """
        delta = np.asarray(theta_new, dtype=np.float64) - self.theta
        if delta.shape[-1] != self.theta.shape[0]:
            raise ValueError(
                f"theta_new has {delta.shape[-1]} entries, the bound has {self.theta.shape[0]}"
            )
        if self.mean.ndim == 1:
            quad = np.einsum("...i,ij,...j->...", delta, self.curvature, delta)
            return self.log_z + delta @ self.mean + 0.5 * quad
        # batch: (m, t)
        lin = delta @ self.mean.T
        quad = np.einsum("...i,tij,...j->...t", delta, self.curvature, delta)
        return self.log_z + lin + 0.5 * quad


def _check_inputs(features, theta, log_prior):
    features = np.asarray(features, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    if features.ndim not in (2, 3):
        raise ValueError(
            f"features must have shape (n, d) or (t, n, d), got {features.shape}"
        )
    if features.shape[-2] == 0:
        raise ValueError("features must contain at least one configuration")
    if theta.ndim != 1 or theta.shape[0] != features.shape[-1]:
        raise ValueError(
            f"theta must have shape ({features.shape[-1]},) to match features {features.shape}, "
            f"got {theta.shape}"
        )
    if not np.all(np.isfinite(features)):
        raise ValueError("features contain NaN or inf")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta contains NaN or inf")
    if log_prior is None:
        log_prior = np.zeros(features.shape[:-1])
    else:
        log_prior = np.asarray(log_prior, dtype=np.float64)
        if log_prior.shape != features.shape[:-1]:
            raise ValueError(
                f"log_prior must have shape {features.shape[:-1]} (one per configuration), "
                f"got {log_prior.shape}"
            )
        if np.any(np.isnan(log_prior)) or np.any(log_prior == np.inf):
            raise ValueError("log_prior contains NaN or +inf (use -inf for zero prior weight)")
    return features, theta, log_prior


def alg1_terms(log_alpha: np.ndarray, features: np.ndarray):
    """Alg. 1 on configurations in visiting order, without forming the curvature.

    log_alpha: (t, n); features: (t, n, d). Returns log_z (t,), mean (t, d), the weights
    beta_i (t, n) and l_i = f_i - mu_{i-1} (t, n, d): the curvature is sum_i beta_i l_i l_i^T
    (formed by :func:`alg1_sorted`, kept low-rank by :mod:`zbound.bounds.lowrank`).
    """
    t, n, d = features.shape
    # Alg. 1 depends on alpha only through ratios, so work with log alpha - max log alpha: the
    # log-space running mean below loses ~eps * |log alpha| relative accuracy, which for scores
    # of 1e4 (1e8) would be 1e-12 (1e-8) without the shift.
    shift = np.max(log_alpha, axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    with np.errstate(over="ignore"):      # finite scores ~ +-1e308 apart: ratio 0, log -inf
        log_alpha = log_alpha - shift
    log_z_run = log_cumsum_exp(log_alpha, axis=1)             # log z_i - shift, (t, n)
    log_z = log_z_run[:, -1] + shift[:, 0]
    if np.any(log_z == -np.inf):
        raise ValueError("every configuration has zero prior weight: log Z = -inf")
    # Running mean mu_i = sum_{k<=i} alpha_k f_k / z_i, in log space per sign of f.
    with np.errstate(divide="ignore"):
        log_pos = np.log(np.maximum(features, 0.0))
        log_neg = np.log(np.maximum(-features, 0.0))
    acc_pos = log_cumsum_exp(log_alpha[:, :, None] + log_pos, axis=1)
    acc_neg = log_cumsum_exp(log_alpha[:, :, None] + log_neg, axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        shift = log_z_run[:, :, None]
        mu_run = np.exp(acc_pos - shift) - np.exp(acc_neg - shift)   # (t, n, d)
    mu_run = np.where(np.isfinite(log_z_run)[:, :, None], mu_run, 0.0)
    mean = mu_run[:, -1, :]
    # Curvature: l_i = f_i - mu_{i-1}, weight beta(log alpha_i - log z_{i-1}); mu_0 = 0, z_0 = 0.
    mu_prev = np.concatenate([np.zeros((t, 1, d)), mu_run[:, :-1, :]], axis=1)
    log_z_prev = np.concatenate([np.full((t, 1), -np.inf), log_z_run[:, :-1]], axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        r = log_alpha - log_z_prev
    r[:, 0] = np.inf
    w = beta(r)                                                # (t, n); NaN -> 0
    return log_z, mean, w, features - mu_prev


def alg1_sorted(log_alpha: np.ndarray, features: np.ndarray):
    """Alg. 1 on configurations already in visiting order.

    log_alpha: (t, n); features: (t, n, d). Returns log_z (t,), mean (t, d), curvature (t, d, d).
    """
    log_z, mean, w, L = alg1_terms(log_alpha, features)
    curvature = np.einsum("tn,tni,tnj->tij", w, L, L)
    return log_z, mean, curvature


def quadratic_bound(features, theta, log_prior=None, order: str = "descending") -> QuadraticBound:
    """Alg. 1 of Jebara & Choromanska (2012): quadratic upper bound on log Z at ``theta``.

    Parameters
    ----------
    features : (n, d) or (t, n, d) array
        f(y) for each of n configurations, for one or t partition functions.
    theta : (d,) array
        Expansion point theta~.
    log_prior : (n,) or (t, n) array, optional
        log h(y); -inf gives a configuration zero weight. Default 0 (h = 1).
    order : {"descending", "ascending", "given"}
        Order in which configurations are visited (changes only the curvature).

    Returns
    -------
    QuadraticBound with exact ``log_z`` and ``mean`` (= grad log Z) and the curvature of Alg. 1.

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import quadratic_bound
    >>> F = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])    # f(y) of three configurations
    >>> b = quadratic_bound(F, np.zeros(2))
    >>> b.log_z                                  # exact at the expansion point: log 3
    1.0986...
    >>> b.mean                                   # the gradient of log Z there
    array([0.66666667, 0.66666667])
    >>> theta = np.array([0.5, -1.0])
    >>> exact = np.log(np.exp(F @ theta).sum())
    >>> bool(b.evaluate(theta) >= exact)
    True
    """
    features, theta, log_prior = _check_inputs(features, theta, log_prior)
    single = features.ndim == 2
    if single:
        features = features[None]
        log_prior = log_prior[None]
    with np.errstate(over="ignore", invalid="ignore"):
        log_alpha = log_prior + features @ theta              # (t, n)
    if np.any(np.isnan(log_alpha) | (log_alpha == np.inf)):
        raise ValueError("scores log h(y) + theta^T f(y) overflow float64; rescale the features")
    perm = ordering(log_alpha, order)
    log_alpha_s = np.take_along_axis(log_alpha, perm, axis=1)
    features_s = np.take_along_axis(features, perm[:, :, None], axis=1)
    log_z, mean, curvature = alg1_sorted(log_alpha_s, features_s)
    if not np.all(np.isfinite(curvature)):
        # |f| beyond ~1e154: l l^T overflows (silently, in einsum) and the bound would be NaN
        # even at theta~.
        raise ValueError("the curvature overflows float64 (features too large); rescale them")
    if single:
        return QuadraticBound(float(log_z[0]), mean[0], curvature[0], theta)
    return QuadraticBound(log_z, mean, curvature, theta)
