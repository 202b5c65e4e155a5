"""Linear-chain CRF negative log-likelihood as a loss of the core contracts.

Parameters theta = [vec(W), vec(T)]: W (n_features, m) state weights, row-major (entry
a * m + y is attribute a with label y), and T (m, m) transitions (entry n_features * m + y' * m
+ y scores y' -> y). Every attribute gets a weight for every label and every transition is
present (CRFsuite's ``feature.possible_states`` and ``feature.possible_transitions``).

    J(theta) = sum_j [log Z_j(theta) - score_j(y_j)]

(a weighted or mini-batch objective scales the loss: ``c * majorizer`` and ``subset``).

``value``, ``value_and_grad`` run forward-backward over the layout's chunks (threads with
``n_jobs``); ``value_grad_hessian`` adds the exact Hessian as a matrix-free operator
(:class:`ChainHessian`, a tangent forward-backward pass per product); ``majorizer`` returns
Alg. 3's bound on the chain (``rule="split"`` of :func:`zbound.bounds.junction.chain_bound`,
visiting the largest term first) as the matrix-free :class:`ChainBoundCurvature`: one product
costs a tangent and an adjoint pass ((b, m) x (m, m) products per position) and two sparse
products, about one value-and-gradient evaluation; no (p, p) or (p, k) array is ever formed.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from zbound._linalg import jacobi
from zbound.bounds.curvature import Curvature
from zbound.bounds.junction import alg1_gershgorin
from zbound.models.base import Majorizer
from zbound.structured.chain import (
    ChainLayout,
    Potentials,
    SplitFactors,
    _et,
    forward_backward,
    hessian_matvec,
    map_chunks,
    marginals,
    n_threads,
    split_matvec_chunk,
    viterbi,
)


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

    def __init__(self, X, lengths, y, n_labels: int, n_jobs=None,
                 chunk_tokens: int = 8192):
        X = sp.csr_matrix(X, dtype=np.float64)
        k = n_threads(n_jobs)
        if k > 1:      # at least one chunk per thread, of about equal token counts
            n_tok = int(np.sum(np.asarray(lengths)))
            chunk_tokens = max(1, min(chunk_tokens, -(-n_tok // k)))
        self.layout = ChainLayout(lengths, chunk_tokens)
        if X.shape[0] != self.layout.n_tokens:
            raise ValueError(f"X has {X.shape[0]} rows but the lengths sum to "
                             f"{self.layout.n_tokens} tokens")
        if not np.all(np.isfinite(X.data)):
            raise ValueError("feature values contain NaN or inf")
        y = np.asarray(y, dtype=np.int64)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have one label per token ({X.shape[0]}), got {y.shape}")
        m = int(n_labels)
        if m < 1 or y.min() < 0 or y.max() >= m:
            raise ValueError(f"labels must lie in 0..{m - 1}")
        self.X, self.XT, self.y, self.m = X, X.T.tocsr(), y, m
        self._X2T = None
        self.n_features = X.shape[1]
        self.n_params = self.n_features * m + m * m
        self.n_samples = self.layout.lengths.size
        self.n_jobs = n_jobs
        self.chunk_tokens = chunk_tokens
        # observed counts: state (X^T one-hot(y)) and transitions
        Y1 = sp.csr_matrix((np.ones(y.size), (np.arange(y.size), y)), shape=(y.size, m))
        self.obs_W = np.asarray((self.XT @ Y1).todense())
        inner = self.layout.inner
        self.obs_T = np.zeros((m, m))
        np.add.at(self.obs_T, (y[inner - 1], y[inner]), 1.0)

    # ----------------------------------------------------------------------- helpers
    @property
    def X2T(self):
        """(X * X)^T as CSR (for diagonal preconditioners), formed once."""
        if self._X2T is None:
            self._X2T = self.XT.multiply(self.XT).tocsr()
        return self._X2T

    def split(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {theta.shape}")
        k = self.n_features * self.m
        return theta[:k].reshape(self.n_features, self.m), theta[k:].reshape(self.m, self.m)

    def potentials(self, theta, X=None) -> Potentials:
        W, T = self.split(theta)
        X = self.X if X is None else X
        return Potentials(np.asarray(X @ W), T)

    def subset(self, seqs) -> ChainCRFLoss:
        """The loss of the sequences ``seqs`` (a mini-batch)."""
        seqs = np.asarray(seqs, dtype=np.int64)
        lay = self.layout
        rows = np.concatenate([np.arange(lay.offsets[s], lay.offsets[s] + lay.lengths[s])
                               for s in seqs])
        return ChainCRFLoss(self.X[rows], lay.lengths[seqs], self.y[rows], self.m,
                            self.n_jobs, self.chunk_tokens)

    def _gold(self, pot):
        lay, y = self.layout, self.y
        s = pot.S[np.arange(y.size), y]
        inner = lay.inner
        s[inner] += pot.T[y[inner - 1], y[inner]]
        return np.bincount(lay.seq_of_token, weights=s, minlength=lay.lengths.size)


    # ----------------------------------------------------------------------- protocol
    def value(self, theta) -> float:
        pot = self.potentials(theta)
        log_z, _, _ = forward_backward(self.layout, pot, self.n_jobs, backward=False)
        return float(np.sum(log_z - self._gold(pot)))

    def _value_grad(self, theta):
        pot = self.potentials(theta)
        log_z, A, B = forward_backward(self.layout, pot, self.n_jobs)
        P, pair = marginals(self.layout, pot, log_z, A, B, self.n_jobs)
        gW = np.asarray(self.XT @ P) - self.obs_W
        gT = pair - self.obs_T
        f = float(np.sum(log_z - self._gold(pot)))
        return f, np.concatenate([gW.ravel(), gT.ravel()]), (pot, log_z, A, B, P, pair)

    def value_and_grad(self, theta):
        f, g = self._value_grad(theta)[:2]
        return f, g

    def value_grad_hessian(self, theta):
        """Value, gradient and the exact Hessian as a matrix-free operator
        (:class:`ChainHessian`: one product costs a tangent forward and backward pass)."""
        f, g, fb = self._value_grad(theta)
        return f, g, ChainHessian(self, *fb)

    def hessian(self, theta):
        return self.value_grad_hessian(theta)[2]

    def majorizer(self, theta, order: str = "descending", eps: float = 1.0) -> Majorizer:
        """Alg. 3 bound on every chain, rule "split" of
        :func:`zbound.bounds.junction.chain_bound` (visiting the largest term first; ``order``
        is ignored), as the matrix-free :class:`ChainBoundCurvature`."""
        f, g, fb = self._value_grad(theta)
        curv = ChainBoundCurvature(self, fb[0], fb[2], fb[4], eps=eps)
        return Majorizer(np.asarray(theta, dtype=np.float64).copy(), f, g, curv)

    def predict(self, theta, X, lengths, n_jobs=None) -> np.ndarray:
        lay = ChainLayout(lengths, self.chunk_tokens)
        return viterbi(lay, self.potentials(theta, X), n_jobs)


class _ChainOperator(Curvature):
    """Shared by the CRF's matrix-free operators: scaling, ridge, dense forms for tests."""

    reg = 0.0
    scale = 1.0

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

    def preconditioner(self):
        return jacobi(self._surrogate_diagonal())

    def to_dense(self):
        p = self.shape[0]
        if p > 5000:
            raise MemoryError(f"refusing to form a dense ({p}, {p}) curvature")
        return np.column_stack([self.matvec(e) for e in np.eye(p)])

    def add_to_dense(self, out):
        out += self.to_dense()

    def diagonal(self):
        return np.diag(self.to_dense()).copy()


