"""Small linear-algebra kernels shared by the solvers (lean: these run once per iteration)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from zbound.bounds.curvature import Curvature

# Above this many parameters the default inner solver switches from dense Cholesky to
# matrix-free preconditioned CG (DESIGN.md 3.3: Sigma v costs O(t n d + t n^2)).
AUTO_CG_THRESHOLD = 300

_cho_solve = scipy.linalg.cho_solve


def dense(curvature) -> np.ndarray:
    """(p, p) ndarray of a Curvature operator or an array."""
    if isinstance(curvature, np.ndarray):
        return curvature
    return curvature.to_dense()


def cholesky_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """Solve matrix x = rhs for symmetric positive definite ``matrix``; None if not PD."""
    try:
        L = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return None
    return _cho_solve((L, True), rhs, check_finite=False)


def psd_solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve for a PSD matrix; least-squares (minimum-norm) answer when it is singular.

    The bound curvature without regularization can be singular along directions the features
    never vary in; the minimum-norm step still minimizes the majorizer.
    """
    x = cholesky_solve(matrix, rhs)
    if x is None:
        x = scipy.linalg.lstsq(matrix, rhs, check_finite=False, lapack_driver="gelsy")[0]
    return x


def pcg(matvec, rhs: np.ndarray, diag: np.ndarray | None, rtol: float,
        maxiter: int) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradient for C x = rhs from x = 0 (Jacobi preconditioner).

    Every CG iterate from 0 decreases q(x) = 0.5 x^T C x - rhs^T x, so a truncated solve still
    decreases a quadratic majorizer (DESIGN.md 3.3). Stops at ||r|| <= rtol ||rhs||, after
    ``maxiter`` products, or on non-positive curvature. Returns (x, number of products).
    """
    x = np.zeros_like(rhs)
    r = rhs.copy()
    if diag is not None:
        inv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)
    else:
        inv = None
    z = r * inv if inv is not None else r
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
        z = r * inv if inv is not None else r
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
    x, _ = pcg(curv.matvec, rhs, curv.diagonal(), rtol,
               maxiter if maxiter is not None else 2 * rhs.shape[0])
    return x
