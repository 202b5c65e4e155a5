"""Dense and iterative linear-algebra kernels shared by the bounds, models and solvers.

Positive-definite factorizations that decide rank by a stated condition threshold
(:func:`pd_cholesky`, :func:`singular_rtol`), solves with a minimum-norm or ridged fallback,
Jacobi and block-Jacobi preconditioners, preconditioned conjugate gradient (:func:`pcg`), and
cache-blocked Gram products. Every function takes and returns plain NumPy arrays: the
structure-aware operators (:mod:`zbound.bounds.curvature`) and their preconditioners
(:mod:`zbound.bounds.preconditioners`) are built on them.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

_potrf = scipy.linalg.lapack.dpotrf
_potrs = scipy.linalg.lapack.dpotrs
_potri = scipy.linalg.lapack.dpotri


_EPS = float(np.finfo(np.float64).eps)


def singular_rtol(p: int) -> float:
    """The one threshold that decides rank deficiency, ``10 p eps`` for a matrix of order
    ``p``: a symmetric PSD matrix is numerically singular when LAPACK's estimate of its
    reciprocal condition number in the 1-norm (``pocon`` on the Cholesky factor: the smallest
    eigenvalue relative to the largest, within a factor p) is at most this, and in the
    minimum-norm solve a singular value at most this times the largest counts as zero.

    An exactly singular matrix comes out of floating point with eigenvalues of about
    ``p eps`` times its scale as rounding noise, of either sign depending on the BLAS kernels
    (OpenBLAS's AVX-512 and AVX2 builds round differently), so whether ``potrf`` raises on it
    is luck; this test is not. (The pivots of an unpivoted Cholesky factorization do not
    reveal rank: the last one overestimates the smallest eigenvalue by 1 / v_p^2, v the null
    vector.)"""
    return 10.0 * max(int(p), 1) * _EPS


_pocon = scipy.linalg.lapack.dpocon


def pd_cholesky(matrix: np.ndarray, overwrite: bool = False):
    """Lower Cholesky factor of the symmetric ``matrix`` (LAPACK potrf; ``overwrite`` factors
    in place where the layout allows; the strict upper triangle is not cleared), or None when
    it is not numerically positive definite: potrf fails, or the reciprocal condition
    estimate is at or below :func:`singular_rtol`."""
    p = matrix.shape[0]
    if p == 0:
        return matrix
    anorm = float(np.abs(matrix).sum(axis=0).max())
    if not (anorm > 0.0 and math.isfinite(anorm)):
        return None
    c, info = _potrf(matrix, lower=1, overwrite_a=int(overwrite), clean=0)
    if info != 0:
        return None
    rcond, info = _pocon(c, anorm, "L")
    if info != 0 or not rcond > singular_rtol(p):
        return None
    return c


def unit_diagonal_scale(matrix: np.ndarray) -> np.ndarray | None:
    """S = diag(A)^{-1/2} (S A S has a unit diagonal), or None where a diagonal entry is not
    positive and finite: the scaling under which the rank tests judge a matrix, not the
    units of its columns."""
    diag = np.diagonal(matrix)
    # every entry positive and finite (NaN fails both comparisons); min and max are
    # cheaper than the elementwise tests on the small matrices of small problems
    if not diag.size or (diag.min() > 0.0 and diag.max() < np.inf):
        return 1.0 / np.sqrt(diag)
    return None


def unit_diagonal_form(matrix: np.ndarray):
    """(S A S, S): a symmetric matrix scaled to a unit diagonal (a new array) and the scale
    S = diag(A)^{-1/2}; (A, None), the matrix itself, where a diagonal entry is not positive
    and finite. A factor of S A S solves A x = b as x = S (S A S)^{-1} S b."""
    scale = unit_diagonal_scale(matrix)
    if scale is None:
        return matrix, None
    # a_ij s_i, then times s_j: for a PSD matrix no intermediate exceeds sqrt(a_jj) s_j (a
    # diagonal of 1e-320 makes s_i s_j alone overflow); a matrix far from PSD stays unscaled
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = matrix * scale[:, None]
        scaled *= scale[None, :]
    if not np.isfinite(scaled).all():
        return matrix, None
    return scaled, scale


def column_mean_squares(X, sample_weight=None) -> np.ndarray:
    """The mean square of each column of a dense or sparse X, rows weighted by
    ``sample_weight`` (a row of weight 2 counts as the row twice); 0 for an all-zero column
    and for all-zero weights. No temporary the size of a dense X."""
    if sample_weight is None:
        w, total = None, X.shape[0]
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        top = float(w.max()) if w.size else 0.0
        if top > 0.0:
            w = w / top          # the same mean squares; no weight of 1e-310 squared to 0
        total = float(w.sum())
    if sp.issparse(X):
        sq = X.multiply(X)
        sq = np.asarray(sq.sum(axis=0) if w is None else sq.T @ w).ravel()
    else:
        sq = np.einsum("ij,ij->j", X, X) if w is None else np.einsum("ij,ij,i->j", X, X, w)
    return sq / total if total > 0 else np.zeros(X.shape[1])


def column_scale(X, sample_weight=None) -> np.ndarray:
    """The root mean square of each column of a dense or sparse X, rows weighted by
    ``sample_weight`` (:func:`column_mean_squares`); 1 for an all-zero column: the units a
    solver that is not scale-invariant divides out. A fit on X / s with the penalty's
    strengths times 1 / s^2 is the same problem as on X in other coordinates."""
    s = np.sqrt(column_mean_squares(X, sample_weight))
    return np.where((s > 0.0) & np.isfinite(s), s, 1.0)


def column_units(X, sample_weight=None, a: float = 0.0) -> np.ndarray:
    """Units u of the columns of X for a fit on X / u with a ridge: u^2 = (s^2 + a) / (1 + a),
    s = :func:`column_scale`, ``a`` the ridge relative to a standardized column's curvature.
    A column's curvature s^2 plus the ridge then comes out about even across columns, a
    standardized column (s = 1) keeps u = 1, and a column in tiny units is not blown up
    against its ridge (u -> sqrt(a / (1 + a)), not s)."""
    s = column_scale(X, sample_weight)
    return np.sqrt((s * s + a) / (1.0 + a))


def cholesky_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """Solve matrix x = rhs for symmetric positive definite ``matrix``; None where it is not
    numerically positive definite (the condition test of :func:`singular_rtol`).

    Raw LAPACK potrf/potrs: on the tiny systems of small problems (p ~ 10-70) the wrappers'
    checks cost more than the factorization. With a positive diagonal the system is solved
    with a unit diagonal, (S A S)(S^{-1} x) = S rhs for S = diag(A)^{-1/2}: the rank test then
    judges the matrix, not the units of its columns. (Unscaled adult, a column up to 1.5e6
    beside 0/1 columns: the Newton Hessian passed for singular, the ridge that made it
    definite was 1e-10 of its largest diagonal entry, 100 in the units of the 0/1 columns,
    and Newton crawled: 1000 steps short of the optimum, where 9 reach it now.)
    """
    if matrix.shape[0] == 0:
        return np.zeros_like(rhs)
    scaled, scale = unit_diagonal_form(matrix)
    c = pd_cholesky(scaled, overwrite=scale is not None)     # a copy when scaled
    if c is None:
        return None
    return factor_solve(c, rhs, scale)


def factor_solve(factor: np.ndarray, rhs: np.ndarray, scale: np.ndarray | None = None):
    """x with A x = rhs from the lower Cholesky factor of S A S (``scale`` S, a unit-diagonal
    form: :func:`unit_diagonal_form`; None: of A itself), by raw LAPACK potrs (at p ~ 50 the
    wrapper's checks of ``scipy.linalg.cho_solve`` cost as much as the solve)."""
    if scale is None:
        x, info = _potrs(factor, rhs, lower=1)
    else:
        s = scale if rhs.ndim == 1 else scale[:, None]
        x, info = _potrs(factor, rhs * s, lower=1)
        x *= s
    if info != 0:
        raise ValueError(f"potrs: argument {-info} is invalid")
    return x


def min_norm_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares solution of matrix x = rhs (LAPACK gelsd, an SVD),
    singular values at or below :func:`singular_rtol` times the largest taken as zero."""
    p = matrix.shape[0]
    return scipy.linalg.lstsq(matrix, rhs, cond=singular_rtol(p), check_finite=False,
                              lapack_driver="gelsd")[0]


def psd_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve for a symmetric PSD matrix: Cholesky where it is numerically positive definite
    (:func:`singular_rtol`), else the minimum-norm least-squares solution
    (:func:`min_norm_solve`).

    The bound curvature without regularization can be singular along directions the features
    never vary in; the minimum-norm step still minimizes the majorizer (over the span of the
    kept eigenvectors, which holds 0: the majorizer still decreases).
    """
    x = cholesky_solve(matrix, rhs)
    if x is None:
        x = min_norm_solve(matrix, rhs)
    return x


def weighted_ridge_solve(X: np.ndarray, w: np.ndarray, y: np.ndarray,
                         ridge: np.ndarray) -> np.ndarray:
    """argmin_c sum_i w_i (y_i - x_i^T c)^2 + sum_j ridge_j c_j^2 for dense X (t, p), weights
    w >= 0 and ridge >= 0 (0: an unpenalized column, e.g. the intercept's).

    Up to as many columns as rows: the (p, p) normal equations (:func:`psd_solve`: the
    minimum-norm solution where they are singular). Wider: the same minimizer through (t, t)
    systems, never a (p, p) array (300 rows x 20 000 columns asked for 3 GB): with Z the
    penalized columns of W^(1/2) X, D their ridge and M = (I + Z D^-1 Z^T)^-1, the unpenalized
    coefficients c_U = (A^T M A)^+ A^T M r (A = W^(1/2) X_U, r = W^(1/2) y) and the penalized
    ones c_P = D^-1 Z^T M (r - A c_U); with no penalized column, the minimum-norm least squares
    solution."""
    X = np.asarray(X, dtype=np.float64)
    t, p = X.shape
    ridge = np.broadcast_to(np.asarray(ridge, dtype=np.float64), (p,))
    if p <= t:
        A = (X * w[:, None]).T @ X
        A[np.diag_indices_from(A)] += ridge
        return psd_solve(A, X.T @ (w * y))
    sw = np.sqrt(w)
    r = sw * y
    pen = ridge > 0.0
    if not pen.any():
        return np.linalg.lstsq(X * sw[:, None], r, rcond=None)[0]
    c = np.zeros(p)
    Z = X[:, pen] * sw[:, None]
    Dinv = 1.0 / ridge[pen]
    K = (Z * Dinv) @ Z.T
    K[np.diag_indices_from(K)] += 1.0                       # I + Z D^-1 Z^T: SPD
    free = ~pen
    if free.any():
        A = X[:, free] * sw[:, None]
        MA = psd_solve(K, np.column_stack([A, r]))
        MA, Mr = MA[:, :-1], MA[:, -1]
        cu = min_norm_solve(A.T @ MA, A.T @ Mr)
        c[free] = cu
        Me = Mr - MA @ cu                                   # M (r - A c_U), no second solve
    else:
        Me = psd_solve(K, r)
    c[pen] = Dinv * (Z.T @ Me)
    return c


def ridged_cholesky_solve(matrix: np.ndarray, rhs: np.ndarray, first: float = 1e-10,
                          factor: float = 100.0, tries: int = 4) -> np.ndarray | None:
    """Cholesky solve, adding a growing ridge while the matrix is not numerically positive
    definite (the condition test of :func:`singular_rtol`): ``first`` times each diagonal
    entry (``first * max(1, max diag)`` where an entry is not positive), times ``factor``
    per retry; None if it never is."""
    x = cholesky_solve(matrix, rhs)
    if x is not None:
        return x
    # the ridge in each column's own units (cholesky_solve then sees the unit-diagonal form
    # plus ``shift`` I): a ridge in the units of the largest column swamps the small ones (a
    # multinomial Hessian over columns of 1e6 and 1e-3 is singular along the class sums, and
    # a ridge of 1e-10 x 1e14 left Newton 1000 steps short of the optimum)
    diag = np.diagonal(matrix)
    ridge = diag.copy() if unit_diagonal_scale(matrix) is not None else \
        np.full(diag.shape, max(1.0, float(np.max(diag))))
    shift = first
    for _ in range(tries):
        shifted = matrix.copy()
        shifted.flat[:: matrix.shape[0] + 1] += shift * ridge
        x = cholesky_solve(shifted, rhs)
        if x is not None:
            return x
        shift *= factor
    return None


def jacobi(diag: np.ndarray, power: float = 1.0):
    """Preconditioner v -> v / diag**power (entries <= 0 left unscaled): Jacobi at
    ``power=1``; ``power=0.5`` scales halfway between it and no preconditioner."""
    pos = diag > 0
    safe = np.where(pos, diag, 1.0)
    inv = np.where(pos, 1.0 / safe ** power, 1.0)
    return lambda v: inv * v


def block_jacobi(blocks: np.ndarray):
    """Preconditioner from symmetric diagonal blocks (m, b, b): v -> blockdiag^{-1} v, or None
    when a block is not numerically positive definite (the condition test
    of :func:`singular_rtol`). ``blocks`` is overwritten by the inverses, one block at a time
    (LAPACK potrf + potri in place: no second (m, b, b) array).

    Each block is factored with a unit diagonal, D^{-1/2} A D^{-1/2} (D = diag A), and the
    scaling undone on the inverse: the rank test then sees the block's conditioning, not its
    columns' units. Unscaled adult (a column up to 1.5e6 next to 0/1 columns) made every
    Hessian block "singular" as it stood, and PCG fell back to Jacobi: 280 products where
    the exact blocks need a few per Newton step."""
    m, b, _ = blocks.shape
    blocks = np.ascontiguousarray(blocks, dtype=np.float64)
    for a in range(m):
        # blocks[a].T is Fortran-ordered: LAPACK works on the very memory of the block
        A = blocks[a].T
        scale = unit_diagonal_scale(A)
        if scale is None:
            return None
        A *= scale[:, None]
        A *= scale[None, :]
        c = pd_cholesky(A, overwrite=True)
        if c is None:
            return None
        c, info = _potri(c, lower=1, overwrite_c=1)
        if info != 0:
            return None
        if c is not A:
            A[...] = c
        low = np.tril(A)
        A[...] = low
        A += low.T
        A.flat[:: b + 1] -= np.diagonal(low)
        A *= scale[:, None]
        A *= scale[None, :]
    if not np.isfinite(blocks).all():
        return None
    return lambda v: np.matmul(blocks, v.reshape(m, b, 1)).reshape(-1)


def row_block(X, a: int, b: int):
    """Rows a:b of a dense or CSR X without copying X's entries: a view of a dense X; for CSR,
    a matrix on slices of X's data and index arrays (scipy's own row slice copies them, so a
    loss cut into row blocks would hold a second X)."""
    if not sp.issparse(X):
        return X[a:b]
    if a == 0 and b == X.shape[0]:
        return X
    lo, hi = int(X.indptr[a]), int(X.indptr[b])
    return csr_on(X.data[lo:hi], X.indices[lo:hi], X.indptr[a:b + 1] - lo, (b - a, X.shape[1]))


def csr_on(data, indices, indptr, shape):
    """A CSR matrix on exactly these arrays. scipy's constructor copies an array that is a
    view of less than half of its base (``prune``, to free the base), which is what a row block
    of a larger matrix is; the attributes set on an empty matrix of the shape are kept."""
    out = sp.csr_matrix(shape, dtype=data.dtype)
    out.data, out.indices, out.indptr = data, indices, indptr
    return out


def cache_block_rows(d: int) -> int:
    """Rows of a dense (rows, d) float64 block of about 1 MB (a typical L2 cache), at least 256:
    two matrix-vector products over the same rows (X v, then X^T r) run block by block, so
    that the second finds the block still in cache (memory-bound products read X once instead
    of twice; 1 MB blocks were the fastest of 512 KB to 4 MB and unblocked)."""
    return max(256, (1 << 20) // (8 * max(int(d), 1)))


def mirror_lower(A: np.ndarray, block: int = 64) -> np.ndarray:
    """Make the square ``A`` symmetric in place from its lower triangle (what a syrk with
    ``lower=1`` fills), ``block`` rows at a time: no (n, n) temporary. Returns A."""
    n = A.shape[0]
    for a in range(0, n, block):
        b = min(n, a + block)
        diag = A[a:b, a:b]
        diag[...] = np.tril(diag) + np.tril(diag, -1).T
        A[:a, a:b] = A[a:b, :a].T
    return A


def pcg(matvec, rhs: np.ndarray, precond, rtol: float, maxiter: int, *,
        companion: bool = False):
    """Preconditioned conjugate gradient for C x = rhs from x = 0: the library's one CG.

    ``precond`` maps a residual to M^{-1} r (None: identity). Every CG iterate from 0 decreases
    q(x) = 0.5 x^T C x - rhs^T x, so a truncated solve still decreases a quadratic majorizer
    (CG's iterates decrease q monotonically). Stops at ||r|| <= rtol ||rhs||, after ``maxiter``
    products, or on non-positive curvature. ``rhs`` may have any shape (inner products are
    taken over all its entries). Returns (x, number of products).

    With ``companion``, ``matvec(p)`` returns ``(C p, B p)`` for a linear map B whose value at
    the solution the caller needs, and the result is (x, B x, number of products): B x is
    accumulated from the products CG makes anyway, with no product of its own.
    """
    x = np.zeros_like(rhs)
    bx = None
    r = rhs.copy()
    stop = rtol * rtol * float(np.vdot(rhs, rhs))
    k = 0
    if not np.any(rhs):
        return (x, bx, k) if companion else (x, k)
    z = precond(r) if precond is not None else r
    p = z.copy()
    rz = float(np.vdot(r, z))
    while k < maxiter:
        Ap = matvec(p)
        if companion:
            Ap, Bp = Ap
        k += 1
        pAp = float(np.vdot(p, Ap))
        if pAp <= 0.0:
            if k == 1:
                x = z.copy()  # preconditioned steepest descent direction (p = z)
                bx = Bp.copy() if companion else None
            break
        a = rz / pAp
        x += a * p
        if companion:
            bx = a * Bp if bx is None else bx + a * Bp
        r -= a * Ap
        if float(np.vdot(r, r)) <= stop:
            break
        z = precond(r) if precond is not None else r
        rz_new = float(np.vdot(r, z))
        p *= rz_new / rz
        p += z
        rz = rz_new
    return (x, bx, k) if companion else (x, k)


def single_gram(X: np.ndarray, intercept: bool = False, weights=None,
                acc: np.ndarray | None = None) -> np.ndarray:
    """sum_j w_j xa_j xa_j^T for dense X (xa_j = [x_j, 1] with ``intercept``, the column of
    ones implicit; w = 1 without ``weights``), accumulated in float32 by ssyrk on float32
    copies of row blocks of about 512 KB into ``acc`` (a Fortran-ordered float32 (b, b)
    array, its lower triangle; new when None), which is returned. For preconditioners'
    metrics: cheaper than float64 products where d is large, and no copy of X;
    :func:`mirror_lower` completes the result."""
    from scipy.linalg.blas import ssyrk

    dx = X.shape[1]
    b = dx + bool(intercept)
    if acc is None:
        acc = np.zeros((b, b), dtype=np.float32, order="F")
    rows = cache_block_rows(b) // 2
    for r in range(0, X.shape[0], rows):
        Xb = X[r:r + rows]
        Z = np.empty((Xb.shape[0], b), dtype=np.float32)
        Z[:, :dx] = Xb
        if intercept:
            Z[:, dx] = 1.0
        if weights is not None:
            Z *= np.sqrt(weights[r:r + rows]).astype(np.float32)[:, None]
        acc = ssyrk(1.0, Z.T, beta=1.0, c=acc, lower=1, overwrite_c=1)
    return acc


__all__ = ["singular_rtol", "unit_diagonal_scale", "unit_diagonal_form", "factor_solve",
           "weighted_ridge_solve",
           "column_mean_squares", "column_scale", "column_units", "pd_cholesky", "cholesky_solve",
           "min_norm_solve", "psd_solve", "ridged_cholesky_solve", "jacobi", "block_jacobi",
           "cache_block_rows", "mirror_lower", "pcg", "single_gram"]
