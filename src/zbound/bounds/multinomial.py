"""Kronecker-structured Alg. 1 for softmax models.

With features f_x(y) = e_y (x) x and theta = vec(W), W of shape (n, d), the running mean of Alg. 1
is m (x) x and every rank-one term factors: l_i = (e_{y_i} - m_{i-1}) (x) x. So the bound of sample
j has curvature B_j (x) x_j x_j^T where B_j (n, n) is Alg. 1 run on the label vectors e_y with
scores w_y^T x_j. The sum over samples is a :class:`KroneckerCurvature`; it is never formed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from zbound.bounds.curvature import KroneckerCurvature, LabelBoundCurvature
from zbound.bounds.scalar import beta, ordering
from zbound.utils.logspace import log_cumsum_exp
from zbound.utils.validation import check_design


def _sorted_running_sums(log_alpha: np.ndarray, order: str):
    """Checks, row shift, visiting order and log-space running sums shared by both forms of
    Alg. 1 on label vectors: (log_alpha shifted, shift (t, 1), perm, la sorted, log_z_run,
    log_z_prev)."""
    log_alpha = np.asarray(log_alpha, dtype=np.float64)
    if log_alpha.ndim != 2 or log_alpha.shape[1] == 0:
        raise ValueError(f"log_alpha must have shape (t, n) with n >= 1, got {log_alpha.shape}")
    if np.any(np.isnan(log_alpha) | (log_alpha == np.inf)):
        raise ValueError("log_alpha contains NaN or +inf")
    # Work relative to each row's max (the bound depends on alpha only through ratios): then
    # log z is O(log n) and exp(log alpha - log z) keeps full relative accuracy; with raw scores
    # of 700 the probabilities were off by ~5e-14 and did not sum to 1.
    perm = ordering(log_alpha, order)      # before the shift, which can round near-ties equal
    shift = np.max(log_alpha, axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    with np.errstate(over="ignore"):      # finite scores ~ +-1e308 apart: ratio 0, log -inf
        log_alpha = log_alpha - shift
    la = np.take_along_axis(log_alpha, perm, axis=1)
    log_z_run = log_cumsum_exp(la, axis=1)
    if np.any(log_z_run[:, -1] == -np.inf):
        raise ValueError("a sample has zero prior weight on every class: log Z = -inf")
    log_z_prev = np.empty_like(log_z_run)
    log_z_prev[:, 0] = -np.inf
    log_z_prev[:, 1:] = log_z_run[:, :-1]
    return log_alpha, shift, perm, la, log_z_run, log_z_prev


def label_bound(log_alpha: np.ndarray, order: str = "descending"):
    """Alg. 1 on the label vectors e_1..e_n with log weights ``log_alpha`` (t, n).

    Returns log_z (t,), probs (t, n) (the mean, = softmax) and B (t, n, n) (the curvature).
    Vectorized over samples and labels: with e_y features the running mean after i visits holds
    alpha_k / z_i in the visited coordinates, so L = I - M with M strictly lower triangular.
    """
    log_alpha, shift, perm, la, log_z_run, log_z_prev = _sorted_running_sums(log_alpha, order)
    t, n = log_alpha.shape
    log_z = log_z_run[:, -1]
    with np.errstate(invalid="ignore", over="ignore"):
        # M[i, k] = alpha_k / z_{i-1} for k < i: the running mean before visiting i.
        M = np.exp(la[:, None, :] - log_z_prev[:, :, None])
        r = la - log_z_prev
    M = np.where(np.tril(np.ones((n, n), dtype=bool), -1)[None], M, 0.0)
    M = np.nan_to_num(M, nan=0.0, posinf=0.0)
    r[:, 0] = np.inf
    w = beta(r)
    L = np.eye(n)[None] - M                                    # rows l_i in sorted coordinates
    # Back to label coordinates before the product (sorted coordinate a is label perm[a]), then
    # B = sum_i w_i l_i l_i^T = L^T diag(w) L as one batched matrix product.
    inv = np.argsort(perm, axis=1)
    L = np.take_along_axis(L, inv[:, None, :], axis=2)
    B = np.matmul((L * w[:, :, None]).transpose(0, 2, 1), L)
    with np.errstate(under="ignore"):
        probs = np.exp(log_alpha - log_z[:, None])
    return log_z + shift[:, 0], probs, B


def label_bound_factors(log_alpha: np.ndarray, order: str = "descending"):
    """Alg. 1 on the label vectors in factored form: O(t n) memory, no (t, n, n) array.

    Returns ``log_z`` (t,), ``probs`` (t, n) and a dict of class-major (n, t) factors
    ``perm``, ``inv``, ``rho``, ``keep``, ``w`` that :class:`LabelBoundCurvature` takes: the
    visiting order and its inverse, rho_i = alpha_i / z_i, keep_i = z_{i-1} / z_i and the
    weights beta(log alpha_i - log z_{i-1}) (0 for the first visited label), all from log-space
    running sums as in :func:`label_bound`, which gives the same B = L^T diag(w) L explicitly.
    """
    if np.ndim(log_alpha) == 2 and np.shape(log_alpha)[1] == 2 and order != "given":
        return _two_label_factors(np.asarray(log_alpha, dtype=np.float64), order)
    return _general_label_bound_factors(log_alpha, order)


def _general_label_bound_factors(log_alpha, order: str):
    """:func:`label_bound_factors` for any number of labels (sorted running sums)."""
    log_alpha, shift, perm, la, log_z_run, log_z_prev = _sorted_running_sums(log_alpha, order)
    log_z = log_z_run[:, -1]
    with np.errstate(invalid="ignore", over="ignore"):
        r = la - log_z_prev
        rho = np.exp(la - log_z_run)
        keep = np.exp(log_z_prev - log_z_run)
    r[:, 0] = np.inf
    w = beta(r)
    rho = np.nan_to_num(rho, nan=0.0)            # zero-weight labels before any positive weight
    keep = np.nan_to_num(keep, nan=1.0)
    perm = np.ascontiguousarray(perm.T)
    factors = {
        "perm": perm,
        "inv": np.argsort(perm, axis=0),
        "rho": np.ascontiguousarray(rho.T),
        "keep": np.ascontiguousarray(keep.T),
        "w": np.ascontiguousarray(w.T),
    }
    with np.errstate(under="ignore"):
        probs = np.exp(log_alpha - log_z[:, None])
    return log_z + shift[:, 0], probs, factors


def _two_label_factors(log_alpha: np.ndarray, order: str):
    """:func:`label_bound_factors` for two labels (a binary model, every stochastic step of
    a binary ``partial_fit``) without the sort and the running sums: the first visited label
    is the larger (``"descending"``; ties: label 0) or the smaller (``"ascending"``) score;
    the same log-space expressions as the general path, on two columns."""
    if np.any(np.isnan(log_alpha) | (log_alpha == np.inf)):
        raise ValueError("log_alpha contains NaN or +inf")
    a0, a1 = log_alpha[:, 0], log_alpha[:, 1]
    shift = np.maximum(a0, a1)
    if np.any(shift == -np.inf):
        raise ValueError("a sample has zero prior weight on every class: log Z = -inf")
    flip = (a1 > a0) if order == "descending" else (a1 < a0)        # label 1 visited first
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.where(flip, a1, a0) - shift                       # sorted, shifted
        second = np.where(flip, a0, a1) - shift
        log_z = np.logaddexp(first, second)
        rho = np.vstack([np.exp(first - first), np.exp(second - log_z)])
        keep = np.vstack([np.exp(-np.inf - first), np.exp(first - log_z)])
        w = np.vstack([np.zeros_like(first), beta(second - first)])
        shifted = log_alpha - shift[:, None]
    perm = np.vstack([flip, ~flip]).astype(np.intp)
    factors = {"perm": perm, "inv": perm.copy(),          # a transposition is its own inverse
               "rho": np.nan_to_num(rho, nan=0.0), "keep": np.nan_to_num(keep, nan=1.0),
               "w": w}
    with np.errstate(under="ignore"):
        probs = np.exp(shifted - log_z[:, None])
    return log_z + shift, probs, factors


def label_bound_curvature(X, factors: dict, sample_weight: np.ndarray | None = None,
                          free: int = 0) -> LabelBoundCurvature:
    """sum_j s_j B_j (x) x_j x_j^T over the classes from ``free`` on, as an operator."""
    w = factors["w"] if sample_weight is None else factors["w"] * sample_weight
    return LabelBoundCurvature(X, factors["perm"], factors["inv"], factors["rho"],
                               factors["keep"], w, free)


@dataclass
class MultinomialBound:
    """Per-sample bounds log Z_j(W') <= log_z_j + p_j^T u_j + 1/2 u_j^T B_j u_j, u_j = (W'-W) x_j.

    Shapes: ``log_z`` (t,), ``probs`` (t, n), ``B`` (t, n, n), ``W`` (n, d), ``X`` (t, d).

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import multinomial_bound
    >>> b = multinomial_bound(np.array([[1.0, 2.0]]), np.zeros((2, 2)))
    >>> b.log_z
    array([0.69314718])
    """

    log_z: np.ndarray
    probs: np.ndarray
    B: np.ndarray
    W: np.ndarray
    X: np.ndarray | sp.csr_matrix

    @property
    def mean(self) -> np.ndarray:
        """Gradient of each log Z_j with respect to vec(W): (t, n * d) = p_j (x) x_j (dense)."""
        X = self.X.toarray() if sp.issparse(self.X) else self.X
        return (self.probs[:, :, None] * X[:, None, :]).reshape(X.shape[0], -1)

    def grad_sum(self) -> np.ndarray:
        """sum_j mean_j as an (n * d,) vector, without forming ``mean``."""
        return np.asarray(self.X.T @ self.probs).T.ravel()

    def curvature(self, reg: float = 0.0) -> KroneckerCurvature:
        """sum_j B_j (x) x_j x_j^T + reg * I as a matrix-free operator."""
        return KroneckerCurvature(self.X, self.B, reg)

    def evaluate(self, W_new: np.ndarray) -> np.ndarray:
        """Per-sample log bound (t,) at W_new of shape (n, d) or flat (n * d,)."""
        W_new = np.asarray(W_new, dtype=np.float64).reshape(self.W.shape)
        U = np.asarray(self.X @ (W_new - self.W).T)           # (t, n)
        quad = np.einsum("ja,jab,jb->j", U, self.B, U)
        return self.log_z + np.einsum("ja,ja->j", self.probs, U) + 0.5 * quad


def multinomial_bound(X, W, log_prior=None, order: str = "descending") -> MultinomialBound:
    """Alg. 1 for the softmax model p(y | x) ~ h(y) exp(w_y^T x), one bound per row of X.

    Parameters
    ----------
    X : (t, d) array or CSR matrix
    W : (n, d) array (or flat (n * d,)), n >= 1 classes
    log_prior : (t, n) or (n,) array, optional; -inf gives a label zero weight.
    order : {"descending", "ascending", "given"}

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import multinomial_bound
    >>> X = np.array([[1.0, 2.0], [0.5, -1.0]])
    >>> b = multinomial_bound(X, np.zeros((3, 2)))            # three classes, one bound per row
    >>> b.log_z                                               # log 3 for each row at W = 0
    array([1.09861229, 1.09861229])
    >>> b.probs.shape
    (2, 3)
    """
    X = check_design(X)
    W = np.asarray(W, dtype=np.float64)
    if W.ndim == 1:
        if W.size % X.shape[1]:
            raise ValueError(f"flat W of size {W.size} is not a multiple of d = {X.shape[1]}")
        W = W.reshape(-1, X.shape[1])
    if W.ndim != 2 or W.shape[1] != X.shape[1]:
        raise ValueError(f"W must have shape (n, {X.shape[1]}), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W contains NaN or inf")
    with np.errstate(over="ignore", invalid="ignore"):
        log_alpha = np.asarray(X @ W.T)
    if not np.all(np.isfinite(log_alpha)):
        raise ValueError("scores x^T w_y overflow float64; rescale X or W")
    if log_prior is not None:
        log_prior = np.asarray(log_prior, dtype=np.float64)
        if np.any(np.isnan(log_prior)) or np.any(log_prior == np.inf):
            raise ValueError("log_prior contains NaN or +inf (use -inf for zero weight)")
        log_alpha = log_alpha + np.broadcast_to(log_prior, log_alpha.shape)
    log_z, probs, B = label_bound(log_alpha, order)
    return MultinomialBound(log_z, probs, B, W, X)
