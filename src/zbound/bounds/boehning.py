"""Boehning's fixed curvature of a softmax objective as a preconditioner (the linear algebra).

:class:`BoundPreconditioner` applies B^{-1} for B = the fixed bound curvature of a softmax
loss plus L2 and intercept-centering penalties, shrunk towards a multiple of the identity, from one
(d, d) Gram matrix: never a (p, p) array. Which objectives it applies to, what it costs and
how it is built from a model are in :mod:`zbound.models.boehning`.
"""

from __future__ import annotations

import math

import numpy as np

# BoundPreconditioner keeps explicit inverses (one GEMM per application) up to this d
_EXPLICIT_MAX_D = 256


class BoundPreconditioner:
    """v -> B^{-1} v for Boehning's fixed curvature of a softmax objective plus its penalties,
    shrunk towards a multiple of the identity:

        B = (I_k - 1 1^T / K) / 2 (x) G + I_k (x) (diag(D) + mu I) + w (1 1^T) (x) (e e^T),

    G = ``loss.bound_gram()`` (weighted Gram matrix, intercept column implicit), k the free
    classes of K, D the per-class L2 strengths (the same for every class), w e e^T the
    intercept-centering term, mu = ``shrink`` lambda median(diag G) (lambda = 1/2, or 1/4 for
    one weight vector): the median, not the mean, so that a few columns in large units do not
    set it (on standardized columns the two agree). With ``shrink = 0`` B bounds the Hessian
    everywhere. The class factor has two eigenvalues, 1/2 on vectors summing to 0 and
    (1 - k/K)/2 along 1, so
    B^{-1} = P (x) M_perp^{-1} + (1 1^T / k) (x) M_1^{-1} with P = I - 1 1^T / k,
    M_perp = G / 2 + diag(D) + mu I and M_1 = (1 - k/K)/2 G + diag(D) + mu I + w k e e^T: one
    Cholesky factor of a (d, d) matrix (M_1 is diagonal plus rank one when k = K; two factors
    with a reference class and k >= 2). Built once; never a (p, p) matrix. ``G`` is
    overwritten. The factors are in rectangular full packed storage (LAPACK trttf / pftrf /
    pftrs: half a (d, d) array, solves as fast as with the full one) and in ``G``'s precision:
    a float32 ``G`` (``bound_preconditioner(..., dtype=np.float32)``) gives float32 factors,
    half the memory again, for a shrunk B whose condition number single precision resolves.
    ``explicit`` (default: d <= 256) also keeps M_perp^{-1} and M_1^{-1} as (d, d) arrays,
    so that an application is one GEMM instead of two packed triangular solves.
    """

    def __init__(self, G: np.ndarray, k: int, n_classes: int, D: np.ndarray, w: float = 0.0,
                 e: np.ndarray | None = None, shrink: float = 1.0,
                 explicit: bool | None = None):
        """Kept as one function: the shrink, the two factorizations in packed storage and the
        explicit inverses build this object's arrays in sequence, in ``G``'s memory."""
        import scipy.linalg.lapack as lapack

        self.k, self.d = int(k), G.shape[0]
        lam1 = 0.5 * (1.0 - k / n_classes)
        lam = 0.5 if self.k >= 2 else lam1
        diagG = np.diag(G).astype(np.float64)
        # the shrink towards the median of the bound's diagonal, not its mean: a few columns
        # in large units dominate the mean (unscaled adult: one column up to 1.5e6 beside
        # 0/1 columns; a shrink at its mean drowned the 0/1 columns, and L-BFGS with 5
        # classes ran out of its 1000 iterations far above the optimum; with the median it
        # takes 152). Shrinking each column by its own diagonal fixed adult too (601
        # iterations) but took KMNIST's raw pixels from 46 to 117 iterations: the rare
        # border pixels need the shared shrink. On standardized columns median = mean.
        mu = shrink * lam * float(np.median(np.maximum(diagG, 0.0)))
        D = np.asarray(D, dtype=np.float64) + mu
        diagB = lam * np.maximum(diagG, 0.0) + D
        # the factors' floor, column by column (Cholesky does not mind the units); the
        # Sherman-Morrison branch below keeps the largest entry's floor for an unpenalized
        # column (a smaller one only adds cancellation)
        top = max(float(np.max(diagB)), 1e-300)
        floor = 1e-10 * np.where(diagB > 0.0, diagB, top)
        self.shrink = shrink
        self.n_classes, self.mu = int(n_classes), mu
        self.D0, self.w, self.e = D - mu, float(w), e   # the penalties alone
        self.dtype = G.dtype
        pre = "s" if G.dtype == np.float32 else "d"
        trttf, pftrf = getattr(lapack, pre + "trttf"), getattr(lapack, pre + "pftrf")
        self._pftrs = getattr(lapack, pre + "pftrs")

        def factor(M):
            # The factor in rectangular full packed storage (LAPACK trttf / pftrf / pftrs):
            # d (d + 1) / 2 numbers instead of d^2, solves as fast as potrs (level-3 BLAS).
            # M.T is Fortran-ordered (M symmetric): trttf reads M without a copy.
            M.flat[:: self.d + 1] += floor
            arf, info = trttf(M.T, transr="N", uplo="L")
            if info == 0:
                arf, info = pftrf(self.d, arf, transr="N", uplo="L", overwrite_a=1)
            if info != 0:
                raise np.linalg.LinAlgError(
                    f"the bound preconditioner's matrix is not positive definite (pftrf info "
                    f"{info})")
            return arf

        self.perp = self.one = self.sm = self.one_diag = None
        if self.k >= 2:                 # G itself is overwritten unless M_1 needs it too
            M = G.copy() if lam1 > 0.0 else G
            M *= 0.5
            M.flat[:: self.d + 1] += D
            self.perp = factor(M)
        if lam1 > 0.0:
            G *= lam1
            G.flat[:: self.d + 1] += D
            if e is not None and w > 0.0:
                G += (w * self.k) * np.outer(e, e)
            self.one = factor(G)
        else:                           # diag(D) + w k e e^T: Sherman-Morrison
            self.one_diag = 1.0 / np.maximum(D, 1e-10 * top)
            if e is not None and w > 0.0:
                ed = e * self.one_diag
                self.sm = (ed, (w * self.k) / (1.0 + w * self.k * float(e @ ed)))
        # Small d: the inverses explicitly, so that an application is one GEMM (the packed
        # solve's transposes and calls cost several times its flops there, once per
        # iteration)
        # B^{-1} v = V M_perp^{-1} + 1 (m Q), m the class mean of V, Q = M_1^{-1} - M_perp^{-1}
        # (one weight vector: v M_1^{-1})
        self.explicit = self.d <= _EXPLICIT_MAX_D if explicit is None else bool(explicit)
        self.perp_inv = self.Q = None
        if self.explicit:
            eye = np.eye(self.d)
            if self.one is not None:
                Q = self._solve(self.one, eye.astype(self.dtype)).astype(np.float64)
            else:
                Q = np.diag(self.one_diag)
                if self.sm is not None:
                    ed, c = self.sm
                    Q -= c * np.outer(ed, ed)
            if self.perp is not None:
                P = self._solve(self.perp, eye.astype(self.dtype)).astype(np.float64)
                Q -= P
                self.perp_inv = np.ascontiguousarray(P, dtype=self.dtype)
            self.Q = np.ascontiguousarray(Q, dtype=self.dtype)

    def first_length(self, x: np.ndarray, d: np.ndarray, gd: float) -> float:
        """Step length along d = -B^{-1} g that minimizes the objective's second-order model
        at x when every class has the same score at x (x = 0, the usual start: uniform
        class probabilities); 1 anywhere else.

        There the softmax Hessian is exactly (I - 1 1^T / K) / K (x) G plus the penalties:
        2 / K times Boehning's data curvature (I - 1 1^T / K) / 2 (x) G. Since B d = -g,
        d^T B d = -g^T d, and the data part of d^T B d is that minus the penalties' and
        the shrink's, so the model's curvature along d costs O(p) and no product with X
        (with the sampled Gram matrix of a large t it is an estimate). The length is
        Armijo-tested like any other trial."""
        W = x.reshape(self.k, self.d)
        uniform = not W.any() if self.k < self.n_classes else bool((W == W[0]).all())
        if not uniform or not gd < 0.0:
            return 1.0
        D = d.reshape(self.k, self.d)
        pen = float(np.einsum("kd,kd,d->", D, D, self.D0))
        if self.e is not None and self.w > 0.0:
            pen += self.w * float(self.e @ D.sum(axis=0)) ** 2
        data = -gd - pen - self.mu * float(d @ d)
        curv = (2.0 / self.n_classes) * max(data, 0.0) + pen
        if not (curv > 0.0 and math.isfinite(curv)):
            return 1.0
        return max(1.0, -gd / curv)

    def _solve(self, c, B):
        """c c^T X = B for the lower Cholesky factor c (in the factor's precision)."""
        B = np.asarray(B, dtype=self.dtype)
        x, _ = self._pftrs(self.d, c, B if B.ndim == 2 else B[:, None], transr="N", uplo="L")
        return x if B.ndim == 2 else x[:, 0]

    def __call__(self, v: np.ndarray) -> np.ndarray:
        """B^{-1} v, in the precision of v (float32 in, float32 out; else float64)."""
        out_dtype = np.float32 if v.dtype == np.float32 else np.float64
        V = v.reshape(self.k, self.d)
        if self.explicit:
            V = np.asarray(V, dtype=self.dtype)
            if self.perp_inv is None:                   # k = 1
                return np.asarray(V[0] @ self.Q, dtype=out_dtype)
            R = V @ self.perp_inv
            m = V.sum(axis=0)
            m *= 1.0 / self.k
            R += m @ self.Q
            return np.asarray(R, dtype=out_dtype).ravel()
        m = V.mean(axis=0)
        if self.one is not None:
            mo = self._solve(self.one, m)
        else:
            mo = m * self.one_diag
            if self.sm is not None:
                ed, c = self.sm
                mo -= (c * float(ed @ m)) * ed
        if self.perp is None:                   # k = 1: the class mean is v itself
            return np.asarray(mo, dtype=out_dtype)
        R = self._solve(self.perp, (V - m).T).T
        R = np.asarray(R, dtype=out_dtype)
        R += mo
        return R.ravel()


__all__ = ["BoundPreconditioner"]
