"""Convex (linear) constraints for the majorization solvers: lb <= theta <= ub, A theta <= b.

Alg. 2 of Jebara & Choromanska (2012) takes a convex hull Lambda of admissible parameters; step 3
minimizes the quadratic majorizer over Lambda, a quadratic program. This module holds the
constraint set (validated once), feasibility checks, the projection of a start point, and the
step QP  min_d  0.5 d^T P d + g^T d  s.t.  theta + d in Lambda  (solved with Clarabel through
qpsolvers).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from zbound.utils.linalg import min_norm_solve, ridged_cholesky_solve

_FEAS_TOL = 1e-9


def _vector(name: str, value, p: int | None, fill: float) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        if p is None:
            raise ValueError(f"scalar {name} needs n_params to know the dimension")
        arr = np.full(p, float(arr))
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    return arr


class LinearConstraints:
    """The convex set {theta : lb <= theta <= ub, A theta <= b}.

    Parameters
    ----------
    lb, ub : (p,) arrays or scalars, optional; -inf / +inf entries mean "unbounded".
    A : (k, p) array, optional
    b : (k,) array, required with ``A``
    n_params : int, optional; needed only for scalar ``lb`` / ``ub`` without ``A``.

    Raises ValueError for inconsistent shapes, NaN, lb > ub, or non-finite A / b.
    """

    def __init__(self, lb=None, ub=None, A=None, b=None, n_params: int | None = None):
        p = n_params
        if A is not None:
            A = np.asarray(A.toarray() if sp.issparse(A) else A, dtype=np.float64)
            if A.ndim == 1:
                A = A[None, :]
            if A.ndim != 2:
                raise ValueError(f"A must be a 2-D array (k, p), got shape {A.shape}")
            if not np.isfinite(A).all():
                raise ValueError("A contains non-finite entries")
            if b is None:
                raise ValueError("A given without b: linear constraints are A theta <= b")
            if p is not None and A.shape[1] != p:
                raise ValueError(f"A has {A.shape[1]} columns but n_params = {p}")
            p = A.shape[1]
        elif b is not None:
            raise ValueError("b given without A: linear constraints are A theta <= b")
        lb = _vector("lb", lb, p, -np.inf)
        ub = _vector("ub", ub, p, np.inf)
        for name, arr in (("lb", lb), ("ub", ub)):
            if arr is not None:
                if p is not None and arr.shape[0] != p:
                    raise ValueError(f"{name} has length {arr.shape[0]}, expected {p}")
                p = arr.shape[0]
        if lb is not None and np.isposinf(lb).any():
            raise ValueError("lb contains +inf: the feasible set is empty")
        if ub is not None and np.isneginf(ub).any():
            raise ValueError("ub contains -inf: the feasible set is empty")
        if lb is not None and ub is not None and (lb > ub).any():
            i = int(np.flatnonzero(lb > ub)[0])
            raise ValueError(f"lb > ub at index {i} ({lb[i]} > {ub[i]}): the box is empty")
        if A is not None:
            b = np.asarray(b, dtype=np.float64).reshape(-1)
            if b.shape[0] != A.shape[0]:
                raise ValueError(f"b has length {b.shape[0]} but A has {A.shape[0]} rows")
            if not np.isfinite(b).all():
                raise ValueError("b contains non-finite entries")
        if p is None:
            raise ValueError("LinearConstraints needs at least one of lb, ub, (A, b)")
        self.n_params = int(p)
        self.lb = lb if lb is not None else np.full(p, -np.inf)
        self.ub = ub if ub is not None else np.full(p, np.inf)
        self.A = A
        self.b = b

    # -- queries -----------------------------------------------------------------------------
    @property
    def has_box(self) -> bool:
        return bool(np.isfinite(self.lb).any() or np.isfinite(self.ub).any())

    @property
    def has_general(self) -> bool:
        return self.A is not None and self.A.shape[0] > 0

    def check_dimension(self, p: int) -> None:
        if self.n_params != p:
            raise ValueError(f"constraints are for {self.n_params} parameters, model has {p}")

    def violation(self, x: np.ndarray) -> float:
        """Largest constraint violation at x (0 when feasible)."""
        x = np.asarray(x, dtype=np.float64)
        v = max(0.0, float(np.max(self.lb - x, initial=0.0)), float(np.max(x - self.ub,
                                                                           initial=0.0)))
        if self.has_general:
            v = max(v, float(np.max(self.A @ x - self.b, initial=0.0)))
        return v

    def is_feasible(self, x: np.ndarray, tol: float = _FEAS_TOL) -> bool:
        x = np.asarray(x, dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(x), initial=0.0)))
        return self.violation(x) <= tol * scale

    def project(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection of x onto the set (clip for a box; a QP otherwise)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n_params,):
            raise ValueError(f"x must have shape ({self.n_params},), got {x.shape}")
        if not self.has_general:
            return np.clip(x, self.lb, self.ub)
        d = self.solve_qp(np.eye(self.n_params), np.zeros(self.n_params), x)
        return x + d

    def projected_gradient(self, x: np.ndarray, g: np.ndarray) -> float:
        """inf-norm of the projected gradient for box constraints (0 exactly at a KKT point).

        Components at a bound that push outwards are dropped (the bound holds them); only for
        sets without general inequalities (else a QP step measures stationarity).
        """
        scale = 1e-12 * np.maximum(1.0, np.abs(x))
        at_lb = x <= self.lb + scale
        at_ub = x >= self.ub - scale
        pg = np.where(at_lb, np.minimum(g, 0.0), g)
        pg = np.where(at_ub, np.maximum(pg, 0.0), pg)
        return float(np.max(np.abs(pg), initial=0.0))

    # -- the step QP -------------------------------------------------------------------------
    def solve_qp(self, P: np.ndarray, g: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """argmin_d 0.5 d^T P d + g^T d  s.t.  theta + d in the set (step 3 of Alg. 2).

        P : (p, p) symmetric PSD, g : (p,), theta : (p,) (need not be feasible). Returns the step
        d : (p,); box constraints are enforced exactly by clipping the solver's answer.
        """
        if not self.has_general:
            return box_qp(P, g, self.lb - theta, self.ub - theta)
        from qpsolvers import solve_qp

        p = self.n_params
        rows, rhs = [], []
        lo = np.isfinite(self.lb)
        hi = np.isfinite(self.ub)
        eye = sp.identity(p, format="csr")
        if hi.any():
            rows.append(eye[hi])
            rhs.append(self.ub[hi] - theta[hi])
        if lo.any():
            rows.append(-eye[lo])
            rhs.append(theta[lo] - self.lb[lo])
        if self.has_general:
            rows.append(sp.csr_matrix(self.A))
            rhs.append(self.b - self.A @ theta)
        G = sp.vstack(rows, format="csc") if rows else None
        h = np.concatenate(rhs) if rhs else None
        Pc = sp.csc_matrix(0.5 * (P + P.T))
        g = np.asarray(g, dtype=np.float64)
        d = solve_qp(Pc, g, G=G, h=h, solver="clarabel", tol_gap_abs=1e-12, tol_gap_rel=1e-12,
                     tol_feas=1e-12)
        if d is None:  # the tight tolerances were not reached: Clarabel's defaults
            d = solve_qp(Pc, g, G=G, h=h, solver="clarabel")
        if d is None:
            raise RuntimeError("the QP solver (clarabel) found no solution for the step QP; "
                               "is the feasible set empty?")
        d = np.asarray(d, dtype=np.float64)
        if self.has_box:
            d = np.clip(theta + d, self.lb, self.ub) - theta
        return d

    def max_feasible_fraction(self, theta: np.ndarray, d: np.ndarray) -> float:
        """Largest s in [0, 1] with theta + s d inside the general constraints (theta feasible).

        Clarabel answers to ~1e-9; this pulls a step back onto the feasible set exactly.
        """
        if not self.has_general:
            return 1.0
        Ad = self.A @ d
        slack = np.maximum(self.b - self.A @ theta, 0.0)
        grow = Ad > 0
        if not grow.any():
            return 1.0
        return float(min(1.0, np.min(slack[grow] / Ad[grow])))

    def __repr__(self) -> str:
        k = self.A.shape[0] if self.has_general else 0
        nb = int(np.isfinite(self.lb).sum() + np.isfinite(self.ub).sum())
        return f"LinearConstraints(n_params={self.n_params}, bounds={nb}, inequalities={k})"


def _spd_solve_ridged(P: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve P x = rhs, adding a tiny ridge where P is numerically singular (the condition test of
    :func:`zbound.utils.linalg.singular_rtol`): along a flat direction with a nonzero linear term
    the answer is then huge, and the ratio test of :func:`box_qp` stops at the bound, which is
    where the QP's minimizer lies. The minimum-norm solution if no ridge helps."""
    x = ridged_cholesky_solve(P, rhs, first=1e-12, factor=100.0, tries=5)
    return min_norm_solve(P, rhs) if x is None else x


