"""Low-rank plus diagonal Alg. 1 curvature (Section 6 of Jebara & Choromanska 2012).

Alg. 1 builds its curvature from rank-one terms, Sigma = sum_i r_i r_i^T with
r_i = sqrt(beta_i) (f_i - mu_{i-1}). For large d the (d, d) matrix is kept instead as

    Sigma ~ V^T S V + diag(D),   V (k, p) orthonormal rows, S (k, k) PSD, D (p,) >= 0,

updated after every rank-one term. An update may only *add* PSD matrices to the exact running
sum, so that the result dominates the Alg. 1 curvature and the quadratic is still an upper
bound. Three update rules are implemented (:data:`RULES`, see ``docs/lowrank.md``):

``"exact"`` (default)
    V^T S V + r r^T is written exactly in the (k+1)-dimensional basis U = [V; g/||g||]
    (p = V r, g = r - V^T p): it equals U^T M U with
    M = [[S + p p^T, ||g|| p], [||g|| p^T, ||g||^2]]. M is eigendecomposed, the top k pairs
    are kept and the smallest pair (c, w) (c = lambda_min(M) <= every choice of the other
    rules) is absorbed into the diagonal: v = U^T w, D += c |v| ||v||_1. That diagonal
    dominates c v v^T (Cauchy-Schwarz: (x^T v)^2 <= ||v||_1 sum_i |v_i| x_i^2) and is the
    diagonal of least trace that does (its constraint sum_i v_i^2 / F_i <= 1 is tight).
``"sgb"``
    Algorithm 3 of the stochastic-bound paper (its Appendix B): the printed rule plus
    ||a|| ||g|| I for the cross terms a g^T + g a^T (a = V^T p), whose eigenvalues are
    +-||a|| ||g||. Always a bound, looser.
``"paper"``
    Algorithm 4 as printed: it keeps V^T (S + p p^T) V and g g^T and drops the cross terms
    a g^T + g a^T, which are not zero in the quadratic form. **Not always an upper bound**
    (``tests/bounds/test_lowrank.py`` exhibits a seeded violation of log Z); kept only to
    reproduce the published algorithm.

All rules start from an empty basis (V with no rows) and fill it while fewer than ``rank`` rows
exist: the exact rule then represents the sum exactly; the printed rules put the residual into
an empty slot (S = 0 there, so nothing is absorbed) but still drop (paper) or bound (sgb) the
cross terms. A step costs O(p k^2 + k^3) (the rotation of V).

:class:`LowRankCurvature` is the operator (products in O(p k), an exact Woodbury solve in
O(p k + k^3)); :class:`LowRankAccumulator` streams rank-one terms into it;
:func:`lowrank_bound` is Alg. 1 over explicit configurations with a low-rank curvature and
:func:`accumulate_softmax` streams the terms of the factored softmax bound.
"""

from __future__ import annotations

import copy
import math
import numbers
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

from zbound.bounds.curvature import SOLVE_METHODS, Curvature
from zbound.bounds.enumerate import _check_inputs, alg1_terms
from zbound.bounds.scalar import ordering
from zbound.utils.linalg import pd_cholesky

RULES = ("exact", "sgb", "paper")
# A residual below this fraction of ||r|| is not made a new basis vector (its direction would be
# rounding noise, not orthogonal to V); its contribution is bounded by a diagonal instead.
_RESIDUAL_RTOL = 1e-8
_syevd = scipy.linalg.lapack.dsyevd


