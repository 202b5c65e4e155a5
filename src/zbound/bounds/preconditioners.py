"""Preconditioners for the curvature of softmax-type models, and the policy that picks one.

The curvature operators of :mod:`zbound.bounds.curvature` hand out their class blocks in
factored form (``block_factors``: triples (X_k, C_k, intercept_k) and an extra diagonal); the
kernels here build block-Jacobi preconditioners from them without forming the whole matrix:
dense blocks in row chunks (:func:`factor_blocks`), the blocks' Woodbury form through
rows x rows systems when there are fewer rows than columns (:func:`woodbury_block_jacobi`),
the whole softmax Hessian by Woodbury (:func:`softmax_woodbury`), and two approximations that
reuse one (b, b) matrix per data set (:func:`gram_block_jacobi`,
:func:`eigen_block_preconditioner`). Every form holds at most :func:`block_budget` numbers.

The choice among them is :class:`zbound.bounds.policy.PreconditionerPolicy`'s.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

from zbound.utils.linalg import block_jacobi, mirror_lower

_potrf = scipy.linalg.lapack.dpotrf
_potrs = scipy.linalg.lapack.dpotrs


# Largest number of float64 entries a block preconditioner holds (m b^2 of dense (b, b) blocks,
# or m T^2 of the Woodbury form's (T, T) systems): 2^25 = 256 MB; beyond it, Jacobi.
MAX_BLOCK_ELEMS = 1 << 25
# Floor of a block preconditioner's budget: 2^22 float64 = 32 MB, whatever the data's size.
MIN_BLOCK_ELEMS = 1 << 22


def block_budget(factors) -> int:
    """Float64 entries a block preconditioner may hold for the curvature of ``factors`` (the
    triples (X_k, C_k, intercept_k) of ``block_factors``): as many as the data it is built
    from stores (the entries of every X_k, its stored entries when sparse, and the weights C_k),
    at least ``MIN_BLOCK_ELEMS`` and at most ``MAX_BLOCK_ELEMS``. A fit then holds at most
    about twice its data, as an L-BFGS fit does (scikit-learn's peak on sparse wide data)."""
    n = 0
    for X, C, _ in factors:
        n += X.nnz if sp.issparse(X) else X.size
        n += np.size(C)
    return int(min(MAX_BLOCK_ELEMS, max(MIN_BLOCK_ELEMS, n)))


def stored_entries(factors) -> int:
    """Entries the data of ``factors`` (the triples of ``block_factors``) store: nnz of
    sparse X_k, the size of dense ones."""
    return int(sum(X.nnz if sp.issparse(X) else X.size for X, _, _ in factors))


# Relative floor on a zero extra diagonal entry of a Woodbury block (an unpenalized intercept):
# D_i >= this times the data part's own diagonal entry.
_WOODBURY_FLOOR = 1e-4


#: The Woodbury form is built only where its setup, m rows^3 / 3 flops for the Cholesky
#: factors, costs at most this many products with the curvature (CG iterations it may save
#: over Jacobi; one product is about 4 x the data's stored entries per block).
WOODBURY_MAX_PRODUCTS = 100

#: Where the diagonal is all a preconditioner of sparse data gets (no Woodbury form, blocks
#: too large), CG is preconditioned by D^(1/2), not D: halfway between Jacobi and none.
#: Tf-idf rows over Zipf columns leave the rare columns a diagonal near the ridge 1/C, so
#: plain Jacobi stretches the first CG directions of a truncated Newton step along them; the
#: step then overshoots and backtracks. Against no preconditioner, Jacobi and the powers
#: 1/4 and 3/4, the square root took the fewest products on tf-idf shapes of 2 to 20 classes,
#: 1 000 to 100 000 rows and C = 1 / 100, in every shape but one (a close second there).
SPARSE_JACOBI_POWER = 0.5


def block_preconditioner_kind(rows: int, b: int, m: int, budget: int = MAX_BLOCK_ELEMS,
                              stored: int | None = None) -> str:
    """Which block-Jacobi form to build for m diagonal blocks of size (b, b) that are Gram
    matrices over ``rows`` rows plus a diagonal, holding at most ``budget`` float64 entries
    (:func:`block_budget`): "woodbury" when rows < b, its m (rows, rows) systems fit and
    their setup costs at most ``WOODBURY_MAX_PRODUCTS`` products (``stored``: the data's
    stored entries, rows x b when dense or not given; setup m (rows^2 b + rows^3) instead of
    m (rows b^2 + b^3), and no (b, b) array: on gene-expression shapes, 66 rows and b = 2309,
    three orders of magnitude less time and memory), "dense" when the m (b, b) blocks fit,
    else "jacobi" (b entries per block). Sparse text data, 5000 x 8000 with 10 classes: the
    Woodbury form would hold 10 systems of 5000 x 5000 (2 GB) against a budget of 32 MB.
    Sparse 1000 x 10 000 tf-idf rows with 36 000 stored entries, 2 classes: the setup
    (3.3e8 flops) would cost 4 600 products, far more than Jacobi CG's whole fit."""
    stored = rows * b if stored is None else stored
    if rows < b and m * rows * rows <= budget and \
            m * rows ** 3 / 3.0 <= WOODBURY_MAX_PRODUCTS * 4.0 * m * stored:
        return "woodbury"
    if m * b * b <= budget:
        return "dense"
    return "jacobi"


def _class_systems(X, S: np.ndarray, Dinv: np.ndarray, icpt: bool, sparse: bool):
    """The Cholesky factors (lower, in K[a].T) of K_a = I + S_a X D_a^{-1} X^T S_a,
    S_a = diag(sqrt c_a), one (T, T) system per class of :func:`woodbury_block_jacobi`; None
    if one is not finite."""
    m, bx = Dinv.shape[0], X.shape[1]
    K = np.empty((m, S.shape[0], S.shape[0]))
    for a in range(m):
        Da = Dinv[a, :bx]
        G = (X.multiply(Da) @ X.T).toarray() if sparse else (X * Da) @ X.T
        if icpt:
            G += Dinv[a, -1]                                            # the ones column
        G *= S[:, a, None]
        G *= S[:, a]
        G.flat[:: G.shape[0] + 1] += 1.0
        K[a] = G
    # Cholesky factors in place (K[a].T is Fortran-ordered: LAPACK works on K's memory), used
    # by potrs in every application: a third of the flops of an explicit inverse and no
    # second (m, T, T) array.
    if not np.isfinite(K).all():
        return None
    # K_a = I + PSD: every pivot is at least 1, so with finite entries potrf cannot meet a
    # singular matrix (info != 0 is a guard, not a rank test)
    for a in range(m):
        c, info = _potrf(K[a].T, lower=1, overwrite_a=1, clean=0)
        if info != 0:
            return None
        if c is not K[a].T and not np.shares_memory(c, K[a]):
            K[a] = c.T
    return K


def woodbury_block_jacobi(factors, extra: np.ndarray):
    """Preconditioner v -> blockdiag(A_1, ..., A_m)^{-1} v for the blocks
    A_a = sum_k Xa_k^T diag(C_k[:, a]) Xa_k + diag(extra[a]) (``factors`` the triples
    (X_k, C_k, intercept_k), X_k dense or CSR, Xa_k = [X_k, 1] (an implicit ones column) when
    intercept_k else X_k, of b columns; C_k (t_k, m) >= 0; ``extra`` (m, b) >= 0; the flags
    must agree, else None), by Woodbury through
    the (T, T) matrices I + Z_a D_a^{-1} Z_a^T, Z_a = diag(sqrt c_a) X, T = sum_k t_k: never a
    (b, b) array. A zero extra entry (an unpenalized intercept) is floored at
    ``_WOODBURY_FLOOR`` times the data part's diagonal (a preconditioner only needs an SPD
    approximation). None if a block's system is not positive definite."""
    m, b = extra.shape
    Xs = [f[0] for f in factors]
    icpt = bool(factors[0][2])
    if any(bool(f[2]) != icpt for f in factors):
        return None
    bx = b - icpt
    sparse = any(sp.issparse(X) for X in Xs)
    if sparse:
        X = sp.vstack([sp.csr_matrix(X) for X in Xs], format="csr")
        Xsq = X.multiply(X).tocsr()
    else:
        X = Xs[0] if len(Xs) == 1 else np.vstack(Xs)
        Xsq = None
    C = np.vstack([np.asarray(f[1], dtype=np.float64) for f in factors])
    C = np.maximum(C, 0.0)
    if Xsq is None:
        data_diag = C.T @ (X * X)                                       # (m, b)
    else:
        data_diag = np.asarray(Xsq.T @ C).T
    if icpt:
        data_diag = np.hstack([data_diag, C.sum(axis=0)[:, None]])
    D = np.maximum(extra, _WOODBURY_FLOOR * data_diag)
    D = np.where(D > 0, D, 1.0)
    Dinv = 1.0 / D                                                      # (m, b)
    S = np.sqrt(C)                                                      # (T, m)
    K = _class_systems(X, S, Dinv, icpt, sparse)
    if K is None:
        return None
    ST = np.ascontiguousarray(S.T)                                      # (m, T)

    def apply(v):
        # As costly as one product of the operator: one X and one X^T product for all blocks.
        out = v.reshape(m, b) * Dinv
        Ox = out[:, :bx]
        U = np.asarray((X @ Ox.T).T) if sparse else Ox @ X.T            # (m, T): X D^-1 r
        if icpt:
            U = U + out[:, -1:]
        U *= ST
        W = np.empty_like(U)
        for a in range(m):
            W[a] = _potrs(K[a].T, U[a], lower=1)[0]
        W *= ST
        R = np.asarray(X.T @ W.T).T if sparse else W @ X                # (m, bx)
        if icpt:
            R = np.hstack([R, W.sum(axis=1)[:, None]])
        R *= Dinv
        out -= R
        return out.reshape(-1)

    return apply


#: :func:`softmax_woodbury` builds its (t n, t n) system up to this size (t rows, n classes)
SOFTMAX_WOODBURY_MAX = 1500


def _row_factors(P: np.ndarray, weights) -> np.ndarray:
    """The factors F_j (t, n, n) of :func:`softmax_woodbury`: F_j F_j^T = w_j (diag p_j -
    p_j p_j^T), F_j = sqrt(w_j) (diag(sqrt p_j) - c_j p_j sqrt(p_j)^T)."""
    n = P.shape[1]
    Pc = np.clip(np.asarray(P, dtype=np.float64), 0.0, 1.0)
    s = np.minimum(Pc.sum(axis=1), 1.0)
    # q = sqrt(1 - s), the mass of a reference class; 0 where the rows sum to 1 up to their
    # rounding (a full softmax: a q of 1e-8 from a rounded sum would add 1e-16 to every
    # p_a (1 - p_a), all of the small ones)
    gap = 1.0 - s
    q = np.where(gap > 4.0 * n * np.finfo(np.float64).eps, np.sqrt(gap), 0.0)
    c = 1.0 / (1.0 + q)
    r = np.sqrt(Pc)
    F = -(c[:, None, None] * Pc[:, :, None]) * r[:, None, :]            # (t, n, n): F[j, a, c]
    # the diagonal sqrt(p_a) (1 - c p_a) = sqrt(p_a) (q + q^2 + sum_{b != a} p_b) / (1 + q),
    # the sums over the other classes by prefix and suffix sums: no cancellation where p_a
    # is near 1 (sqrt(p_a) - c p_a sqrt(p_a) would lose every digit of a small 1 - p_a)
    cs = np.cumsum(Pc, axis=1)
    rs = np.cumsum(Pc[:, ::-1], axis=1)[:, ::-1]
    others = np.zeros_like(Pc)
    others[:, 1:] += cs[:, :-1]
    others[:, :-1] += rs[:, 1:]
    idx = np.arange(n)
    F[:, idx, idx] = r * ((q + q * q)[:, None] + others) * c[:, None]
    if weights is not None:
        F *= np.sqrt(np.maximum(np.asarray(weights, dtype=np.float64), 0.0))[:, None, None]
    return F


def softmax_woodbury(X, P: np.ndarray, weights, intercept: bool, extra: np.ndarray,
                     gram: np.ndarray | None = None):
    """v -> H^{-1} v for the softmax Hessian over few rows plus a diagonal that is the same
    for every class, H = sum_j w_j (diag p_j - p_j p_j^T) (x) xa_j xa_j^T + I_n (x) diag(e),
    xa_j = [x_j, 1] with ``intercept`` (an implicit ones column) else x_j, all class blocks
    and their coupling included (the block-Jacobi forms drop the coupling).

    Each row's block factors as F_j F_j^T, F_j = sqrt(w_j) (diag(sqrt p_j) - c_j p_j
    sqrt(p_j)^T) with c_j = 1 / (1 + sqrt(1 - s_j)), s_j = sum_a p_ja (<= 1: P may hold the
    free classes of a model with a reference class), so H = diag + Z Z^T with Z of t n
    columns, and by Woodbury

        H^{-1} = E^{-1} - E^{-1} Z M^{-1} Z^T E^{-1},  M = I + Z^T E^{-1} Z,
        M[(j, c), (k, d)] = K_jk (F_j^T F_k)_cd,   K = Xa diag(1/e) Xa^T  (t, t),

    one Cholesky of a (t n, t n) matrix; an application costs one product with Xa and one
    with Xa^T, as one Hessian product does. ``X`` dense (t, d), ``P`` (t, n), ``weights``
    (t,) or None, ``extra`` (n, b) > 0 with equal rows (b = d + intercept), ``gram`` X X^T if
    known. None where that does not hold, for t n above :data:`SOFTMAX_WOODBURY_MAX`, or if M
    is not positive definite."""
    t, n = P.shape
    if sp.issparse(X) or t * n > SOFTMAX_WOODBURY_MAX or extra.shape[0] != n:
        return None
    e = np.asarray(extra[0], dtype=np.float64)
    if not (np.all(e > 0) and np.all(extra == e) and np.isfinite(e).all()):
        return None
    einv = 1.0 / e
    bx = e.size - bool(intercept)
    if gram is not None and np.all(einv[:bx] == einv[0]):
        K = gram * einv[0]                                              # X X^T / e
    else:
        K = (X * einv[:bx]) @ X.T
    if intercept:
        K = K + einv[-1]
    F = _row_factors(P, weights)                                        # (t, n, n)
    M = np.einsum("jac,kad->jckd", F, F)
    M *= K[:, None, :, None]
    M = M.reshape(t * n, t * n)
    M.flat[:: t * n + 1] += 1.0
    if not np.isfinite(M).all():
        return None
    # M = I + Z^T E^{-1} Z: pivots at least 1 (info != 0 is a guard, not a rank test)
    L, info = _potrf(M, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        return None

    def apply(v):
        U = v.reshape(n, -1) * einv                                     # E^{-1} v, (n, b)
        S = U[:, :bx] @ X.T                                             # (n, t)
        if intercept:
            S += U[:, -1:]
        Y = np.einsum("jac,aj->jc", F, S).reshape(-1)                   # Z^T E^{-1} v
        w, _ = _potrs(L, Y, lower=1)
        R = np.einsum("jac,jc->aj", F, w.reshape(t, n))                 # (n, t)
        out = U
        corr = R @ X                                                    # (n, d)
        out[:, :bx] -= corr * einv[:bx]
        if intercept:
            out[:, -1] -= R.sum(axis=1) * einv[-1]
        return out.reshape(-1)

    return apply


def factor_gram(factors) -> np.ndarray:
    """sum_k Xa_k^T Xa_k over the triples (X_k, C_k, intercept_k) of a curvature's
    ``block_factors`` (dense X_k; Xa_k = [X_k, 1] when flagged): the unweighted Gram matrix,
    (b, b). Built once per data set by callers that reuse it (one m-th of a block-Jacobi
    build). In float64: exact, it makes the first PCG solve at constant weights exact (a
    float32 Gram, ``single_gram``, cost adult at C = 100 more products than it saved)."""
    G = None
    for X, _, icpt in factors:
        dx = X.shape[1]
        Gk = np.empty((dx + 1, dx + 1)) if icpt else np.empty((dx, dx))
        Gk[:dx, :dx] = X.T @ X
        if icpt:
            s = X.sum(axis=0)
            Gk[:dx, dx] = s
            Gk[dx, :dx] = s
            Gk[dx, dx] = X.shape[0]
        G = Gk if G is None else G + Gk
    return G


# Rows per pass of :func:`factor_blocks` (a weighted chunk of about this many numbers: 256 KB,
# where a whole-X temporary is the data's size)
_BLOCK_CHUNK_ELEMS = 1 << 15


def factor_blocks(factors, extra: np.ndarray) -> np.ndarray | None:
    """The class blocks A_a = sum_k Xa_k^T diag(C_k[:, a]) Xa_k + diag(extra[a]), (m, b, b),
    of a curvature's dense ``block_factors`` (the triples (X_k, C_k, intercept_k), C_k >= 0,
    the flags equal), the ones column of Xa_k implicit; None for sparse X or mixed flags.
    One BLAS syrk per class and chunk of rows on sqrt(c)-scaled rows (half the flops of a
    general product) into one buffer reused by every class; temporaries of about
    ``_BLOCK_CHUNK_ELEMS`` numbers, never a weighted copy of X."""
    from scipy.linalg.blas import dsyrk

    if any(sp.issparse(f[0]) for f in factors):
        return None
    icpt = bool(factors[0][2])
    if any(bool(f[2]) != icpt for f in factors):
        return None
    m, b = extra.shape
    dx = b - icpt
    blocks = np.zeros((m, b, b))
    acc = np.empty((dx, dx), order="F")
    for a in range(m):
        A = blocks[a]
        acc[...] = 0.0
        for X, C, _ in factors:
            step = max(64, _BLOCK_CHUNK_ELEMS // max(dx, 1))
            for r in range(0, X.shape[0], step):
                Xc = X[r:r + step]
                c = np.maximum(np.asarray(C[r:r + step, a], dtype=np.float64), 0.0)
                Z = Xc * np.sqrt(c)[:, None]
                # Z.T is Fortran-ordered (dx, rows): syrk reads Z without a copy and adds
                # Z^T Z to acc's lower triangle in place
                acc = dsyrk(1.0, Z.T, beta=1.0, c=acc, lower=1, overwrite_c=1)
                if icpt:
                    A[:dx, dx] += c @ Xc
                    A[dx, dx] += float(c.sum())
        A[:dx, :dx] = acc
        mirror_lower(A[:dx, :dx])
        if icpt:
            A[dx, :dx] = A[:dx, dx]
        A.flat[:: b + 1] += extra[a]
    return blocks


def gram_block_jacobi(G: np.ndarray, factors, extra: np.ndarray):
    """Block-Jacobi preconditioner with the blocks A_a ~ w_a G + diag(extra[a]), w_a the mean
    over rows of the weights C[:, a] of ``factors`` (the shape of ``factor_gram``'s G): exact
    where the weights are constant over rows (a softmax Hessian at theta = 0, Boehning's bound
    (1/2) G), and a refresh costs m b^3 / 3 instead of the m T b^2 of true blocks."""
    rows = sum(f[1].shape[0] for f in factors)
    w = sum(np.asarray(f[1], dtype=np.float64).sum(axis=0) for f in factors) / max(rows, 1)
    m, b = extra.shape
    blocks = w[:, None, None] * G[None]
    idx = np.arange(b)
    blocks[:, idx, idx] += np.maximum(extra, 1e-12 * np.maximum(w[:, None] * G[idx, idx], 1e-300))
    return block_jacobi(blocks)


# Largest b of the eigenbasis preconditioner's (b, b) eigenvector matrix (2^22 float64 = 32 MB,
# b = 2048); beyond it the other block forms (Woodbury, Jacobi) take over.
EIGEN_MAX_ELEMS = 1 << 22
# Rows per pass of the eigenbasis preconditioner's data loops (temporaries of rows x b).
_EIGEN_CHUNK_ELEMS = 1 << 16


def _design_rows(factors, b: int):
    """(Xa chunk, C chunk) over the triples of ``factors`` in chunks of rows (Xa = [X, 1] made
    explicit only for a chunk, temporaries of about ``_EIGEN_CHUNK_ELEMS`` numbers)."""
    step = max(64, _EIGEN_CHUNK_ELEMS // max(b, 1))
    for X, C, icpt in factors:
        for a in range(0, X.shape[0], step):
            Xc = X[a:a + step]
            if icpt:
                Xc = np.hstack([Xc, np.ones((Xc.shape[0], 1))])
            yield Xc, np.asarray(C[a:a + step], dtype=np.float64)


def gram_eigenbasis(factors) -> np.ndarray:
    """Eigenvectors (b, b) of the unweighted Gram matrix G = sum_k Xa_k^T Xa_k of a curvature's
    dense ``block_factors`` (two (b, b) arrays at the peak, one kept)."""
    # LAPACK syevr (G is its workspace, the eigenvectors a second (b, b) array): faster
    # than syev, which would overwrite G and save that array
    _, Q = scipy.linalg.eigh(factor_gram(factors), overwrite_a=True, check_finite=False)
    return Q


def eigen_block_preconditioner(Q: np.ndarray, factors, extra: np.ndarray):
    """Preconditioner for the class blocks A_a = sum_k Xa_k^T diag(C_k[:, a]) Xa_k
    + diag(extra[a]) (the triples of ``block_factors``, dense X_k) in the eigenbasis ``Q``
    (b, b) of the unweighted Gram matrix (:func:`gram_eigenbasis`): A_a is replaced by its
    exact diagonal in that basis, d_ai = q_i^T A_a q_i, and M_a^{-1} = Q diag(1 / d_a) Q^T.

    Exact where the weights are constant over rows and extra[a] is a multiple of the identity
    (the Hessian at theta = 0), and unlike dense block inverses it keeps one (b, b) array
    shared by the m classes (KMNIST, b = 785, 10 classes: 4.9 MB against 98 MB for the blocks
    and their inverses). A refresh is one pass over the rows (X Q, ~ b / 2m Hessian
    products), the setup one Gram matrix and one ``eigh``. On KMNIST (2000 x 785) truncated
    Newton to a 1e-8 target needed 167 products with it, 176 with exact class blocks, 371
    unpreconditioned; a rank-k basis (k = 32 ... 300) with Jacobi on its complement needed
    275-459. None for sparse X."""
    m, b = extra.shape
    if any(sp.issparse(f[0]) for f in factors):
        return None
    dv = np.asarray(extra, dtype=np.float64) @ (Q * Q)     # q_i^T diag(extra_a) q_i
    for Xc, Cc in _design_rows(factors, b):
        XQ = Xc @ Q
        XQ *= XQ
        dv += Cc.T @ XQ
    scale = np.maximum(dv.max(axis=1, keepdims=True), 1e-300)
    inv = 1.0 / np.maximum(dv, 1e-12 * scale)

    def apply(v):
        Y = v.reshape(m, b) @ Q
        Y *= inv
        return (Y @ Q.T).ravel()

    return apply


class KroneckerFactored:
    """(Bbar (x) G + lam I)^{-1} by the eigendecompositions of the (n, n) label factor Bbar and
    the (d, d) Gram factor G: two products of an (n, d) matrix per solve, O(n d^2 + n^2 d).

    The Kronecker approximation of a softmax bound curvature sum_j s_j B_j (x) x_j x_j^T is
    (sum_j s_j B_j) (x) (sum_j x_j x_j^T / m) (K-FAC's independence assumption); not a bound, a
    preconditioner (and, in SPFB's averaged mode above ``dense_max``, the curvature itself).

    ``rank``: keep only the top ``rank`` eigenpairs of G and replace the rest by their mean
    sigma (G ~ U_r diag(e_r) U_r^T + sigma (I - U_r U_r^T), the same trace); a solve then costs
    O(n d rank + n^2 d) instead of O(n d^2). None: the whole spectrum. ``gram_eig`` may be
    (diagonal, None) for a diagonal Gram factor.
    """

    def __init__(self, B: np.ndarray, gram_eig, lam: float, rank: int | None = None):
        self.eb, self.Ub = np.linalg.eigh(0.5 * (B + B.T))
        eg, Ug = gram_eig
        eb = np.maximum(self.eb, 0.0)
        self.tail = None
        self.d = eg.shape[0]
        if Ug is not None and rank is not None and int(rank) < eg.shape[0]:
            r = int(rank)
            rest = np.maximum(eg[:-r], 0.0)            # eigh is ascending: the top r are last
            sigma = float(rest.mean()) if rest.size else 0.0
            eg, Ug = eg[-r:], Ug[:, -r:]
            self.tail = 1.0 / (eb * sigma + lam)
        self.eg, self.Ug = eg, Ug
        self.den = eb[:, None] * np.maximum(eg, 0.0)[None, :] + lam

    def solve(self, v: np.ndarray) -> np.ndarray:
        n = self.Ub.shape[0]
        Vm = v.reshape(n, self.d)
        if self.Ug is None:                            # a diagonal Gram factor
            return (self.Ub @ ((self.Ub.T @ Vm) / self.den)).ravel()
        A = Vm @ self.Ug
        Z = self.Ub.T @ A
        Z /= self.den
        out = (self.Ub @ Z) @ self.Ug.T
        if self.tail is not None:                      # the complement of the top r
            perp = Vm - A @ self.Ug.T
            out += self.Ub @ (self.tail[:, None] * (self.Ub.T @ perp))
        return out.ravel()


__all__ = ["MAX_BLOCK_ELEMS", "MIN_BLOCK_ELEMS", "EIGEN_MAX_ELEMS", "SOFTMAX_WOODBURY_MAX",
           "block_budget", "block_preconditioner_kind", "WOODBURY_MAX_PRODUCTS",
           "SPARSE_JACOBI_POWER",
           "stored_entries", "woodbury_block_jacobi",
           "softmax_woodbury", "factor_gram", "factor_blocks", "gram_block_jacobi",
           "gram_eigenbasis", "eigen_block_preconditioner", "KroneckerFactored"]
