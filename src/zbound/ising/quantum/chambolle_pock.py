"""Chambolle-Pock (Beyler & Bach, Alg. 1, theta = 1) for the quantum relaxation a_eps(F).

It minimizes G(Sigma) + indicator(Sigma in V cap {tr = n}) with
G(Sigma) = (eps / n)(tr Sigma log Sigma - tr Sigma + n) - tr(Sigma F), so a_eps = -min. The
proximal step of G is the spectral function s = lambda * omega(m / lambda - log lambda) of
M = Sigma_0 + tau F, with lambda = tau eps / n and omega the Wright omega function
(:func:`entropy_prox`). Progress is tracked by the dual value D(W) of the dual iterate (an upper
bound whatever the iterate) against a repaired feasible primal point (:mod:`.duality`); once the
relative gap is below 0.1 the dual can be finished by Newton steps (:mod:`.newton`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg.lapack
from scipy.linalg.blas import dsyrk
from scipy.special import wrightomega

from zbound.ising.features import FeatureSet
from zbound.ising.model import relative_gap
from zbound.ising.quantum.diagonal_newton import DiagonalDualNewton
from zbound.ising.quantum.duality import (
    dual_and_gradient,
    dual_value,
    feasible_primal,
    primal_value,
)
from zbound.ising.quantum.newton import NEWTON_MAX_N, NEWTON_MAX_WORK, DualNewton
from zbound.ising.result import CheckLog

# Eigenpairs of the prox whose value is below S_MIN (on matrices of trace n) are dropped; for
# n >= PARTIAL_MIN_N and an iterate of numerical rank below PARTIAL_RANK_FRACTION * n only the
# needed part of the spectrum is computed (syevr), cheaper than syevd at large n.
S_MIN = 1e-18
PARTIAL_MIN_N = 150
PARTIAL_RANK_FRACTION = 0.3
# Pair-only feature sets (e.g. (1, x)) with n > NEWTON_MAX_N are solved, when ``polish`` is on, by
# Newton with temperature continuation on the diagonal dual (:mod:`.diagonal_newton`); CP takes
# over from its dual point if that does not reach tol within DIAGONAL_NEWTON_MAX_STEPS steps.
DIAGONAL_NEWTON_MIN_N = NEWTON_MAX_N + 1
DIAGONAL_NEWTON_MAX_STEPS = 200


@dataclass
class CPSolution:
    """Outcome of :func:`solve_quantum` (before the public :class:`QuantumResult` is built).

    bound: best dual value D(W) seen, an upper bound on a_eps(F) whatever the iterations did.
    primal: best primal value, that of the feasible matrix ``sigma`` (a lower value on a_eps).
    sigma: (n, n) feasible primal matrix in K'. dual: (n, n) dual iterate Y (for warm starts).
    iterations: Chambolle-Pock iterations run. converged: the relative gap reached ``tol``.
    newton_steps: Newton steps of the dual polish (or of the diagonal-dual Newton solver).
    eigendecompositions: LAPACK symmetric eigensolves of (n, n) matrices (iterations, checks and
    Newton steps). history: (iteration, bound, primal) per check.
    """

    bound: float
    primal: float
    sigma: np.ndarray
    dual: np.ndarray
    iterations: int
    converged: bool
    newton_steps: int = 0
    history: list[tuple[int, float, float]] = field(default_factory=list, repr=False)
    eigendecompositions: int = 0


def entropy_prox(m: np.ndarray, lam: float) -> np.ndarray:
    """Eigenvalues of (I + tau dG)^{-1} (Sec. 4.2): s = lam * omega(m / lam - log lam).

    s > 0 solves log s + s / lam = m / lam, the first-order condition of
    min_s (eps/n)(s log s - s) + (s - m)^2 / (2 tau) with lam = tau eps / n; ``m`` are the
    eigenvalues of Sigma_0 + tau F. omega is the Wright omega function (w + log w = z), which
    is ~z for large z and ~exp(z) for very negative z, so there is no overflow.
    """
    return lam * wrightomega(m / lam - math.log(lam))


def solve_quantum(
    F: np.ndarray,
    features: FeatureSet,
    epsilon: float,
    tol: float = 1e-6,
    tau: float = 3.0,
    sigma: float = 0.3,
    max_iter: int = 20000,
    check_every: int = 20,
    x0: np.ndarray | None = None,
    y0: np.ndarray | None = None,
    polish: bool = True,
) -> CPSolution:
    """Chambolle-Pock (Alg. 1, theta = 1) for a_eps(F) on a given feature set; inputs unchecked.

    Stops when (D - P) / max(abs(D), abs(P), eps) <= tol, checked every ``check_every`` iterations.
    ``polish``: once the gap is below 0.1, run damped Newton on the dual (n <= 128 and a bounded
    Hessian; CP's primal converges like O(1/k) for general feature sets, Sec. 4.3), resuming CP
    from the polished dual if that does not close the gap. For pair-only feature sets with
    n > NEWTON_MAX_N, ``polish`` means Newton with temperature continuation on the diagonal dual
    (:mod:`.diagonal_newton`, no CP iteration when it converges; CP continues from its dual
    point otherwise). Returns a :class:`CPSolution`.

    Kept as one function: the iterations, the gap checks, the Newton polishes and their
    fallbacks share the iterates, the best certificate and the counters, and the loop follows
    the paper's Alg. 1 step by step.
    """
    n = features.n
    xc = features.xor_classes
    pairs = xc.pairs_only
    eig_count = 0
    best_D, best_P = math.inf, -math.inf
    best_S = np.eye(n)
    history = CheckLog()
    newton_steps = 0
    if polish and pairs and n >= DIAGONAL_NEWTON_MIN_N:
        dn = DiagonalDualNewton(F, features, epsilon)
        w0 = None if y0 is None else np.diag(np.asarray(y0, dtype=np.float64))
        dsol = dn.solve(tol, max_steps=min(max_iter, DIAGONAL_NEWTON_MAX_STEPS), w0=w0,
                        continuation=y0 is None)
        eig_count, newton_steps = dsol.eigendecompositions, dsol.steps
        history = dsol.history
        if dsol.converged:
            return CPSolution(bound=dsol.bound, primal=dsol.primal, sigma=dsol.sigma,
                              dual=dsol.W, iterations=0, converged=True,
                              newton_steps=newton_steps, history=history,
                              eigendecompositions=eig_count)
        best_D = dsol.bound
        if dsol.sigma is not None:
            best_P, best_S = dsol.primal, dsol.sigma
            x0 = dsol.sigma
        y0 = dsol.W
        polish = False
    lam = tau * epsilon / n
    tauF = np.asfortranarray(tau * F)
    syevd = scipy.linalg.lapack.dsyevd
    syevr = scipy.linalg.lapack.dsyevr
    # prox values s < S_MIN are dropped: s = lam omega(m/lam - log lam) < S_MIN iff
    # m < S_MIN + lam log(S_MIN) (from m = s + lam log s)
    m_min = S_MIN + lam * math.log(S_MIN)
    partial_below = int(PARTIAL_RANK_FRACTION * n) if n >= PARTIAL_MIN_N else -1
    rank = n
    if partial_below > 0:
        lw = scipy.linalg.lapack.dsyevr_lwork(n)
        lwork_r, liwork_r = int(lw[0]), int(lw[1])
    diag = np.diag_indices(n)

    x = np.eye(n) if x0 is None else np.array(x0, dtype=np.float64)
    y = np.zeros((n, n)) if y0 is None else np.array(y0, dtype=np.float64)
    if pairs:
        # For pair-only classes (e.g. (1, x)) V is "symmetric with constant diagonal", so the
        # dual of the constraint is diagonal: y = diag(yd) and its update only reads diag(xbar).
        yd = np.diag(y).copy()
        x = 0.5 * (x + x.T)
    xbar = x.copy()
    converged = False
    it = 0
    newton = DualNewton(F, features, epsilon) if polish and n <= NEWTON_MAX_N else None
    if newton is not None and newton.p**2 * n**2 > NEWTON_MAX_WORK:
        newton = None  # forming the p x p Hessian would cost more than CP's remaining work
    next_polish = 0

    def check():
        nonlocal best_D, best_P, best_S, eig_count
        if pairs:
            W = np.diag(yd - yd.mean())
            xs = np.tril(x) + np.tril(x, -1).T  # only the lower triangle of x is maintained
        else:
            W = xc.project_perp(y)
            xs = x
        if pairs:
            # Sigma(W) rarely beats the CP iterate here and would need eigenvectors
            D, cands = dual_value(F, W, epsilon), (xs,)
        else:
            D, Sw = dual_and_gradient(F, W, epsilon)
            cands = (xs, Sw)
        eig_count += 1 + len(cands)
        if D < best_D:
            best_D = D
        for cand in cands:
            S, s = feasible_primal(cand, features)
            P = primal_value(S, s, F, epsilon)
            if P > best_P:
                best_P, best_S = P, S
        history.append((it, best_D, best_P))
        return relative_gap(best_D, best_P, epsilon)

    for it in range(1, max_iter + 1):
        if pairs:
            yd += sigma * (xbar[diag] - 1.0)
            M = tauF + x
            M[diag] -= tau * yd
        else:
            Z = y + sigma * xbar
            y = Z - xc.project(Z)
            y[diag] -= sigma - np.trace(Z) / n
            M = x - tau * y + tauF
        if rank < partial_below:
            # Only eigenpairs whose prox value exceeds S_MIN matter: MRRR (syevr) on the
            # range [m_min, inf) skips the rest of the spectrum (x is numerically low-rank).
            m, U, k, _, info = syevr(M, compute_v=1, range="V", lower=1, vl=m_min, vu=1e300,
                                     lwork=lwork_r, liwork=liwork_r, overwrite_a=1)
            m, U = m[:k], U[:, :k]
        else:
            # LAPACK syevd (divide and conquer) directly: scipy.linalg.eigh re-queries the
            # workspace on every call, which dominates for small n; M is Fortran-ordered.
            m, U, info = syevd(M, compute_v=1, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"LAPACK eigensolver failed (info={info})")
        eig_count += 1
        s = entropy_prox(m, lam)
        rank = int(np.count_nonzero(s > S_MIN))
        # x = U diag(s) U^T with s > 0: a rank-n SYRK fills the lower triangle only
        R = U * np.sqrt(s)
        x_new = dsyrk(1.0, R.T, trans=1, lower=1) if R.shape[1] else np.zeros((n, n), order="F")
        if not pairs:
            x_new = np.tril(x_new) + np.tril(x_new, -1).T
        xbar = 2.0 * x_new - x
        x = x_new
        if it % check_every == 0 or it == max_iter:
            gap = check()
            if gap <= tol:
                converged = True
                break
            if newton is not None and it >= next_polish and gap < 0.1:
                W0 = np.diag(yd - yd.mean()) if pairs else xc.project_perp(y)
                try:
                    pol = newton.run(W0, tol, best_P)
                except (np.linalg.LinAlgError, ValueError):
                    newton = None  # numerically hopeless here: plain CP from now on
                    continue
                newton_steps += pol.steps
                eig_count += pol.eigendecompositions
                best_D = min(best_D, pol.bound)
                if pol.sigma is not None:
                    best_P, best_S = pol.primal, pol.sigma
                history.append((it, best_D, best_P))
                if relative_gap(best_D, best_P, epsilon) <= tol:
                    converged = True
                    break
                # resume CP from the polished dual point, and polish again only later
                W = pol.W
                if pairs:
                    yd = np.diag(W) + yd.mean()
                else:
                    y = W + (np.trace(y) / n) * np.eye(n)
                next_polish = it + 10 * check_every
    if not history or history[-1][0] != it:
        check()
    Y = np.diag(yd) if pairs else y
    return CPSolution(bound=best_D, primal=best_P, sigma=best_S, dual=Y, iterations=it,
                      converged=converged, newton_steps=newton_steps, history=history,
                      eigendecompositions=eig_count)
