"""Dense and iterative linear-algebra kernels behind every curvature solve.

One path: :class:`zbound.bounds.curvature.Curvature` calls these for ``solve`` and
``preconditioner``; solvers never call them on a concrete operator class, only on the dense
arrays an operator hands out (``to_dense``) or through the operator's own methods.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

_potrf = scipy.linalg.lapack.dpotrf
_potrs = scipy.linalg.lapack.dpotrs


def cholesky_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """Solve matrix x = rhs for symmetric positive definite ``matrix``; None if not PD.

    Raw LAPACK potrf/potrs: on the tiny systems of small problems (p ~ 10-70) the wrappers'
    checks cost more than the factorization.
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


def ridged_cholesky_solve(matrix: np.ndarray, rhs: np.ndarray, first: float = 1e-10,
                          factor: float = 100.0, tries: int = 4) -> np.ndarray | None:
    """Cholesky solve, adding a growing ridge ``first * max(1, max diag)`` (times ``factor``
    per retry) while the matrix is not numerically positive definite; None if it never is."""
    x = cholesky_solve(matrix, rhs)
    if x is not None:
        return x
    shift = first * max(1.0, float(np.max(np.diagonal(matrix))))
    eye = np.eye(matrix.shape[0])
    for _ in range(tries):
        x = cholesky_solve(matrix + shift * eye, rhs)
        if x is not None:
            return x
        shift *= factor
    return None


def jacobi(diag: np.ndarray):
    """Preconditioner v -> v / diag (entries <= 0 left unscaled)."""
    inv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)
    return lambda v: inv * v


def block_jacobi(blocks: np.ndarray):
    """Preconditioner from symmetric diagonal blocks (m, b, b): v -> blockdiag^{-1} v, or None
    when a block is singular."""
    m, b, _ = blocks.shape
    try:
        inv = np.linalg.inv(blocks)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(inv).all():
        return None
    return lambda v: np.matmul(inv, v.reshape(m, b, 1)).reshape(-1)


def pcg(matvec, rhs: np.ndarray, precond, rtol: float, maxiter: int) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradient for C x = rhs from x = 0.

    ``precond`` maps a residual to M^{-1} r (None: identity). Every CG iterate from 0 decreases
    q(x) = 0.5 x^T C x - rhs^T x, so a truncated solve still decreases a quadratic majorizer
    (CG's iterates decrease q monotonically). Stops at ||r|| <= rtol ||rhs||, after ``maxiter``
    products, or on non-positive curvature. Returns (x, number of products).
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
