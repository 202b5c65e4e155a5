"""Linear-chain CRF negative log-likelihood as a loss of the core contracts.

Parameters theta = [vec(W), vec(T)]: W (n_features, m) state weights, row-major (entry
a * m + y is attribute a with label y), and T (m, m) transitions (entry n_features * m + y' * m
+ y scores y' -> y). Every attribute gets a weight for every label and every transition is
present (CRFsuite's ``feature.possible_states`` and ``feature.possible_transitions``).

    J(theta) = sum_j [log Z_j(theta) - score_j(y_j)]

(a weighted or mini-batch objective scales the loss: ``c * majorizer`` and ``subset``).

``value``, ``value_and_grad`` run the scaled forward-backward recursion over the layout's
chunks (:func:`zbound.structured.chain.chunk_value_grad`; threads with ``n_jobs``) on the rows
of X stored in the chunks' position-major order, with the log-space recursion as the fallback
for extreme weights; ``value_grad_hessian`` (log-space messages in the original token order)
adds the exact Hessian as a matrix-free operator
(:class:`ChainHessian`, a tangent forward-backward pass per product); ``majorizer`` returns
Alg. 3's bound on the chain (``rule="split"`` of :func:`zbound.bounds.junction.chain_bound`,
visiting the largest term first) as the matrix-free :class:`ChainBoundCurvature`: one product
costs a tangent and an adjoint pass ((b, m) x (m, m) products per position) and two sparse
products, about one value-and-gradient evaluation; no (p, p) or (p, k) array is ever formed.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import scipy.sparse as sp

from zbound.bounds.curvature import MatrixFreeCurvature
from zbound.bounds.junction import alg1_gershgorin
from zbound.models.base import Majorizer
from zbound.models.loss import check_design_magnitude
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.structured import compiled
from zbound.structured.chain import (
    LOGSPACE_RANGE,
    ChainLayout,
    Potentials,
    SplitFactors,
    chunk_value_grad,
    forward_backward,
    hessian_matvec,
    map_chunks,
    marginals,
    n_threads,
    one_blas_thread,
    scaled_split_factors,
    scaled_split_matvec_chunk,
    split_matvec_chunk,
    tangent_terms,
    viterbi,
)

# the largest feature value a float32 evaluation takes (:meth:`ChainCRFLoss.single_precision`)
_MAX_SINGLE_VALUE = 1e30


def _row_block(M, a: int, b: int):
    """Rows a..b of a CSR matrix as a CSR view: its data and indices are not copied. (The
    constructor would copy them: SciPy's format check "prunes" a view of less than half of
    its base into a new array, which on full CoNLL-2000 made the chunks a second 39 MB copy
    of X.)"""
    ip = M.indptr[a:b + 1]
    out = sp.csr_matrix((b - a, M.shape[1]), dtype=M.dtype)
    out.data = M.data[ip[0]:ip[-1]]
    out.indices = M.indices[ip[0]:ip[-1]]
    out.indptr = ip - ip[0]
    out.has_sorted_indices = M.has_sorted_indices
    return out


class ChainCRFLoss:
    """Sum over sequences of the chain CRF's negative log-likelihood.

    Parameters
    ----------
    X : (n_tokens, n_features) CSR, the tokens of all sequences one sequence after another
    lengths : (n_sequences,) tokens per sequence
    y : (n_tokens,) label indices in 0..n_labels-1
    n_labels : m
    n_jobs : threads for forward-backward (None: 1; -1: all cores)
    chunk_tokens : tokens per chunk of sequences (the unit of work of one thread)
    """

    #: the evaluation's precision (its float32 form: :meth:`single_precision`)
    dtype = np.dtype(np.float64)

    @staticmethod
    def rows(M):
        """A block of X as stored (float64)."""
        return M

    def __init__(self, X, lengths, y, n_labels: int, n_jobs=None,
                 chunk_tokens: int = 16384):
        X = sp.csr_matrix(X, dtype=np.float64)
        k = n_threads(n_jobs)
        # k interleaved chunks per group of sequences: one per thread, equal lengths
        self.layout = ChainLayout(lengths, chunk_tokens, interleave=k)
        if X.shape[0] != self.layout.n_tokens:
            raise ValueError(f"X has {X.shape[0]} rows but the lengths sum to "
                             f"{self.layout.n_tokens} tokens")
        if not np.all(np.isfinite(X.data)):
            raise ValueError("feature values contain NaN or inf")
        # values whose sums over the tokens would overflow: the error SoftmaxLoss gives
        check_design_magnitude(X)
        y = np.asarray(y, dtype=np.int64)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have one label per token ({X.shape[0]}), got {y.shape}")
        m = int(n_labels)
        if m < 1 or y.min() < 0 or y.max() >= m:
            raise ValueError(f"labels must lie in 0..{m - 1}")
        lay = self.layout
        # the rows of X are kept in the chunks' position-major order (lay.perm): then the
        # scores of a chunk, its node marginals and its rows of X are contiguous blocks
        self.Xp = X[lay.perm]
        self.Xp.sort_indices()
        self.inv = np.empty_like(lay.perm)
        self.inv[lay.perm] = np.arange(lay.perm.size)
        self.y, self.m = y, m
        self._yp = y[lay.perm]                      # the labels in position-major order
        self._X2T = None
        self.n_features = X.shape[1]
        self.n_params = self.n_features * m + m * m
        self.n_samples = lay.lengths.size
        self.n_jobs = n_jobs
        self.chunk_tokens = chunk_tokens
        self._Xc = [_row_block(self.Xp, a, b) for a, b in zip(lay.bounds[:-1], lay.bounds[1:])]
        # X^T P as (block of token rows)^T P, one block per thread, each holding an equal
        # share of the stored entries. No transposed copy of X is kept: the scatter form
        # (CSC products, P read in order) also runs faster than CSR products with X^T, which
        # gather rows of P at random (and no transposed copy's memory)
        k = min(k, lay.n_tokens)          # the layout's threads (n_tokens >= 1)
        share = np.linspace(0, self.Xp.nnz, k + 1)
        cuts = np.searchsorted(self.Xp.indptr, share, side="left").astype(np.int64)
        cuts[0], cuts[-1] = 0, lay.n_tokens
        cuts = np.maximum.accumulate(np.minimum(cuts, lay.n_tokens))
        self._XTb = [(a, b, _row_block(self.Xp, a, b)) for a, b in zip(cuts[:-1], cuts[1:])
                     if b > a]
        # observed counts: state (X^T one-hot(y)) and transitions
        Y1 = sp.csr_matrix((np.ones(y.size), (self.inv, y)), shape=(y.size, m))
        # obs_W and obs_T are views of obs (one copy of the counts)
        self.obs = np.zeros(self.n_params)
        self.obs_W = self.obs[:self.n_features * m].reshape(self.n_features, m)
        self.obs_W[...] = (self.Xp.T @ Y1).toarray()
        inner = lay.inner
        self.obs_T = self.obs[self.n_features * m:].reshape(m, m)
        np.add.at(self.obs_T, (y[inner - 1], y[inner]), 1.0)

    # ----------------------------------------------------------------------- helpers
    @property
    def X(self):
        """The feature matrix in the original token order (formed on demand)."""
        return self.Xp[self.inv]

    def X_dot(self, V) -> np.ndarray:
        """X V (n_tokens, m) in the original token order."""
        out = np.empty((self.layout.n_tokens, V.shape[1]))
        out[self.layout.perm] = self.Xp @ V
        return out

    def XT_dot(self, R) -> np.ndarray:
        """X^T R for R (n_tokens, m) in the original token order."""
        return np.asarray(self.Xp.T @ R[self.layout.perm])

    @property
    def X2T(self):
        """(X * X)^T as CSR (for diagonal preconditioners; in the position-major row order),
        formed once."""
        if self._X2T is None:
            self._X2T = self.Xp.multiply(self.Xp).T.tocsr()
        return self._X2T

    def split(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        k = self.n_features * self.m
        return theta[:k].reshape(self.n_features, self.m), theta[k:].reshape(self.m, self.m)

    def potentials(self, theta, X=None) -> Potentials:
        W, T = self.split(theta)
        S = self.X_dot(W) if X is None else np.asarray(X @ W)
        return Potentials(S, T)

    def subset(self, seqs) -> ChainCRFLoss:
        """The loss of the sequences ``seqs`` (a mini-batch)."""
        seqs = np.asarray(seqs, dtype=np.int64)
        lay = self.layout
        rows = np.concatenate([np.arange(lay.offsets[s], lay.offsets[s] + lay.lengths[s])
                               for s in seqs])
        return ChainCRFLoss(self.Xp[self.inv[rows]], lay.lengths[seqs], self.y[rows], self.m,
                            self.n_jobs, self.chunk_tokens)

    def single_precision(self, copy: bool = True) -> SingleChainCRFLoss | None:
        """The same loss evaluated in float32 (:class:`SingleChainCRFLoss`: value and gradient
        only), from a float32 copy of X's values (half of X's memory more; the index arrays
        are shared) or, with ``copy=False``, converting each chunk's rows at every evaluation;
        None where float32 cannot hold X (entries beyond 1e30)."""
        if self.Xp.nnz and float(np.abs(self.Xp.data).max()) > _MAX_SINGLE_VALUE:
            return None
        return SingleChainCRFLoss(self, copy)

    def _fast(self, theta, grad: bool, blocks=None, keep: bool = False):
        """:meth:`_fast_pass` with BLAS on one thread throughout (see
        :func:`zbound.structured.chain.one_blas_thread`)."""
        with one_blas_thread():
            return self._fast_pass(theta, grad, self if blocks is None else blocks, keep)

    def _fast_pass(self, theta, grad: bool, blocks, keep: bool = False):
        """(value, gradient or None) by the scaled recursion on the position-major blocks
        (:func:`zbound.structured.chain.chunk_value_grad`), chunks on ``n_jobs`` threads, each
        with its own block of X W; X^T (P - Y) by blocks of feature rows. ``blocks``: the
        loss itself, or its :class:`SingleChainCRFLoss` (the rows of X, the scores, the
        recursion and the marginals in its ``dtype``, float32; sums in float64). None where
        the log-space recursion is needed (transitions spanning > 600 nats, or a scale
        underflows even with row-by-row shifts; in float32, also where it overflows).
        ``keep``: (value, gradient, the state of :class:`ScaledChainHessian` and
        :class:`ScaledChainBound`)."""
        W, T = self.split(theta)
        tmax = float(T.max())
        if T.max() - T.min() > LOGSPACE_RANGE:
            return None
        dt = blocks.dtype
        expT, W = np.exp(T - tmax).astype(dt, copy=False), W.astype(dt, copy=False)
        lay = self.layout
        P = np.empty((lay.n_tokens, self.m), dt) if grad else None

        def run(i):
            a, b = lay.bounds[i], lay.bounds[i + 1]
            Pc = None if P is None else P[a:b]
            X = blocks.rows(blocks._Xc[i])
            with np.errstate(over="ignore", invalid="ignore"):   # inf / nan: None below
                out = chunk_value_grad(lay.chunks[i], X @ W, expT, tmax, Pc, keep=keep)
                if out is None:        # scores spanning > ~650 nats: shift row by row
                    out = chunk_value_grad(lay.chunks[i], X @ W, expT, tmax, Pc,
                                           row_shift=True, keep=keep)
            if out is not None and Pc is not None:
                # the residual P - Y, row by row: its products with X keep the precision of
                # the residual (float32's rounding of P X - Y X near a fit would not)
                Pc[np.arange(b - a), self._yp[a:b]] -= 1.0
            return out

        parts = map_chunks(run, range(len(lay.chunks)), self.n_jobs)
        if any(r is None or not np.isfinite(r[0]) for r in parts):
            return None
        f = sum(r[0] for r in parts) - float(theta @ self.obs)
        if not grad:
            return f, None
        g = np.empty(self.n_params)
        self._xt(P, g[:self.n_features * self.m].reshape(self.n_features, self.m), blocks)
        pair = sum(r[1] for r in parts)
        g[self.n_features * self.m:] = (pair - self.obs_T).ravel()
        if keep:
            return f, g, (expT, [r[2:] for r in parts], P, pair)   # keep: float64 only
        return f, g

    def _xt(self, R, out, blocks=None):
        """out = X^T R for R (n_tokens, m) in the position-major order, by blocks of token
        rows on ``n_jobs`` threads (``blocks``: the loss or its float32 form)."""
        blocks = self if blocks is None else blocks

        def xt(blk):
            a, b, M = blk
            return blocks.rows(M).T @ R[a:b]

        parts = map_chunks(xt, blocks._XTb, self.n_jobs)
        out[...] = parts[0]
        for part in parts[1:]:
            out += part

    def _gold(self, pot):
        lay, y = self.layout, self.y
        s = pot.S[np.arange(y.size), y]
        inner = lay.inner
        s[inner] += pot.T[y[inner - 1], y[inner]]
        return np.bincount(lay.seq_of_token, weights=s, minlength=lay.lengths.size)

    # ----------------------------------------------------------------------- protocol
    def value(self, theta) -> float:
        out = self._fast(np.asarray(theta, dtype=np.float64), grad=False)
        if out is not None:
            return out[0]
        pot = self.potentials(theta)
        log_z, _, _ = forward_backward(self.layout, pot, self.n_jobs, backward=False)
        return float(np.sum(log_z - self._gold(pot)))

    def _value_grad(self, theta):
        """Value, gradient and the forward-backward quantities in the original token order
        (log-space messages; for the Hessian and the bound)."""
        pot = self.potentials(theta)
        log_z, A, B = forward_backward(self.layout, pot, self.n_jobs)
        P, pair = marginals(self.layout, pot, log_z, A, B, self.n_jobs)
        gW = self.XT_dot(P) - self.obs_W
        gT = pair - self.obs_T
        f = float(np.sum(log_z - self._gold(pot)))
        return f, np.concatenate([gW.ravel(), gT.ravel()]), (pot, log_z, A, B, P, pair)

    def value_and_grad(self, theta):
        out = self._fast(np.asarray(theta, dtype=np.float64), grad=True)
        if out is not None:
            return out
        with np.errstate(over="ignore", invalid="ignore"):
            f, g = self._value_grad(theta)[:2]
        if not (np.isfinite(f) and np.isfinite(g).all()):
            # scores beyond the float range (a trial step far too long on huge feature
            # values): an infinite objective, which every line search rejects
            return math.inf, np.zeros_like(g)
        return f, g

    def value_grad_hessian(self, theta):
        """Value, gradient and the exact Hessian as a matrix-free operator: one product costs a
        tangent forward and backward pass, compiled on the scaled recursion's state
        (:class:`ScaledChainHessian`) where the compiled kernels run and the recursion stays
        above its floors, else in log space (:class:`ChainHessian`)."""
        theta = np.asarray(theta, dtype=np.float64)
        if compiled.available():
            out = self._fast(theta, True, keep=True)
            if out is not None:
                return out[0], out[1], ScaledChainHessian(self, *out[2])
        f, g, fb = self._value_grad(theta)
        return f, g, ChainHessian(self, *fb)

    def hessian(self, theta):
        return self.value_grad_hessian(theta)[2]

    def majorizer(self, theta, order: str = "descending", eps: float = 1.0) -> Majorizer:
        """Alg. 3 bound on every chain, rule "split" of
        :func:`zbound.bounds.junction.chain_bound` (visiting the largest term first; ``order``
        is ignored), as a matrix-free curvature: compiled on the scaled recursion's state
        (:class:`ScaledChainBound`) where the compiled kernels run and the recursion stays
        above its floors, else in log space (:class:`ChainBoundCurvature`)."""
        theta = np.asarray(theta, dtype=np.float64)
        _check_eps(eps)
        if compiled.available():
            out = self._fast(theta, True, keep=True)
            if out is not None:
                expT, states = out[2][:2]
                curv = ScaledChainBound(self, expT, self.split(theta)[1], states, eps=eps)
                return Majorizer(theta.copy(), out[0], out[1], curv)
        f, g, fb = self._value_grad(theta)
        curv = ChainBoundCurvature(self, fb[0], fb[2], fb[4], eps=eps)
        return Majorizer(np.asarray(theta, dtype=np.float64).copy(), f, g, curv)

    def predict(self, theta, X, lengths, n_jobs=None) -> np.ndarray:
        lay = ChainLayout(lengths, self.chunk_tokens)
        return viterbi(lay, self.potentials(theta, X), n_jobs)


def _with_values(M, data):
    """The CSR matrix of M's structure (its index arrays shared, not copied) with ``data``."""
    out = sp.csr_matrix(M.shape, dtype=data.dtype)
    out.data, out.indices, out.indptr = data, M.indices, M.indptr
    out.has_sorted_indices = M.has_sorted_indices
    return out