def _solve_free(P: np.ndarray, g: np.ndarray, d: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The minimizer over the ``free`` coordinates of 0.5 d^T P d + g^T d with the others held
    at their values in d."""
    fixed = ~free
    rhs = -g[free]
    if fixed.any():
        rhs -= P[np.ix_(free, fixed)] @ d[fixed]
    return _spd_solve_ridged(P[np.ix_(free, free)], rhs)


#: :func:`box_qp`: iterations of the primal-dual active-set phase before the one-at-a-time
#: active-set method takes over from its last point
BOX_QP_PDAS_ITERS = 30


def _pdas_start(P: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The primal-dual active-set method (Hintermueller, Ito & Kunisch 2002: a semismooth
    Newton method on d = clip(d - (P d + g) / c, lo, hi), c = diag(P)): each iteration fixes
    every coordinate whose projected step lands on a bound and solves for the rest, so a
    whole active set changes at once. Once the sets repeat, d solves the QP exactly (the
    free coordinates inside the box, the multipliers of the fixed ones of the right sign).
    Returns (feasible d, at_lo, at_hi): the solution, or after ``BOX_QP_PDAS_ITERS`` (it may
    cycle on matrices far from diagonally dominant) the last iterate clipped."""
    diag = np.diagonal(P)
    top = float(np.max(diag, initial=0.0))
    c = np.where(diag > 1e-12 * top, diag, max(top, 1.0))
    d = np.clip(-g / c, lo, hi)
    at_lo = at_hi = None
    for _ in range(BOX_QP_PDAS_ITERS):
        z = d - (P @ d + g) / c
        new_lo = z <= lo
        new_hi = (z >= hi) & ~new_lo
        if at_lo is not None and np.array_equal(new_lo, at_lo) and \
                np.array_equal(new_hi, at_hi):
            break
        at_lo, at_hi = new_lo, new_hi
        d = np.where(at_lo, lo, np.where(at_hi, hi, 0.0))
        free = ~(at_lo | at_hi)
        if free.any():
            d[free] = _solve_free(P, g, d, free)
    d = np.clip(d, lo, hi)
    at_lo = d <= lo
    return d, at_lo, (d >= hi) & ~at_lo


def box_qp(P: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray,
           max_iter: int | None = None) -> np.ndarray:
    """argmin_d 0.5 d^T P d + g^T d  s.t.  lo <= d <= hi (lo <= 0 <= hi), P symmetric PSD.

    First the primal-dual active-set method (:func:`_pdas_start`), which changes whole active
    sets at once and usually ends at the solution in a few factorizations; then, from its
    point, the primal active-set method that certifies it: solve for the free variables with
    the active ones at their bounds; if that leaves the box, step to the first bound hit and
    fix that variable; else release the active variable whose multiplier has the wrong sign.
    From d = 0 alone that method changed one variable per factorization, one factorization per
    variable at its bound on a box-constrained fit on digits (650 parameters, most at a bound).
    Exact to rounding (the QP of Alg. 2 step 3 for box constraints), no external solver.
    P : (p, p), g, lo, hi : (p,). Returns d : (p,).
    """
    p = g.shape[0]
    d, at_lo, at_hi = _pdas_start(P, g, lo, hi)
    max_iter = max_iter if max_iter is not None else 10 * p + 20
    for _ in range(max_iter):
        free = ~(at_lo | at_hi)
        if free.any():
            target = _solve_free(P, g, d, free)
            step = target - d[free]
            # ratio test: largest s in [0, 1] keeping d_free + s * step in the box
            with np.errstate(divide="ignore", invalid="ignore"):
                s_lo = np.where(step < 0, (lo[free] - d[free]) / step, np.inf)
                s_hi = np.where(step > 0, (hi[free] - d[free]) / step, np.inf)
            s_all = np.minimum(s_lo, s_hi)
            k = int(np.argmin(s_all))
            if s_all[k] < 1.0:
                d[free] += max(s_all[k], 0.0) * step
                idx = np.flatnonzero(free)[k]
                if s_lo[k] <= s_hi[k]:
                    d[idx] = lo[idx]
                    at_lo[idx] = True
                else:
                    d[idx] = hi[idx]
                    at_hi[idx] = True
                continue
            d[free] = target
        grad = P @ d + g
        # multipliers: at a lower bound grad >= 0, at an upper bound grad <= 0
        wrong = np.where(at_lo, -grad, 0.0) + np.where(at_hi, grad, 0.0)
        j = int(np.argmax(wrong))
        if wrong[j] <= 1e-14 * max(1.0, float(np.max(np.abs(g), initial=0.0))):
            break
        at_lo[j] = at_hi[j] = False
    return np.clip(d, lo, hi)