# ------------------------------------------------------------------------------ the operator
class LowRankCurvature(Curvature):
    """Sigma = V^T S V + diag(D): V (k, p), S (k, k) symmetric PSD, D (p,) >= 0.

    Products cost O(p k + k^2), ``diagonal`` O(p k^2), and ``solve`` is the exact Woodbury
    formula in O(p k^2 + k^3) whatever ``method`` says; ``to_dense`` (and ``add_to_dense``)
    form a (p, p) matrix only when asked. ``max_rank`` is the rank later updates
    (:meth:`rank_one_update`) keep (default: the number of rows of V).
    """

    def __init__(self, V: np.ndarray, S: np.ndarray, D: np.ndarray,
                 max_rank: int | None = None):
        V = np.asarray(V, dtype=np.float64)
        D = np.asarray(D, dtype=np.float64)
        if V.ndim != 2:
            raise ValueError(f"V must have shape (k, p), got {V.shape}")
        k, p = V.shape
        S = np.asarray(S, dtype=np.float64)
        if S.ndim == 1:
            S = np.diag(S)
        if S.shape != (k, k):
            raise ValueError(f"S must have shape ({k}, {k}) to match V {V.shape}, got {S.shape}")
        if D.shape != (p,):
            raise ValueError(f"D must have shape ({p},), got {D.shape}")
        if not (np.isfinite(V).all() and np.isfinite(S).all() and np.isfinite(D).all()):
            raise ValueError("V, S and D must be finite")
        if (D < 0).any():
            raise ValueError("D must be non-negative")
        self.V = V
        self.S = S
        self.D = D
        self.max_rank = k if max_rank is None else int(max_rank)
        self.shape = (p, p)
        self._W = None

    @property
    def rank(self) -> int:
        return self.V.shape[0]

    def _factor(self) -> np.ndarray:
        """W (k, p) with W^T W = V^T S V (W = Lambda^{1/2} Q^T V for S = Q Lambda Q^T)."""
        if self._W is None:
            lam, Q = np.linalg.eigh(self.S) if self.rank else (np.zeros(0), np.zeros((0, 0)))
            self._W = np.sqrt(np.maximum(lam, 0.0))[:, None] * (Q.T @ self.V)
        return self._W

    # -- the interface ---------------------------------------------------------------------
    def matvec(self, v):
        v = np.asarray(v, dtype=np.float64)
        out = self.V.T @ (self.S @ (self.V @ v))
        out += self.D * v
        return out

    def quad(self, v):
        v = np.asarray(v, dtype=np.float64)
        Vv = self.V @ v
        return float(Vv @ self.S @ Vv + (self.D * v) @ v)

    def diagonal(self):
        return self.D + np.einsum("ai,ai->i", self.S @ self.V, self.V)

    def trace(self) -> float:
        return float(self.D.sum() + np.trace(self.S @ (self.V @ self.V.T)))

    def to_dense(self):
        out = self.V.T @ (self.S @ self.V)
        out = 0.5 * (out + out.T)
        out.flat[:: self.shape[0] + 1] += self.D
        return out

    def add_to_dense(self, out):
        W = self._factor()
        out += W.T @ W
        out.flat[:: self.shape[0] + 1] += self.D

    def diagonal_blocks(self):
        return None

    def with_ridge(self, scale: float, inplace: bool = False) -> LowRankCurvature:
        """D + scale (a scalar L2 penalty folds into the diagonal)."""
        return self.with_diagonal(np.full(self.shape[0], float(scale)), inplace)

    def with_diagonal(self, values, inplace: bool = False) -> LowRankCurvature:
        """D + values (a per-coordinate L2 penalty, values >= 0)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape not in ((), (self.shape[0],)) or (values < 0).any():
            raise ValueError("the diagonal added must be >= 0 and of shape (p,)")
        out = self if inplace else copy.copy(self)
        out.D = self.D + values
        return out

    def rank_one_update(self, r, rule: str = "exact", inplace: bool = False) -> LowRankCurvature:
        """This operator plus r r^T by the update ``rule`` (rank kept at ``max_rank``)."""
        fn = _rule(rule)
        S = self.S
        V = self.V
        if np.count_nonzero(S - np.diag(np.diagonal(S))):
            lam, Q = np.linalg.eigh(S)
            s, V = lam, Q.T @ V
        else:
            s = np.diagonal(S).copy()
        D = self.D if inplace else self.D.copy()
        r = np.asarray(r, dtype=np.float64)
        if r.shape != (self.shape[0],):
            raise ValueError(f"r must have shape ({self.shape[0]},), got {r.shape}")
        if r.any():
            V, s = fn(V, np.maximum(s, 0.0), D, r, self.max_rank)
        out = self if inplace else copy.copy(self)
        out.V, out.S, out.D, out._W = V, np.diag(s), D, None
        return out

    def solve(self, rhs: np.ndarray, method: str = "cholesky", *, x0: np.ndarray | None = None,
              rtol: float = 1e-10, maxiter: int | None = None, precond=None,
              return_iterations: bool = False):
        """Solve Sigma x = rhs exactly by the Woodbury formula, whatever ``method`` says.

        With W = S^{1/2} V: Sigma^{-1} = D^{-1} - D^{-1} W^T (I + W D^{-1} W^T)^{-1} W D^{-1}
        (this form needs no S^{-1}, so a singular S is fine), plus one step of iterative
        refinement (one O(p k) product). Coordinates with D = 0 that the low-rank part does
        not touch get the minimum-norm answer 0. ``x0``, ``rtol``, ``maxiter`` and ``precond``
        are accepted for the interface and ignored; the iteration count returned is 0.
        """
        if method not in SOLVE_METHODS:
            raise ValueError(f"unknown solve method {method!r}; use one of {SOLVE_METHODS}")
        rhs = np.asarray(rhs, dtype=np.float64)
        x = self._woodbury(rhs)
        if x is not None:
            x += self._woodbury(rhs - self.matvec(x))
            if not np.isfinite(x).all():
                x = None
        if x is None:
            # D is zero (or tiny) on coordinates the low-rank part touches: Sigma may be
            # singular there and D^{-1} does not exist. Fall back to the base class's dense
            # Cholesky / minimum-norm least squares (forms p x p: only in this degenerate case,
            # e.g. a bound without ridge whose residual directions never reached D).
            return super().solve(rhs, "cholesky", return_iterations=return_iterations)
        return (x, 0) if return_iterations else x

    def _woodbury(self, rhs: np.ndarray) -> np.ndarray | None:
        W = self._factor()
        D = self.D
        pos = D > 0
        x = np.zeros_like(rhs)
        if not pos.all():
            if np.any(W[:, ~pos]):
                return None
            W = W[:, pos]
            D = D[pos]
            b = rhs[pos]
        else:
            b = rhs
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            Dinv = 1.0 / D
            y = Dinv * b
            if W.shape[0]:
                WD = W * Dinv
                K = WD @ W.T
                K.flat[:: K.shape[0] + 1] += 1.0
                # K = I + W D^-1 W^T is positive definite, but where D is tiny its condition
                # (and its entries, up to overflow) explode and the formula loses every digit:
                # Woodbury only while K passes the condition test of singular_rtol
                if not np.isfinite(K).all():
                    return None
                c = pd_cholesky(K)
                if c is None:
                    return None
                y = y - WD.T @ scipy.linalg.cho_solve((c, True), W @ y, check_finite=False)
        if pos.all():
            return y
        x[pos] = y
        return x


# ----------------------------------------------------------------------------- update rules
def _check_positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {v!r}")


def _eigh(M: np.ndarray):
    """Eigenvalues (ascending) and eigenvectors of a small symmetric matrix (raw LAPACK: the
    wrapper's checks cost more than the (k+1)-sized problem)."""
    w, Q, info = _syevd(M)
    if info != 0:
        w, Q = np.linalg.eigh(M)
    return w, Q


def _norm(v: np.ndarray) -> float:
    return math.sqrt(float(v @ v))


def _split(V: np.ndarray, r: np.ndarray):
    """p = V r and the residual g = r - V^T p, with a second Gram-Schmidt pass ("twice is
    enough") so that g is orthogonal to the rows of V to rounding; r = V^T p + g exactly."""
    p = V @ r
    g = r - V.T @ p
    if V.shape[0]:
        c = V @ g
        p += c
        g -= V.T @ c
    return p, g


def _absorb(D: np.ndarray, c: float, v: np.ndarray) -> None:
    """D += c |v| ||v||_1, the least-trace diagonal that dominates c v v^T (in place)."""
    if c > 0.0:
        av = np.abs(v)
        av *= c * float(av.sum())
        D += av


def _bordered(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """diag(s) + q q^T, with s padded by a zero when q is one longer (the (m+1) system)."""
    M = np.multiply.outer(q, q)
    diag = M.flat[:: M.shape[0] + 1]
    M.flat[:: M.shape[0] + 1] = diag + (np.append(s, 0.0) if len(s) < len(q) else s)
    return M


def update_exact(V, s, D, r, rank):
    """V^T diag(s) V + r r^T in the basis [V; g/||g||], eigendecomposed; the smallest pair is
    absorbed into D when the basis would exceed ``rank``. D is updated in place; returns the
    new (V, s). Always an upper bound on the exact sum."""
    p, g = _split(V, r)
    gn = _norm(g)
    m = V.shape[0]
    if gn <= _RESIDUAL_RTOL * _norm(r):
        # r ~ V^T p: r r^T = a a^T + g g^T + a g^T + g a^T with a = V^T p, and
        # g g^T <= diag(|g| ||g||_1), a g^T + g a^T <= (a.g + ||a|| ||g||) I.
        if gn > 0.0:
            a = r - g
            _absorb(D, 1.0, g)
            D += max(0.0, float(a @ g)) + _norm(a) * gn
        lam, Q = _eigh(_bordered(s, p))
        return Q.T @ V, np.maximum(lam, 0.0)
    U = np.empty((m + 1, V.shape[1]))
    U[:m] = V
    np.multiply(g, 1.0 / gn, out=U[m])
    q = np.empty(m + 1)
    q[:m] = p
    q[m] = gn
    lam, Q = _eigh(_bordered(s, q))                 # ascending
    if m < rank:
        return Q.T @ U, np.maximum(lam, 0.0)
    _absorb(D, float(lam[0]), U.T @ Q[:, 0])
    return Q[:, 1:].T @ U, np.maximum(lam[1:], 0.0)


def _update_printed(V, s, D, r, rank, cross: bool):
    p, g = _split(V, r)
    gn = _norm(g)
    lam, Q = _eigh(_bordered(s, p))
    V = Q.T @ V
    s = np.maximum(lam, 0.0)
    if cross:                                           # SGB, Alg. 3 line 7
        D += _norm(r - g) * gn
    if gn == 0.0:
        return V, s
    if gn <= _RESIDUAL_RTOL * _norm(r):
        _absorb(D, 1.0, g)                              # ||g||^2 is the smallest candidate
        return V, s
    if V.shape[0] < rank:                               # an empty slot: S = 0 there
        return np.vstack([V, g / gn]), np.append(s, gn * gn)
    i = int(np.argmin(s))
    if s[i] <= gn * gn:                                 # argmin over [diag S, ||g||^2]
        _absorb(D, float(s[i]), V[i])
        V[i] = g / gn
        s[i] = gn * gn
    else:
        _absorb(D, 1.0, g)                              # D += |g| ||g||_1
    return V, s


def update_sgb(V, s, D, r, rank):
    """Alg. 3 of the stochastic-bound paper: the printed rule plus ||a|| ||g|| I for the cross
    terms. D is updated in place; returns the new (V, s). Always an upper bound."""
    return _update_printed(V, s, D, r, rank, cross=True)


def update_paper(V, s, D, r, rank):
    """Alg. 4 of Jebara & Choromanska (2012) as printed: drops the cross terms a g^T + g a^T,
    so the result is NOT always an upper bound. For reproduction only."""
    return _update_printed(V, s, D, r, rank, cross=False)


UPDATE_RULES = {"exact": update_exact, "sgb": update_sgb, "paper": update_paper}


def _rule(rule: str):
    try:
        return UPDATE_RULES[rule]
    except (KeyError, TypeError):
        raise ValueError(f"unknown low-rank rule {rule!r}; use one of {RULES}") from None


def check_rank(rank) -> int:
    if isinstance(rank, bool) or not isinstance(rank, int | np.integer) or rank < 1:
        raise ValueError(f"rank must be an integer >= 1, got {rank!r}")
    return int(rank)


class LowRankAccumulator:
    """Streams rank-one terms r r^T into V^T S V + diag(D) by one update ``rule``.

    ``ridge`` initializes D (the paper's t lambda I). Memory O(p k).
    """

    def __init__(self, p: int, rank: int = 10, rule: str = "exact", ridge: float = 0.0):
        self.rank = check_rank(rank)
        self.rule = rule
        self._fn = _rule(rule)
        ridge = float(ridge)
        if not (np.isfinite(ridge) and ridge >= 0):
            raise ValueError(f"ridge must be finite and >= 0, got {ridge}")
        self.p = int(p)
        self.V = np.zeros((0, self.p))
        self.s = np.zeros(0)
        self.D = np.full(self.p, ridge)
        self.n_terms = 0

    def add(self, r: np.ndarray) -> None:
        """Sigma += r r^T (by the rule)."""
        if not r.any():
            return
        self.V, self.s = self._fn(self.V, self.s, self.D, r, self.rank)
        self.n_terms += 1

    def add_rows(self, R: np.ndarray) -> None:
        for r in np.asarray(R, dtype=np.float64):
            self.add(r)

    def curvature(self) -> LowRankCurvature:
        return LowRankCurvature(self.V.copy(), np.diag(self.s), self.D.copy(), self.rank)


# ----------------------------------------------------------------- Alg. 1, explicit features
@dataclass
class LowRankBound:
    """sum_j log Z_j(theta') <= log_z + mean @ delta + 1/2 delta @ curvature @ delta,
    delta = theta' - theta; ``log_z`` and ``mean`` exact (summed over the partition functions),
    ``curvature`` a :class:`LowRankCurvature`."""

    log_z: float
    mean: np.ndarray
    curvature: LowRankCurvature
    theta: np.ndarray

    def evaluate(self, theta_new: np.ndarray) -> float | np.ndarray:
        """The bound at ``theta_new`` (d,) -> float, or (m, d) -> (m,)."""
        delta = np.asarray(theta_new, dtype=np.float64) - self.theta
        if delta.ndim == 1:
            return float(self.log_z + delta @ self.mean + 0.5 * self.curvature.quad(delta))
        C = self.curvature
        VD = delta @ C.V.T
        quad = np.einsum("ma,ab,mb->m", VD, C.S, VD) + (delta * delta) @ C.D
        return self.log_z + delta @ self.mean + 0.5 * quad


def lowrank_bound(features, theta, log_prior=None, order: str = "descending", rank: int = 10,
                  rule: str = "exact", ridge: float = 0.0) -> LowRankBound:
    """Alg. 1 over explicit configurations with the curvature kept as V^T S V + diag(D).

    Parameters
    ----------
    features : (n, d) for one partition function, or (t, n, d) for the sum of t of them
    theta : (d,) expansion point
    log_prior : (n,) / (t, n) log h(y), -inf for zero weight; default 0
    order : "descending", "ascending" or "given" (the visiting order of Alg. 1, which is also
        the order of the low-rank updates)
    rank : k, the rank of V
    rule : "exact" (default), "sgb" or "paper" (not always a bound; see the module docstring)
    ridge : initial D (adds ridge/2 ||delta||^2 to the bound)
    """
    features, theta, log_prior = _check_inputs(features, theta, log_prior)
    if features.ndim == 2:
        features = features[None]
        log_prior = log_prior[None]
    with np.errstate(over="ignore", invalid="ignore"):
        log_alpha = log_prior + features @ theta
    if np.any(np.isnan(log_alpha) | (log_alpha == np.inf)):
        raise ValueError("scores log h(y) + theta^T f(y) overflow float64; rescale the features")
    perm = ordering(log_alpha, order)
    log_alpha_s = np.take_along_axis(log_alpha, perm, axis=1)
    features_s = np.take_along_axis(features, perm[:, :, None], axis=1)
    log_z, mean, w, L = alg1_terms(log_alpha_s, features_s)
    acc = LowRankAccumulator(features.shape[-1], rank, rule, ridge)
    R = np.sqrt(w)[:, :, None] * L
    if not np.isfinite(R).all():
        raise ValueError("the curvature overflows float64 (features too large); rescale them")
    acc.add_rows(R.reshape(-1, R.shape[-1]))
    return LowRankBound(float(log_z.sum()), mean.sum(axis=0), acc.curvature(), theta)


# ------------------------------------------------------------------------ softmax features
def accumulate_softmax(acc: LowRankAccumulator, X, factors: dict,
                       sample_weight: np.ndarray | None = None, free: int = 0,
                       intercept: bool = False) -> None:
    """Stream the rank-one terms of the factored softmax bound of the rows of X into ``acc``.

    Sample j contributes, in visiting order i, r = sqrt(s_j w_i) (l_i (x) x_j) with
    l_i = e_{label_i} - m_{i-1} restricted to the classes from ``free`` on, where the running
    mean of the label vectors follows m_i = m_{i-1} + rho_i l_i (the factors of
    :func:`zbound.bounds.multinomial.label_bound_factors`, class-major (n, t)). Memory: O(n + p)
    per term, no (t, n, n) array. The terms sum to the :class:`LabelBoundCurvature` of the
    same factors. ``intercept``: x_j carries an implicit last entry 1 (a per-class intercept).
    """
    perm, rho, w = factors["perm"], factors["rho"], factors["w"]
    n, t = perm.shape
    d = X.shape[1] + bool(intercept)
    if acc.p != (n - free) * d:
        raise ValueError(f"accumulator has p = {acc.p}, the softmax terms {(n - free) * d}")
    sparse = sp.issparse(X)
    for j in range(t):
        sj = 1.0 if sample_weight is None else float(sample_weight[j])
        if sj == 0.0:
            continue
        wj = w[:, j] * sj
        if not wj.any():
            continue
        x = X[j].toarray().ravel() if sparse else np.asarray(X[j], dtype=np.float64)
        if intercept:
            x = np.append(x, 1.0)
        m = np.zeros(n)
        for i in range(n):
            lab = perm[i, j]
            l = -m
            l[lab] += 1.0
            if wj[i] > 0.0:
                acc.add(np.sqrt(wj[i]) * np.outer(l[free:], x).ravel())
            m = m + rho[i, j] * l


def _eigh(M: np.ndarray):
    """Ascending eigenpairs of a small symmetric matrix (raw LAPACK dsyevd: the wrapper's
    checks cost more than a (k+b)-sized problem)."""
    w, Q, info = scipy.linalg.lapack.dsyevd(M)
    if info != 0:
        w, Q = np.linalg.eigh(M)
    return w, Q


class BlockedLowRank:
    """V^T diag(s) V + diag(D) accumulated ``block`` rank-one terms at a time: the block version
    of the "exact" rule of :mod:`zbound.bounds.lowrank` (one (k+b)-sized eigenproblem per block
    of b terms instead of b Python-level rank-one updates).

    For a block R (b, p) with P = V R^T and the residual G = R^T - V^T P = Q_g R_g (thin QR,
    after a second Gram-Schmidt pass against V), the sum V^T diag(s) V + R^T R is exactly
    U^T M U with U = [V; Q_g^T] and M = diag(s, 0) + F F^T, F = [P; R_g] ((k + b) x b). M is
    eigendecomposed, the top ``rank`` pairs are kept, and every other pair (c, w) is absorbed
    into the diagonal, D += c abs(v) ||v||_1 with v = U^T w (the least-trace diagonal that
    dominates c v v^T). Each step adds a PSD matrix to the exact running sum, so the result
    dominates it for any V (R^T = V^T P + Q_g R_g holds by construction; orthonormal V only
    makes it tight). Cost O(p (k + b)^2) per block; the (k + b, p) work arrays are allocated
    once (fresh megabyte-sized arrays per block cost page faults comparable to the BLAS work).
    """

    def __init__(self, p: int, rank: int, block: int):
        _check_positive_int("rank", rank)
        _check_positive_int("block", block)
        self.p, self.rank, self.block = int(p), int(rank), int(block)
        m = self.rank + self.block
        self.U = np.empty((m, self.p))             # rows [V; Q_g^T]
        self.W = np.empty((m, self.p))             # rotated basis
        self.GT = np.empty((self.block, self.p))
        self.k = 0
        self.s = np.zeros(0)
        self.D = np.zeros(self.p)

    @property
    def V(self) -> np.ndarray:
        return self.U[:self.k]

    def add_block(self, R: np.ndarray) -> None:
        """Sigma += R^T R for R (b, p), b <= ``block``."""
        R = np.asarray(R, dtype=np.float64)
        b = R.shape[0]
        if b == 0:
            return
        if b > self.block or R.shape[1] != self.p:
            raise ValueError(f"a block must have at most {self.block} rows of length {self.p}, "
                             f"got {R.shape}")
        k = self.k
        V = self.U[:k]
        GT = self.GT[:b]
        if k:
            P = R @ V.T                            # (b, k): P^T
            np.matmul(P, V, out=GT)
            np.subtract(R, GT, out=GT)             # G^T = R - P^T V
            c = GT @ V.T                           # second Gram-Schmidt pass
            P += c
            GT -= c @ V
        else:
            P = np.zeros((b, 0))
            GT[...] = R
        Qg, Rg = scipy.linalg.qr(GT.T, mode="economic", check_finite=False)
        q = Rg.shape[0]                            # min(b, p)
        F = np.vstack([P.T, Rg])
        M = F @ F.T
        M[np.arange(k), np.arange(k)] += self.s
        lam, Q = _eigh(M)                          # ascending
        m = k + q
        self.U[k:m] = Qg.T
        W = self.W[:m]
        np.matmul(Q.T, self.U[:m], out=W)          # the eigenvectors in R^p
        drop = max(0, m - self.rank)
        if drop:
            Wd = np.abs(W[:drop])
            c = np.maximum(lam[:drop], 0.0) * Wd.sum(axis=1)
            self.D += c @ Wd
        self.k = m - drop
        self.U[:self.k] = W[drop:m]
        self.s = np.maximum(lam[drop:], 0.0)

    def add_rows(self, R: np.ndarray) -> None:
        """Every row of R as a rank-one term, ``block`` at a time."""
        for a in range(0, R.shape[0], self.block):
            self.add_block(R[a:a + self.block])

    def curvature(self) -> LowRankCurvature:
        return LowRankCurvature(self.V.copy(), np.diag(self.s), self.D.copy(), self.rank)


def blocked_lowrank_update(V: np.ndarray, s: np.ndarray, D: np.ndarray, R: np.ndarray,
                           rank: int):
    """One block update of :class:`BlockedLowRank` on explicit (V, s, D): returns the new
    (V, s) and adds the absorbed pairs to D in place."""
    acc = BlockedLowRank(D.shape[0], rank, max(1, R.shape[0]))
    k = V.shape[0]
    if k > rank:
        raise ValueError(f"V has {k} rows, more than rank = {rank}")
    acc.U[:k] = V
    acc.k, acc.s, acc.D = k, np.asarray(s, dtype=np.float64), D
    acc.add_block(R)
    return acc.V.copy(), acc.s


