"""Small linear-algebra kernels shared by the solvers (lean: these run once per iteration)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

from zbound.bounds.curvature import Curvature, DenseCurvature, KroneckerCurvature

# Above this many parameters the default inner solver switches from dense Cholesky to
# matrix-free preconditioned CG (DESIGN.md 3.3: Sigma v costs O(t n d + t n^2)).
AUTO_CG_THRESHOLD = 300
# The same switch for an exact bound step (plain Alg. 2, SQUAREM). The bound's B_j are dense
# n x n (a product costs a batched (t, n, n) contraction, slower than the softmax Hessian's),
# the step is solved to 1e-8, and the pair-block assembly is GEMM-bound: on digits (p = 620)
# one bound step took 23 ms with dense Cholesky against 42 ms with block-Jacobi PCG.
AUTO_CG_THRESHOLD_BOUND = 1000

_potrf = scipy.linalg.lapack.dpotrf
_potrs = scipy.linalg.lapack.dpotrs
def dense(curvature) -> np.ndarray:
    """(p, p) ndarray of a Curvature operator or an array (Kronecker sums assemble by class
    pairs, see :meth:`KroneckerCurvature.to_dense`)."""
    if isinstance(curvature, np.ndarray):
        return curvature
    if isinstance(curvature, KroneckerCurvature):
        return curvature.to_dense()
    if isinstance(curvature, DenseCurvature):
        m = curvature.matrix
        if not curvature.reg:
            return m
        m = m.copy()
        m.flat[:: m.shape[0] + 1] += curvature.reg
        return m
    return curvature.to_dense()


def cholesky_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """Solve matrix x = rhs for symmetric positive definite ``matrix``; None if not PD.

    Raw LAPACK potrf/potrs: on the tiny systems of Table 3 the wrappers' checks cost more than
    the factorization.
    """
    c, info = _potrf(matrix, lower=1, clean=0)
    if info != 0:
        return None
    x, info = _potrs(c, rhs, lower=1)
    return x if info == 0 else None


def psd_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve for a PSD matrix; least-squares (minimum-norm) answer when it is singular.

    The bound curvature without regularization can be singular along directions the features
    never vary in; the minimum-norm step still minimizes the majorizer.
    """
    x = cholesky_solve(matrix, rhs)
    if x is None:
        x = scipy.linalg.lstsq(matrix, rhs, check_finite=False, lapack_driver="gelsy")[0]
    return x


def jacobi(diag: np.ndarray):
    """Preconditioner v -> v / diag (entries <= 0 left unscaled)."""
    inv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)
    return lambda v: inv * v


def block_jacobi(curv):
    """Class-block preconditioner for a dense-X Kronecker sum (DESIGN.md 3.3), else Jacobi.

    Inverts the n diagonal blocks X^T diag(B[:, a, a]) X + reg I (each d x d), taken from the
    operator's ``diagonal_blocks()`` where it has one; the coupling between classes is what CG
    then resolves. On weakly regularized multinomial problems this cuts CG iterations
    several-fold against the plain diagonal.
    """
    blocks_of = getattr(curv, "diagonal_blocks", None)
    try:
        blocks = blocks_of() if blocks_of is not None else None
    except TypeError:          # sparse X: no dense blocks
        blocks = None
    if blocks is None:
        return jacobi(curv.diagonal())
    n, d, _ = blocks.shape
    try:
        inv = np.linalg.inv(blocks)
    except np.linalg.LinAlgError:
        return jacobi(curv.diagonal())
    if not np.isfinite(inv).all():
        return jacobi(curv.diagonal())
    return lambda v: np.matmul(inv, v.reshape(n, d, 1)).reshape(-1)


def pcg(matvec, rhs: np.ndarray, precond, rtol: float, maxiter: int) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradient for C x = rhs from x = 0.

    ``precond`` maps a residual to M^{-1} r (None: identity). Every CG iterate from 0 decreases
    q(x) = 0.5 x^T C x - rhs^T x, so a truncated solve still decreases a quadratic majorizer
    (DESIGN.md 3.3). Stops at ||r|| <= rtol ||rhs||, after ``maxiter`` products, or on
    non-positive curvature. Returns (x, number of products).
    """
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = precond(r) if precond is not None else r
    p = z.copy()
    rz = float(r @ z)
    stop = (rtol * float(np.sqrt(rhs @ rhs))) ** 2
    k = 0
    while k < maxiter:
        Ap = matvec(p)
        k += 1
        pAp = float(p @ Ap)
        if pAp <= 0.0:
            if k == 1:
                x = z.copy()  # preconditioned steepest descent direction
            break
        a = rz / pAp
        x += a * p
        r -= a * Ap
        if float(r @ r) <= stop:
            break
        z = precond(r) if precond is not None else r
        rz_new = float(r @ z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return x, k


def curvature_solve(curv: Curvature, rhs: np.ndarray, inner: str, rtol: float = 1e-10,
                    maxiter: int | None = None) -> np.ndarray:
    """C^{-1} rhs for a PSD curvature: "cholesky" (dense, min-norm if singular) or "cg"."""
    if inner == "cholesky":
        return psd_solve(dense(curv), rhs)
    x, _ = pcg(curv.matvec, rhs, block_jacobi(curv), rtol,
               maxiter if maxiter is not None else 2 * rhs.shape[0])
    return x
