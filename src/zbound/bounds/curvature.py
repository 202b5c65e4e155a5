"""Curvature operators: symmetric PSD matrices with the structure a bound or Hessian gives.

Every operator has ``shape``, ``matvec(v)``, ``diagonal()``, ``to_dense()`` and
``solve(rhs, method=...)``, so solvers never care which structure they hold (STYLE.md).

- :class:`DenseCurvature`: an explicit (p, p) matrix (Alg. 1 on explicit configurations).
- :class:`KroneckerCurvature`: sum_j B_j (x) x_j x_j^T + reg * I, the multinomial structure of
  DESIGN.md 3.3 (parameters ordered class-major: theta = vec(W) with W of shape (n, d)).
- :class:`ScaledIdentity`: reg * I (the regularizer alone).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg

# Largest (pairs, d, t) operand for the batched class-pair Gram products of a dense assembly.
_BATCH_ELEMS = 1 << 20


@functools.lru_cache(maxsize=64)
def _pairs(n: int, strict: bool) -> tuple[np.ndarray, np.ndarray]:
    """Class pairs a < b (``strict``) or a <= b, as index arrays (cached: triu_indices costs
    more than the products it indexes at the Table 3 sizes)."""
    ia, ib = np.triu_indices(n, 1 if strict else 0)
    ia.flags.writeable = False
    ib.flags.writeable = False
    return ia, ib


class Curvature:
    """Base class: symmetric positive semi-definite operator of shape (p, p)."""

    shape: tuple[int, int]

    def matvec(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def diagonal(self) -> np.ndarray:
        raise NotImplementedError

    def to_dense(self) -> np.ndarray:
        raise NotImplementedError

    def quad(self, v: np.ndarray) -> float:
        """v^T C v."""
        return float(v @ self.matvec(v))

    def as_linear_operator(self) -> LinearOperator:
        p = self.shape[0]
        return LinearOperator((p, p), matvec=self.matvec, dtype=np.float64)

    def solve(self, rhs: np.ndarray, method: str = "cholesky", *, x0: np.ndarray | None = None,
              rtol: float = 1e-10, maxiter: int | None = None) -> np.ndarray:
        """Solve C x = rhs.

        ``method="cholesky"`` factors the dense matrix; ``method="cg"`` runs Jacobi-preconditioned
        conjugate gradient on matrix-vector products only. A partial CG solve from x0 = 0 still
        decreases the quadratic majorizer (CG iterates decrease it monotonically), which keeps
        majorization monotone (DESIGN.md 3.3).
        """
        rhs = np.asarray(rhs, dtype=np.float64)
        if method == "cholesky":
            return _cho_solve(self.to_dense(), rhs)
        if method == "cg":
            diag = self.diagonal()
            inv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)
            p = self.shape[0]
            precond = LinearOperator((p, p), matvec=lambda v: inv * v, dtype=np.float64)
            x, _ = cg(self.as_linear_operator(), rhs, x0=x0, rtol=rtol, atol=0.0,
                      maxiter=maxiter if maxiter is not None else 10 * p, M=precond)
            return x
        raise ValueError(f"unknown solve method {method!r}; use 'cholesky' or 'cg'")

    def __add__(self, other):
        if isinstance(other, int | float) and other == 0:
            return self
        return SumCurvature(self, other)

    __radd__ = __add__


def _cho_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    try:
        factor = scipy.linalg.cho_factor(matrix, lower=True, check_finite=False)
        return scipy.linalg.cho_solve(factor, rhs, check_finite=False)
    except np.linalg.LinAlgError:
        # Singular (no regularization and a flat direction): least-squares solution.
        return scipy.linalg.lstsq(matrix, rhs, check_finite=False)[0]


class DenseCurvature(Curvature):
    """An explicit symmetric matrix, plus ``reg`` times the identity."""

    def __init__(self, matrix: np.ndarray, reg: float = 0.0):
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"curvature matrix must be square, got shape {matrix.shape}")
        self.matrix = matrix
        self.reg = float(reg)
        self.shape = matrix.shape

    def matvec(self, v):
        return self.matrix @ v + self.reg * v

    def diagonal(self):
        return np.diag(self.matrix) + self.reg

    def to_dense(self):
        if self.reg == 0.0:
            return self.matrix.copy()
        out = self.matrix.copy()
        out.flat[:: out.shape[0] + 1] += self.reg
        return out


class ScaledIdentity(Curvature):
    def __init__(self, p: int, scale: float):
        self.shape = (int(p), int(p))
        self.scale = float(scale)

    def matvec(self, v):
        return self.scale * v

    def diagonal(self):
        return np.full(self.shape[0], self.scale)

    def to_dense(self):
        return self.scale * np.eye(self.shape[0])

    def solve(self, rhs, method="cholesky", **kwargs):
        return np.asarray(rhs, dtype=np.float64) / self.scale


class SumCurvature(Curvature):
    def __init__(self, *parts: Curvature):
        shapes = {p.shape for p in parts}
        if len(shapes) != 1:
            raise ValueError(f"cannot add curvatures of shapes {sorted(shapes)}")
        self.parts = parts
        self.shape = parts[0].shape

    def matvec(self, v):
        return sum(p.matvec(v) for p in self.parts)

    def diagonal(self):
        return sum(p.diagonal() for p in self.parts)

    def to_dense(self):
        return sum(p.to_dense() for p in self.parts)


class KroneckerCurvature(Curvature):
    """C = sum_j B_j (x) x_j x_j^T + reg * I, never formed unless asked (DESIGN.md 3.3).

    Parameters
    ----------
    X : (t, d) ndarray or CSR matrix
    B : (t, n, n) ndarray, symmetric PSD per sample
    reg : float

    The parameter vector is theta = vec(W), W of shape (n, d), row-major (index a * d + i), so
    block (a, b) of C is X^T diag(B[:, a, b]) X. A product C v costs O(t n d + t n^2).
    """

    def __init__(self, X, B: np.ndarray, reg: float = 0.0):
        B = np.asarray(B, dtype=np.float64)
        t = X.shape[0]
        if B.ndim != 3 or B.shape[0] != t or B.shape[1] != B.shape[2]:
            raise ValueError(f"B must have shape ({t}, n, n), got {B.shape}")
        self.X = X
        self.B = B
        self.reg = float(reg)
        self.n = B.shape[1]
        self.d = X.shape[1]
        p = self.n * self.d
        self.shape = (p, p)

    def matvec(self, v):
        V = np.asarray(v, dtype=np.float64).reshape(self.n, self.d)
        U = self.X @ V.T                                  # (t, n): x_j^T v_a
        R = np.einsum("jab,jb->ja", self.B, U)            # (t, n): B_j u_j
        out = np.asarray(self.X.T @ R).T                  # (n, d)
        return out.ravel() + self.reg * v

    def diagonal(self):
        if sp.issparse(self.X):
            sq = self.X.multiply(self.X)
            diag = np.asarray(sq.T @ np.diagonal(self.B, axis1=1, axis2=2)).T
        else:
            diag = (np.diagonal(self.B, axis1=1, axis2=2).T @ (self.X * self.X))
        return diag.ravel() + self.reg

    def diagonal_blocks(self) -> np.ndarray:
        """The n class blocks X^T diag(B[:, a, a]) X + reg I, shape (n, d, d) (dense X only).

        The block-Jacobi preconditioner of truncated Newton (DESIGN.md 3.3).
        """
        if sp.issparse(self.X):
            raise TypeError("diagonal_blocks needs a dense X")
        blocks = self._grams(np.diagonal(self.B, axis1=1, axis2=2))
        idx = np.arange(self.d)
        blocks[:, idx, idx] += self.reg
        return blocks

    def _grams(self, C: np.ndarray) -> np.ndarray:
        """X^T diag(C[:, k]) X for every column k of C (t, m), symmetrized, (m, d, d).

        One batched product while the (m, d, t) operand stays small (the Table 3 sizes, where
        a Python loop over pairs would cost more than the arithmetic), else one GEMM per column.
        """
        X = self.X
        m = C.shape[1]
        if m * X.size <= _BATCH_ELEMS:
            G = (X.T[None, :, :] * C.T[:, None, :]) @ X
        else:
            G = np.empty((m, self.d, self.d))
            for k in range(m):
                G[k] = (X * C[:, k, None]).T @ X
        G += G.transpose(0, 2, 1)
        G *= 0.5
        return G

    def _assemble(self, pair_weights, complete: bool) -> np.ndarray:
        """Dense (n d, n d) matrix with block (a, b) = X^T diag(c_ab) X (dense X), where
        ``pair_weights(ia, ib)`` gives the columns c_ab, (t, len(ia)), for index arrays a <= b.

        One (t, d) x (t, d) product per class pair a < b, plus one per class for the diagonal
        blocks, unless ``complete`` (every B_j 1 = 0): then block (a, a) is minus the sum of its
        row's off-diagonal blocks and n (n - 1) / 2 products suffice, against the n^2 of a
        generic Kronecker assembly (digits' 10-class bound: 45 instead of 100, and no
        (t, n^2 d) buffer).
        """
        n, d = self.n, self.d
        p = n * d
        ia, ib = _pairs(n, complete)
        M = np.zeros((n, n, d, d))
        if ia.size:
            G = self._grams(pair_weights(ia, ib))
            M[ia, ib] = G
            M[ib, ia] = G
        if complete:
            diag = np.arange(n)
            M[diag, diag] = -M.sum(axis=1)
        out = M.transpose(0, 2, 1, 3).reshape(p, p)
        if self.reg:
            out.flat[:: p + 1] += self.reg
        return out

    def to_dense(self):
        if not sp.issparse(self.X):
            B = self.B
            scale = float(np.max(np.abs(B))) if B.size else 0.0
            complete = bool(np.max(np.abs(B.sum(axis=2)), initial=0.0) <= 1e-13 * scale)
            return self._assemble(lambda ia, ib: B[:, ia, ib], complete)
        n, d = self.n, self.d
        X = self.X
        out = np.empty((n, d, n, d))
        for a in range(n):
            for b in range(a, n):
                blk = (X.T @ X.multiply(self.B[:, a, b][:, None])).toarray()
                out[a, :, b, :] = blk
                out[b, :, a, :] = blk.T
        dense = out.reshape(n * d, n * d)
        dense = 0.5 * (dense + dense.T)
        if self.reg:
            dense.flat[:: n * d + 1] += self.reg
        return dense


class SoftmaxCurvature(KroneckerCurvature):
    """Hessian of sum_j w_j log sum_a exp(w_a^T x_j): B_j = w_j (diag p_j - p_j p_j^T), + reg I.

    Same operator as :class:`KroneckerCurvature` with that B, but a product uses the structure
    B_j u = w_j p_j * (u - p_j^T u) in O(t n) instead of the O(t n^2) batched matrix product, and
    the (t, n, n) array is built only if something (a dense assembly, a preconditioner) asks.

    P : (t, n) softmax probabilities (or any sub-block of their columns: the rows of P need not
    sum to one, e.g. the free classes of a binary model with a reference class);
    weights : (t,) non-negative sample weights, default 1.
    complete : whether every row of P sums to one (a full softmax; lets ``to_dense`` skip the
        diagonal blocks); None checks.
    """

    def __init__(self, X, P: np.ndarray, reg: float = 0.0, weights: np.ndarray | None = None,
                 complete: bool | None = None):
        P = np.asarray(P, dtype=np.float64)
        if P.ndim != 2 or P.shape[0] != X.shape[0]:
            raise ValueError(f"P must have shape ({X.shape[0]}, n), got {P.shape}")
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != (X.shape[0],):
                raise ValueError(f"weights must have shape ({X.shape[0]},), got {weights.shape}")
        self.X = X
        self.P = P
        self.weights = weights
        self.reg = float(reg)
        self.n = P.shape[1]
        self.d = X.shape[1]
        p = self.n * self.d
        self.shape = (p, p)
        self.complete = complete
        self._B = None
        # P^T, C-contiguous: free when P is itself a transposed class-major array (the model's)
        self._PT = None if sp.issparse(X) else np.ascontiguousarray(P.T)

    @property
    def B(self) -> np.ndarray:
        if self._B is None:
            B = -self.P[:, :, None] * self.P[:, None, :]
            idx = np.arange(self.n)
            B[:, idx, idx] += self.P
            if self.weights is not None:
                B *= self.weights[:, None, None]
            self._B = B
        return self._B

    def matvec(self, v):
        V = np.asarray(v, dtype=np.float64).reshape(self.n, self.d)
        if sp.issparse(self.X):
            U = np.asarray(self.X @ V.T)                   # (t, n)
            PU = self.P * U
            R = PU - self.P * PU.sum(axis=1, keepdims=True)    # B_j u_j
            if self.weights is not None:
                R *= self.weights[:, None]
            out = np.asarray(self.X.T @ R).T
            return out.ravel() + self.reg * v
        # Class-major (n, t) layout: the sum over classes runs across contiguous rows
        # (35% faster than on (t, n) for the Table 3 sizes, 10% on digits).
        PT = self._PT
        UT = V @ self.X.T                                  # (n, t): v_a^T x_j
        UT *= PT
        RT = UT - PT * UT.sum(axis=0)                      # (B_j u_j)^T
        if self.weights is not None:
            RT *= self.weights
        out = (RT @ self.X).ravel()
        out += self.reg * v
        return out

    def diagonal(self):
        W = self.P - self.P * self.P                       # diagonal of each B_j
        if self.weights is not None:
            W = W * self.weights[:, None]
        if sp.issparse(self.X):
            diag = np.asarray(self.X.multiply(self.X).T @ W).T
        else:
            diag = W.T @ (self.X * self.X)
        return diag.ravel() + self.reg

    def diagonal_blocks(self) -> np.ndarray:
        """The n class blocks X^T diag(w p_a (1 - p_a)) X + reg I, shape (n, d, d), from P
        directly (no (t, n, n) array). Dense X only."""
        if sp.issparse(self.X):
            raise TypeError("diagonal_blocks needs a dense X")
        W = self.P - self.P * self.P
        if self.weights is not None:
            W = W * self.weights[:, None]
        blocks = self._grams(W)
        idx = np.arange(self.d)
        blocks[:, idx, idx] += self.reg
        return blocks

    def to_dense(self):
        """Dense matrix from P, never forming the (t, n, n) B: block (a, b) =
        -X^T diag(w p_a p_b) X for a != b and, when the rows of P sum to one (a full softmax,
        B_j 1 = 0), the diagonal blocks from those (one product per class pair, 8x fewer flops
        than the generic assembly for two classes); else X^T diag(w p_a (1 - p_a)) X each."""
        if sp.issparse(self.X):
            return super().to_dense()
        P = self.P
        Pw = P if self.weights is None else P * self.weights[:, None]
        complete = self.complete
        if complete is None:
            complete = bool(np.all(np.abs(P.sum(axis=1) - 1.0) <= 1e-12))

        def pair_weights(ia, ib):
            C = Pw[:, ia] * P[:, ib]
            C *= -1.0
            if not complete:
                on = ia == ib
                C[:, on] += Pw[:, ia[on]]                    # w p_a (1 - p_a)
            return C

        return self._assemble(pair_weights, complete)
