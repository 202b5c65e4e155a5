"""Latent conditional likelihood: mixtures of Gaussian-gated logistic regressions (paper 003,
Sec. 4).

Every class y has ``n_components`` components m; each pair (y, m) has a weight vector
theta_{y,m} (for phi(x) = x) and an offset nu_{y,m} (log mixing proportion minus the log
normalizer of the component's exponential family, after the paper's change of variables
exp(nu) = pi exp(-a(theta))). With scores S_{j,(y,m)} = theta_{y,m}^T x_j + nu_{y,m},

    p(y | x_j) = sum_m exp(S_{j,(y,m)}) / sum_{y', m'} exp(S_{j,(y',m')}),

a softmax over all (class, component) pairs, marginalized over the components of each class.
The objective is the negative latent conditional log-likelihood

    J(theta) = sum_j s_j [ log sum_{y,m} exp S_{j,(y,m)} - log sum_m exp S_{j,(y_j,m)} ],

theta = vec(W), W of shape (n_classes * n_components, d + 1) row-major, pair (y, m) in row
y * n_components + m, nu the last column (the paper's ordering [theta_11 nu_11 theta_12 ...]).
J is not convex (it is a difference of two log-sum-exps) and, without a penalty, unbounded
below on data that the pairs can separate.

The majorizer (the paper's bound, Sec. 4): Jensen on the numerator at the responsibilities
eta_{jm} = p(m | x_j, y_j) at theta~,

    -log sum_m exp S_{j,(y_j,m)} <= -sum_m eta_jm S_{j,(y_j,m)} + sum_m eta_jm log eta_jm,

which is linear in theta, exact in value and gradient at theta~; plus Alg. 1 on the
denominator, over the (y, m) pairs with features e_{(y,m)} (x) [x, 1] (the factored label bound
of :func:`zbound.bounds.multinomial.label_bound_factors`). Their sum is a quadratic upper bound
on J, tight (value and gradient) at theta~; its curvature is the Alg. 1 curvature of the
denominator alone. Minimizing it is a step of Alg. 2 (``minimize(model, x0, method="bound")``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from zbound.bounds.curvature import KroneckerCurvature
from zbound.bounds.multinomial import label_bound_curvature, label_bound_factors
from zbound.models.loss import (
    ChunkedLoss,
    check_chunk_size,
    check_design_magnitude,
    check_sample_weight,
)
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.models.softmax import class_major_product, class_major_scores
from zbound.utils.linalg import row_block
from zbound.utils.logspace import log_softmax
from zbound.utils.validation import check_design


def _lse_rows(A: np.ndarray, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """log-sum-exp over axis 0 of A (k, t) and the normalized exp (k, t) (softmax columns;
    written over A with ``overwrite``)."""
    return log_softmax(A, axis=0, overwrite_a=overwrite)


def check_latent_labels(y, t: int, n_classes: int | None, n_components) -> tuple[np.ndarray, int]:
    """Validated (t,) integer labels and the number of classes; ValueError names the problem
    (shape, dtype, range, fewer than 2 classes, n_components < 1, more components than the
    samples of a class)."""
    y = np.asarray(y)
    if y.shape != (t,):
        raise ValueError(f"y must have shape ({t},) to match X, got {y.shape}")
    if y.dtype.kind not in "iu":
        raise TypeError(f"y must hold integer class indices, got dtype {y.dtype}")
    if isinstance(n_components, bool) or not isinstance(n_components, int | np.integer):
        raise TypeError(f"n_components must be an integer >= 1, got {n_components!r}")
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}")
    lo, hi = int(y.min()), int(y.max())
    n = hi + 1 if n_classes is None else int(n_classes)
    if lo < 0 or hi >= n:
        raise ValueError(f"class indices must lie in [0, {n}), got [{lo}, {hi}]")
    counts = np.bincount(y, minlength=n)
    if n < 2 or np.count_nonzero(counts) < 2:
        raise ValueError("the latent conditional likelihood needs samples of at least 2 "
                         f"classes, got {np.count_nonzero(counts)}")
    small = [c for c in range(n) if 0 < counts[c] < n_components]
    if small:
        raise ValueError(f"n_components={n_components} is more than the samples of class(es) "
                         f"{small} ({[int(counts[c]) for c in small]} samples)")
    return y.astype(np.intp, copy=False), n


class LatentSoftmaxLoss(ChunkedLoss):
    """The negative latent conditional log-likelihood over row chunks (see the module text).

    Parameters
    ----------
    X : (t, d) float array (dense; phi(x) = x, the offsets nu are an implicit ones column)
    y : (t,) integer class indices in [0, n_classes)
    n_components : int >= 1, components per class (m in the paper)
    n_classes : int, default max(y) + 1
    sample_weight : (t,) >= 0 or None
    chunk_size : rows per chunk (None: a chunk's largest temporary near 64 MB)

    Attributes
    ----------
    n_pairs : n_classes * n_components (the softmax is over these)
    d : X.shape[1] + 1 parameters per pair (theta_{y,m} and nu_{y,m})
    n_params : n_pairs * d
    """

    def __init__(self, X, y, n_components: int, n_classes: int | None = None,
                 sample_weight=None, chunk_size: int | None = None):
        X = check_design_magnitude(X, sample_weight)[0]
        if not isinstance(X, np.ndarray):
            raise TypeError("LatentSoftmaxLoss takes a dense X")
        t = X.shape[0]
        y, n = check_latent_labels(y, t, n_classes, n_components)
        self.X = X
        self.y = y
        self.n_classes = n
        self.n_components = int(n_components)
        self.n_pairs = n * self.n_components
        self.n_features = X.shape[1]
        self.d = X.shape[1] + 1
        self.n_params = self.n_pairs * self.d
        self.n_samples = t
        self.sample_weight = check_sample_weight(sample_weight, t)
        self.chunk_size = check_chunk_size(chunk_size, t, max(self.n_pairs ** 2,
                                                              self.n_pairs + self.d))
        self._chunks = [self._chunk(a, min(t, a + self.chunk_size))
                        for a in range(0, t, self.chunk_size)]

    def _chunk(self, a: int, b: int):
        sw = None if self.sample_weight is None else self.sample_weight[a:b]
        y = self.y[a:b]
        # rows of the class-major (n_pairs, rows) score array holding each sample's own class
        own = y[None, :] * self.n_components + np.arange(self.n_components)[:, None]
        return (row_block(self.X, a, b), sw, own)

    # -- the pieces shared by every kernel -----------------------------------------------------
    def scores(self, theta: np.ndarray, X=None) -> np.ndarray:
        """Class-major scores S^T (n_pairs, t) at theta for X (default: the training rows)."""
        X = self.X if X is None else X
        W = np.asarray(theta, dtype=np.float64).reshape(self.n_pairs, self.d)
        return class_major_scores(X, W, intercept=True)

    def _terms(self, theta, c):
        """(value, numerator responsibilities R (n_pairs, rows), scores S^T)."""
        X, sw, own = c
        ST = self.scores(theta, X)
        cols = np.arange(ST.shape[1])
        num = ST[own, cols[None, :]]                               # (M, rows)
        lse_num, eta = _lse_rows(num)
        R = np.zeros_like(ST)
        R[own, cols[None, :]] = eta
        return lse_num, R, ST

    def _finish(self, lse_all, lse_num, sw):
        diff = lse_all - lse_num
        return float(diff.sum() if sw is None else sw @ diff)

    def _grad(self, P, R, X, sw):
        D = P - R
        if sw is not None:
            D *= sw
        return class_major_product(D, X, intercept=True).ravel()

    # The value and gradient allocate one array of the scores' size, transformed in place:
    # a zero (pairs, rows) R, its difference with P and a copy of the scores beside them put
    # four such arrays through the allocator per call, and at a megabyte each (40 pairs x 3000
    # rows) glibc returns them to the system and takes them back with page faults at every
    # evaluation, which cost more than the arithmetic.
    def _value(self, theta, c):
        X, sw, own = c
        ST = self.scores(theta, X)
        cols = np.arange(ST.shape[1])
        lse_num = _lse_rows(ST[own, cols[None, :]])[0]
        return self._finish(_lse_rows(ST, overwrite=True)[0], lse_num, sw)

    def _value_grad(self, theta, c):
        X, sw, own = c
        ST = self.scores(theta, X)
        cols = np.arange(ST.shape[1])[None, :]
        lse_num, eta = _lse_rows(ST[own, cols])
        lse_all, D = _lse_rows(ST, overwrite=True)        # P, over the scores
        D[own, cols] -= eta                                # P - R
        if sw is not None:
            D *= sw
        return self._finish(lse_all, lse_num, sw), \
            class_major_product(D, X, intercept=True).ravel()

    def _value_grad_hessian(self, theta, c):
        """Exact Hessian: sum_j s_j [(diag p_j - p_j p_j^T) - (diag r_j - r_j r_j^T)] (x)
        [x_j, 1][x_j, 1]^T, the softmax covariance over all pairs minus the covariance of the
        responsibilities r_j (eta_j placed in the pairs of y_j). Indefinite in general."""
        X, sw, _ = c
        lse_num, R, ST = self._terms(theta, c)
        lse_all, P = _lse_rows(ST)
        PT, RT = P.T, R.T
        B = RT[:, :, None] * RT[:, None, :] - PT[:, :, None] * PT[:, None, :]
        idx = np.arange(self.n_pairs)
        B[:, idx, idx] += PT - RT
        if sw is not None:
            B *= sw[:, None, None]
        H = KroneckerCurvature(X, B).with_intercept()
        return self._finish(lse_all, lse_num, sw), self._grad(P, R, X, sw), H

    def _majorizer(self, theta, c, order):
        X, sw, _ = c
        lse_num, R, ST = self._terms(theta, c)
        log_z, P, factors = label_bound_factors(np.ascontiguousarray(ST.T), order)
        f = self._finish(log_z, lse_num, sw)
        g = self._grad(np.ascontiguousarray(P.T), R, X, sw)
        C = label_bound_curvature(X, factors, sw, 0).with_intercept()
        return f, g, C

    # -- quantities for users ------------------------------------------------------------------
    def responsibilities(self, theta: np.ndarray) -> np.ndarray:
        """(t, n_components) eta_jm = p(m | x_j, y_j) at theta (the E-step)."""
        ST = self.scores(theta)
        cols = np.arange(self.n_samples)
        own = self.y[None, :] * self.n_components + np.arange(self.n_components)[:, None]
        return _lse_rows(ST[own, cols[None, :]])[1].T

    def mstep_objective(self, eta: np.ndarray, penalties=()) -> Objective:
        """Q(theta) of the E-step at responsibilities eta (t, n_components), plus
        ``penalties``: a softmax regression over the (class, component) pairs with soft
        targets, as a :class:`~zbound.models.loss.SoftmaxLoss` on the rows repeated per
        component (rows of zero weight dropped). EM's M-step minimizes it; it majorizes this
        loss up to a constant (Jensen on the numerator)."""
        from zbound.models.loss import SoftmaxLoss

        M = self.n_components
        X = np.repeat(self.X, M, axis=0)                       # rows (j, m), m fastest
        labels = (self.y[:, None] * M + np.arange(M)[None, :]).ravel()
        w = eta if self.sample_weight is None else eta * self.sample_weight[:, None]
        w = w.ravel()
        keep = w > 0
        if not keep.all():
            X, labels, w = X[keep], labels[keep], w[keep]
        sm = SoftmaxLoss(X, labels, self.n_pairs, sample_weight=w, fit_intercept=True)
        return Objective(sm, *penalties)

    def log_proba(self, theta: np.ndarray, X=None) -> np.ndarray:
        """(t, n_classes) log p(y | x) at theta for X (default: the training rows)."""
        X = self.X if X is None else check_design(X)
        ST = self.scores(theta, X)
        K, M = self.n_classes, self.n_components
        S3 = ST.reshape(K, M, -1)
        lse_class = logsumexp(S3, axis=1)                          # (K, t), per class
        return (lse_class - logsumexp(lse_class, axis=0)).T

    def pair_mass(self, theta: np.ndarray) -> np.ndarray:
        """(n_classes, n_components): sum over the rows of each class of the responsibilities
        (sample-weighted) -- how much of the data each component explains. A component with
        (near) zero mass has collapsed."""
        eta = self.responsibilities(theta)
        if self.sample_weight is not None:
            eta = eta * self.sample_weight[:, None]
        out = np.zeros((self.n_classes, self.n_components))
        np.add.at(out, self.y, eta)
        return out


def latent_objective(X, y, n_components: int, reg=0.0, n_classes: int | None = None,
                     sample_weight=None, chunk_size: int | None = None) -> Objective:
    """The latent loss plus ``reg / 2 ||theta||^2`` (the paper's (t lambda / 2)||theta||^2 is
    reg = t lambda; lambda = 0 gives the loss alone); ``reg`` a number or one strength per
    parameter. An :class:`Objective`; its ``loss`` is the :class:`LatentSoftmaxLoss`."""
    loss = LatentSoftmaxLoss(X, y, n_components, n_classes, sample_weight, chunk_size)
    if np.any(reg):
        return Objective(loss, L2Penalty(reg))
    return Objective(loss)
