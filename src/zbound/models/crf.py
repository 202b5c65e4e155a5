"""Linear-chain CRF negative log-likelihood as a loss of the core contracts.

Parameters theta = [vec(W), vec(T)]: W (n_features, m) state weights, row-major (entry
a * m + y is attribute a with label y), and T (m, m) transitions (entry n_features * m + y' * m
+ y scores y' -> y). Every attribute gets a weight for every label and every transition is
present (CRFsuite's ``feature.possible_states`` and ``feature.possible_transitions``).

    J(theta) = sum_j [log Z_j(theta) - score_j(y_j)]

(a weighted or mini-batch objective scales the loss: ``c * majorizer`` and ``subset``).

``value``, ``value_and_grad`` run forward-backward over the layout's chunks (threads with
``n_jobs``); ``majorizer`` returns Alg. 3's bound on the chain (``rule="shared"`` of
:func:`zbound.bounds.junction.chain_bound`, visiting the largest term first) as a matrix-free
curvature operator :class:`ChainBoundCurvature`: one product costs about one forward-backward
pass and two sparse products, and no (p, p) or (p, k) array is ever formed.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from zbound._linalg import jacobi
from zbound.bounds.curvature import Curvature
from zbound.models.base import Majorizer
from zbound.structured.chain import (
    ChainLayout,
    Potentials,
    bound_matvec_chunk,
    forward_backward,
    map_chunks,
    marginals,
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
        P, pair = marginals(self.layout, pot, log_z, A, B)
        gW = np.asarray(self.XT @ P) - self.obs_W
        gT = pair - self.obs_T
        f = float(np.sum(log_z - self._gold(pot)))
        return f, np.concatenate([gW.ravel(), gT.ravel()]), pot, A, P

    def value_and_grad(self, theta):
        f, g = self._value_grad(theta)[:2]
        return f, g

    def majorizer(self, theta, order: str = "descending") -> Majorizer:
        """Alg. 3 bound (matrix-free, rule "shared"); ``order`` is ignored: the operator visits
        the largest term first, then the others in label order."""
        f, g, pot, A, P = self._value_grad(theta)
        curv = ChainBoundCurvature(self, pot, A, P)
        return Majorizer(np.asarray(theta, dtype=np.float64).copy(), f, g, curv)

    def predict(self, theta, X, lengths, n_jobs=None) -> np.ndarray:
        lay = ChainLayout(lengths, self.chunk_tokens)
        return viterbi(lay, self.potentials(theta, X), n_jobs)


class ChainBoundCurvature(Curvature):
    """Matrix-free curvature of the chain bound (Alg. 3, rule "shared"), plus ``reg`` I.

    Products run the tangent / adjoint recursions of
    :func:`zbound.structured.chain.bound_matvec_chunk` over the chunks (threads). The
    preconditioner is Jacobi on a cheap diagonal surrogate (the node-marginal variances on the
    squared features, floored), not the operator's diagonal, which would cost p products.
    """

    def __init__(self, loss: ChainCRFLoss, pot: Potentials, A, P, reg: float = 0.0):
        self.loss, self.pot, self.A, self.P = loss, pot, A, P
        self.reg = float(reg)
        self.scale = 1.0
        self.shape = (loss.n_params, loss.n_params)

    def __mul__(self, c):
        """c * (bound + reg I) with the scale kept inside, so that the operator keeps its own
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

    def matvec(self, v):
        loss = self.loss
        v = np.asarray(v, dtype=np.float64)
        VW, VT = loss.split(v)
        SV = np.asarray(loss.X @ VW)
        n, m = SV.shape
        q = np.empty((n, m))
        lam = np.empty((n, m))
        parts: list = []
        map_chunks(lambda c: bound_matvec_chunk(c, self.pot, self.A, SV, VT, q, lam, parts),
                   loss.layout.chunks, loss.n_jobs)
        GT = sum(parts)
        out = np.concatenate([np.asarray(loss.XT @ lam).ravel(), GT.ravel()])
        if self.scale != 1.0:
            out *= self.scale
        if self.reg:
            out += self.reg * v
        return out

    def _surrogate_diagonal(self):
        loss = self.loss
        X2T = loss.XT.multiply(loss.XT).tocsr()
        var = np.maximum(self.P * (1.0 - self.P), 0.05)
        dW = np.asarray(X2T @ var).ravel()
        dT = np.full(loss.m * loss.m, 0.05 * loss.layout.inner.size / loss.m + 1.0)
        return self.scale * np.concatenate([dW, dT]) + self.reg

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