class SingleChainCRFLoss:
    """:class:`ChainCRFLoss` evaluated in single precision, for the cheap early iterations of
    a mixed-precision solver (``LBFGSBound(evaluation="mixed")``): the scores X W, the
    scaled forward-backward recursion, the marginals and X^T (P - Y) in float32 (half the
    memory traffic of float64), log Z and the sums over chunks in float64. The gradient is
    formed from the residual P - Y token by token, so that its error stays relative to the
    residual as the fit improves.

    Value and gradient only (``value``, ``value_and_grad``); its values are approximations
    (relative error near 1e-7 per token), never bounds: a solver re-evaluates in float64
    before it stops or reports anything. Where float32 overflows or underflows (a chunk's
    recursion crosses float32's floor even with row-by-row shifts), the evaluation is the
    float64 loss's (``double``). Built by :meth:`ChainCRFLoss.single_precision`."""

    dtype = np.dtype(np.float32)

    def __init__(self, loss: ChainCRFLoss, copy: bool = True):
        self.double = loss
        self.n_params, self.n_samples = loss.n_params, loss.n_samples
        #: no float32 copy of X: each chunk's rows converted when it is evaluated
        self.blocked = not copy
        if self.blocked:
            self._Xc, self._XTb = loss._Xc, loss._XTb
            return
        Xp = _with_values(loss.Xp, loss.Xp.data.astype(np.float32))
        bounds = loss.layout.bounds
        self._Xc = [_row_block(Xp, a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        self._XTb = [(a, b, _row_block(Xp, a, b)) for a, b, _ in loss._XTb]

    def rows(self, M):
        """A block of X in float32 (converted here where no float32 copy is kept)."""
        return _with_values(M, M.data.astype(np.float32)) if M.dtype != self.dtype else M

    def value(self, theta) -> float:
        theta = np.asarray(theta, dtype=np.float64)
        out = self.double._fast(theta, False, self)
        return self.double.value(theta) if out is None else out[0]

    def value_and_grad(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        out = self.double._fast(theta, True, self)
        return self.double.value_and_grad(theta) if out is None else out


class _ChainOperator(MatrixFreeCurvature):
    """Shared by the CRF's matrix-free operators: the state (loss, potentials, forward
    messages, node marginals), the product's prologue (v -> X V_W, V_T) and epilogue
    (X^T R, scaling, ridge), scaling, dense forms for tests. A subclass implements
    ``_apply(SV, VT) -> (R, GT)``: R (n_tokens, m) in the original token order (its X^T R is
    the state part) and GT (m, m) the transition part."""

    reg = 0.0
    scale = 1.0

    def __init__(self, loss: ChainCRFLoss, pot: Potentials, A, P, reg: float = 0.0):
        self.loss, self.pot, self.A, self.P = loss, pot, A, P
        self.reg = float(reg)
        self.scale = 1.0
        self.shape = (loss.n_params, loss.n_params)

    def matvec(self, v):
        loss = self.loss
        v = np.asarray(v, dtype=np.float64)
        VW, VT = loss.split(v)
        R, GT = self._apply(loss.X_dot(VW), VT)
        return self._finish(v, loss.XT_dot(R), GT)

    def _apply(self, SV, VT):
        raise NotImplementedError

    def __mul__(self, c):
        """c * (operator + reg I), the scale kept inside so that the operator keeps its own
        preconditioner (a mini-batch bound scaled to the corpus)."""
        c = float(c)
        if not (np.isfinite(c) and c >= 0):
            raise ValueError(f"a curvature can only be scaled by a finite number >= 0, got {c}")
        out = copy.copy(self)
        out.scale = self.scale * c
        out.reg = self.reg * c
        return out

    __rmul__ = __mul__

    def with_ridge(self, scale: float, inplace: bool = False):
        out = self if inplace else copy.copy(self)
        out.reg = self.reg + float(scale)
        return out

    def _finish(self, v, gW, gT):
        out = np.concatenate([np.asarray(gW).ravel(), gT.ravel()])
        if self.scale != 1.0:
            out *= self.scale
        if self.reg:
            out += self.reg * v
        return out


class ChainHessian(_ChainOperator):
    """Exact Hessian of the CRF loss (plus ``reg`` I), matrix-free: H v = [X^T dP, dpair] with
    the tangents of the node and pairwise marginals from a tangent forward-backward pass
    (:func:`zbound.structured.chain.hessian_matvec`). Preconditioner: Jacobi on the diagonal
    of the per-token softmax blocks, X^2^T (P (1 - P)), and the pairwise counts."""

    def __init__(self, loss: ChainCRFLoss, pot, log_z, A, B, P, pair, reg: float = 0.0):
        super().__init__(loss, pot, A, P, reg)
        self.log_z, self.B, self.pair = log_z, B, pair

    def _apply(self, SV, VT):
        loss = self.loss
        return hessian_matvec(loss.layout, self.pot, self.log_z, self.A, self.B, self.P, SV,
                              VT, loss.n_jobs)

    def jacobi_diagonal(self):
        loss = self.loss
        dW = np.asarray(loss.X2T @ (self.P * (1.0 - self.P))[loss.layout.perm]).ravel()
        dT = (self.pair * (1.0 - self.pair / max(1, loss.layout.inner.size))).ravel()
        return self.scale * np.concatenate([dW, dT]) + self.reg


class _ScaledOperator(_ChainOperator):
    """Shared by the compiled operators: a product runs ``_chunk(i, SV, VT, R)`` on every
    chunk (SV = its rows of X V_W, R its rows of the state part's R, position-major; returns
    the chunk's transition part) on the loss's threads, then X^T R and the transition term
    ``_transition(VT)`` that does not depend on the chunks."""

    def matvec(self, v):
        loss = self.loss
        lay = loss.layout
        v = np.asarray(v, dtype=np.float64)
        VW, VT = loss.split(v)
        R = np.empty((lay.n_tokens, loss.m))

        def run(i):
            a, b = lay.bounds[i], lay.bounds[i + 1]
            return self._chunk(i, loss._Xc[i] @ VW, VT, R[a:b])

        gW = np.empty((loss.n_features, loss.m))
        with one_blas_thread():
            parts = map_chunks(run, range(len(lay.chunks)), loss.n_jobs)
            loss._xt(R, gW)
        return self._finish(v, gW, sum(parts) + self._transition(VT))

    def _chunk(self, i, SV, VT, R):
        raise NotImplementedError

    def _transition(self, VT):
        raise NotImplementedError


class ScaledChainHessian(_ScaledOperator):
    """The exact Hessian of the CRF loss (plus ``reg`` I) as :class:`ChainHessian`, its
    products compiled (:func:`zbound.structured.compiled.hessian_chunk`, chunks on the
    loss's threads, no interpreter lock) on the state the scaled recursion leaves: per chunk
    the normalized forward messages and pairwise weights, the residual P - Y and the expected
    transition counts, all position-major. No logarithm or exponential per product: the
    tangent passes are (b, m) x (m, m) products per position, as the recursion's. Built by
    :meth:`ChainCRFLoss.value_grad_hessian`."""

    def __init__(self, loss: ChainCRFLoss, expT, states, Pres, pair, reg: float = 0.0):
        super().__init__(loss, None, None, Pres, reg)
        self.expT, self.states, self.pair = expT, states, pair

    def _chunk(self, i, SV, VT, dP):
        lay = self.loss.layout
        a, b = lay.bounds[i], lay.bounds[i + 1]
        al, w = self.states[i]
        return compiled.hessian_chunk(lay.chunks[i], SV, VT, self.expT, al, w, self.P[a:b],
                                      self.loss._yp[a:b], dP)

    def _transition(self, VT):
        return VT * self.pair

    def jacobi_diagonal(self):
        loss = self.loss
        P = self.P.copy()
        P[np.arange(P.shape[0]), loss._yp] += 1.0       # the marginals from the residual
        dW = np.asarray(loss.X2T @ (P * (1.0 - P))).ravel()
        dT = (self.pair * (1.0 - self.pair / max(1, loss.layout.inner.size))).ravel()
        return self.scale * np.concatenate([dW, dT]) + self.reg


class ChainBoundCurvature(_ChainOperator):
    """Matrix-free curvature of the chain bound (Alg. 3, rule "split"), plus ``reg`` I.

    A product: SV = X V_W; the tangent recursion q_t = mu_t^T v (one (b, m) x (m, m) product
    per position); the label-space curvature, (1 + eps) Dbar_t on q_{t-1} centered at its
    forward mean (elementwise) and Alg. 1 at the last position; the adjoint recursion; X^T and
    the transition part (1 + 1/eps) K * VT. Dbar, pi and K are computed once per majorizer
    (:class:`zbound.structured.chain.SplitFactors`). Preconditioner: Jacobi on the diagonal of
    the own-position terms (the propagation to later positions left out).
    """

    def __init__(self, loss: ChainCRFLoss, pot: Potentials, A, P, reg: float = 0.0,
                 eps: float = 1.0):
        _check_eps(eps)
        super().__init__(loss, pot, A, P, reg)
        self.eps = float(eps)
        self.fac = SplitFactors(loss.layout, pot, A, loss.n_jobs)

    def _apply(self, SV, VT):
        n, m = SV.shape
        q = np.empty((n, m))
        lam = np.empty((n, m))
        ET = tangent_terms(self.pot, VT)
        parts = map_chunks(lambda c: split_matvec_chunk(c, self.pot, self.A, self.fac, SV, ET,
                                                        self.eps, q, lam),
                           self.loss.layout.chunks, self.loss.n_jobs)
        return lam, sum(parts) + (1.0 + 1.0 / self.eps) * self.fac.K * VT

    def jacobi_diagonal(self):
        loss, fac = self.loss, self.fac
        lay = loss.layout
        own = np.zeros_like(self.P)
        cur = lay.inner
        pi = fac.pi[cur]
        own[cur - 1] = (1.0 + self.eps) * fac.Dbar[cur] * (1.0 - pi) ** 2
        own[lay.last] = alg1_gershgorin(self.A[lay.last])
        dW = np.asarray(loss.X2T @ own[lay.perm]).ravel()
        dT = (1.0 + 1.0 / self.eps) * fac.K.ravel()
        return self.scale * np.concatenate([dW, dT]) + self.reg


class ScaledChainBound(_ScaledOperator):
    """The split chain bound's curvature as :class:`ChainBoundCurvature` (plus ``reg`` I), its
    products compiled (:func:`zbound.structured.chain.scaled_split_matvec_chunk`, chunks on
    the loss's threads) on the scaled recursion's normalized forward messages (position-major): the
    forward marginals pi are those messages, Dbar and K come from their logarithms
    (:func:`zbound.structured.chain.scaled_split_factors`), once per majorizer. Built by
    :meth:`ChainCRFLoss.majorizer`."""

    def __init__(self, loss: ChainCRFLoss, expT, T, states, reg: float = 0.0, eps: float = 1.0):
        _check_eps(eps)
        super().__init__(loss, None, None, None, reg)
        self.eps, self.expT = float(eps), expT
        self.al = [st[0] for st in states]
        chunks = loss.layout.chunks
        facs = map_chunks(lambda i: scaled_split_factors(chunks[i], self.al[i], T),
                          range(len(chunks)), loss.n_jobs)
        self.Dbar = [fac[0] for fac in facs]
        self.K = sum(fac[1] for fac in facs)

    def _chunk(self, i, SV, VT, lam):
        return scaled_split_matvec_chunk(self.loss.layout.chunks[i], SV, VT, self.expT,
                                         self.al[i], self.Dbar[i], self.eps, lam)

    def _transition(self, VT):
        return (1.0 + 1.0 / self.eps) * self.K * VT

    def jacobi_diagonal(self):
        loss = self.loss
        lay = loss.layout
        own = np.zeros((lay.n_tokens, loss.m))
        for i, c in enumerate(lay.chunks):
            a = lay.bounds[i]
            al, o = self.al[i], own[a:lay.bounds[i + 1]]
            cur0 = int(c.off[1]) if c.T > 1 else al.shape[0]
            prev = c.prev_row
            o[prev] = (1.0 + self.eps) * self.Dbar[i][cur0:] * (1.0 - al[prev]) ** 2
            last = c.off[c.lengths - 1] + np.arange(c.counts[0])
            o[last] = alg1_gershgorin(np.log(al[last]))
        dW = np.asarray(loss.X2T @ own).ravel()
        dT = (1.0 + 1.0 / self.eps) * self.K.ravel()
        return self.scale * np.concatenate([dW, dT]) + self.reg


def _check_eps(eps) -> None:
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")


def chain_crf_objective(M, lengths, y, n_labels: int, c2: float = 1.0, n_jobs=None):
    """CRFsuite's objective of a linear-chain CRF: sum_j -log p(y_j | x_j) + c2 ||theta||^2,
    as an :class:`~zbound.models.objective.Objective` (the library's L2 strength 2 c2) over
    :class:`ChainCRFLoss` (token features ``M`` (CSR, rows in sequence order), sequence
    ``lengths``, label indices ``y`` of every token, forward-backward on ``n_jobs`` threads).
    What :class:`zbound.ChainCRF` minimizes."""
    loss = ChainCRFLoss(M, lengths, y, n_labels, n_jobs=n_jobs)
    return Objective(loss, L2Penalty(2.0 * float(c2)))