class ChainHessian(_ChainOperator):
    """Exact Hessian of the CRF loss (plus ``reg`` I), matrix-free: H v = [X^T dP, dpair] with
    the tangents of the node and pairwise marginals from a tangent forward-backward pass
    (:func:`zbound.structured.chain.hessian_matvec`). Preconditioner: Jacobi on the diagonal
    of the per-token softmax blocks, X^2^T (P (1 - P)), and the pairwise counts."""

    def __init__(self, loss: ChainCRFLoss, pot, log_z, A, B, P, pair, reg: float = 0.0):
        self.loss, self.pot, self.log_z, self.A, self.B, self.P = loss, pot, log_z, A, B, P
        self.pair = pair
        self.reg = float(reg)
        self.scale = 1.0
        self.shape = (loss.n_params, loss.n_params)

    def matvec(self, v):
        loss = self.loss
        v = np.asarray(v, dtype=np.float64)
        VW, VT = loss.split(v)
        SV = np.asarray(loss.X @ VW)
        dP, dT = hessian_matvec(loss.layout, self.pot, self.log_z, self.A, self.B, self.P, SV,
                                VT, loss.n_jobs)
        return self._finish(v, loss.XT @ dP, dT)

    def _surrogate_diagonal(self):
        loss = self.loss
        dW = np.asarray(loss.X2T @ (self.P * (1.0 - self.P))).ravel()
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
        if not (np.isfinite(eps) and eps > 0):
            raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
        self.loss, self.pot, self.A, self.P = loss, pot, A, P
        self.eps = float(eps)
        self.fac = SplitFactors(loss.layout, pot, A, loss.n_jobs)
        self.reg = float(reg)
        self.scale = 1.0
        self.shape = (loss.n_params, loss.n_params)

    def matvec(self, v):
        loss = self.loss
        v = np.asarray(v, dtype=np.float64)
        VW, VT = loss.split(v)
        SV = np.asarray(loss.X @ VW)
        n, m = SV.shape
        q = np.empty((n, m))
        lam = np.empty((n, m))
        ET = _et(self.pot, VT)
        parts = map_chunks(lambda c: split_matvec_chunk(c, self.pot, self.A, self.fac, SV, ET,
                                                        self.eps, q, lam),
                           loss.layout.chunks, loss.n_jobs)
        GT = sum(parts) + (1.0 + 1.0 / self.eps) * self.fac.K * VT
        return self._finish(v, loss.XT @ lam, GT)

    def _surrogate_diagonal(self):
        loss, fac = self.loss, self.fac
        lay = loss.layout
        own = np.zeros_like(self.P)
        cur = lay.inner
        pi = fac.pi[cur]
        own[cur - 1] = (1.0 + self.eps) * fac.Dbar[cur] * (1.0 - pi) ** 2
        own[lay.last] = alg1_gershgorin(self.A[lay.last])
        dW = np.asarray(loss.X2T @ own).ravel()
        dT = (1.0 + 1.0 / self.eps) * fac.K.ravel()
        return self.scale * np.concatenate([dW, dT]) + self.reg
