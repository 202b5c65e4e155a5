"""Damped Newton polish of the smooth dual of the quantum relaxation (not in the paper).

Chambolle-Pock's feasible primal point converges like O(1/k) for general feature sets (Beyler &
Bach, Sec. 4.3), while a few Newton steps on the dual D(W) = eps log((1/n) tr exp(n (F - W) / eps))
over W in V-perp, started from CP's dual iterate, make Sigma(W) = n exp(n (F - W) / eps) / tr(...)
lie in V to ~1e-10, so the repaired primal point closes the gap
(docs/quantum.md, "Faster than the paper's algorithm").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg.lapack

from zbound.ising.features import FeatureSet
from zbound.ising.model import relative_gap
from zbound.ising.quantum.duality import feasible_primal, primal_value
from zbound.solvers.linesearch import armijo_search
from zbound.utils.linalg import psd_solve
from zbound.utils.logspace import log_mean_exp

# Newton polishing of the dual needs the (p, n, n) tensor of basis matrices in the eigenbasis
# and a p x p Hessian (p = dim of V-perp in the coordinates used); above these sizes plain CP.
NEWTON_MAX_N = 128
NEWTON_MAX_WORK = 4e9  # flops of one Hessian, p^2 n^2 (p = dim V-perp); memory ~2 p n^2 floats


@dataclass
class PolishResult:
    """Outcome of :meth:`DualNewton.run`.

    bound: dual value D(W) at the final ``W`` (an upper bound on a_eps). primal: the best primal
    value (the incoming one unless a better feasible point was found, then ``sigma``, else None).
    steps: Newton steps taken. eigendecompositions: LAPACK eigensolves (evaluations and repairs).
    """

    bound: float
    W: np.ndarray
    primal: float
    sigma: np.ndarray | None
    steps: int
    eigendecompositions: int = 0


class DualNewton:
    """Damped Newton on the smooth dual min_{W in V-perp} D(W).

    The Hessian uses the divided differences of exp (App. D, Daleckii-Krein) in the eigenbasis of
    F - W. Coordinates: for each XOR class with upper-triangular entries u_0, u_1, ..., basis
    matrices E_{u_j} - E_{u_0} (Newton is affine-invariant, so a non-orthogonal basis is fine).
    """

    def __init__(self, F: np.ndarray, features: FeatureSet, epsilon: float):
        self.F, self.features, self.eps = F, features, epsilon
        n = features.n
        self.n = n
        xc = features.xor_classes
        iu, ju = np.triu_indices(n)
        cls = xc.index[iu, ju]
        order = np.argsort(cls, kind="stable")
        first = np.ones(order.shape[0], dtype=bool)
        first[1:] = cls[order][1:] != cls[order][:-1]
        rep = np.empty(xc.n_classes, dtype=np.int64)
        rep[cls[order][first]] = order[first]
        k_idx = order[~first]  # upper entries that get a coordinate
        k_rep = rep[cls[k_idx]]  # their class representative
        # only the entries that appear in some basis matrix are needed (for (1, x): the diagonal)
        used, inv = np.unique(np.concatenate([k_idx, k_rep]), return_inverse=True)
        self.iu, self.ju = iu[used], ju[used]
        self.k_idx, self.k_rep = inv[: k_idx.shape[0]], inv[k_idx.shape[0]:]
        self.p = k_idx.shape[0]
        self.eigendecompositions = 0

    def _basis_matrix(self, coef: np.ndarray) -> np.ndarray:
        n = self.n
        vals = np.zeros(self.iu.shape[0])
        np.add.at(vals, self.k_idx, coef)
        np.add.at(vals, self.k_rep, -coef)
        M = np.zeros((n, n))
        M[self.iu, self.ju] = vals
        M[self.ju, self.iu] = vals
        return M

    def evaluate(self, W: np.ndarray, hessian: bool):
        """D(W), Sigma(W), the gradient in the basis coordinates and (if asked) the Hessian."""
        n, eps = self.n, self.eps
        with np.errstate(over="ignore", invalid="ignore"):
            A = (n / eps) * (self.F - W)
        if not hessian and not np.isfinite(A).all():
            return math.inf, None, None, None      # a trial point beyond float64: rejected
        self.eigendecompositions += 1
        a, U, info = scipy.linalg.lapack.dsyevd(A, compute_v=1, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"syevd failed to converge (info={info})")
        lme, e, Z = log_mean_exp(a, return_exp=True)
        D = eps * lme
        Sigma = (U * (n * e / Z)) @ U.T
        # dD/dw_k = -<Sigma, B_k>; for an upper entry (a, b), <Sigma, E_ab> = (2 - [a = b]) S_ab
        wgt = np.where(self.iu == self.ju, 1.0, 2.0)
        sv = Sigma[self.iu, self.ju] * wgt
        g = -(sv[self.k_idx] - sv[self.k_rep])
        if not hessian:
            return D, Sigma, g, None
        # eigenbasis images of the basis matrices: U^T E_ab U = (r_a r_b^T + r_b r_a^T) / (1+[a=b])
        ra, rb = U[self.iu], U[self.ju]
        Hu = ra[:, :, None] * rb[:, None, :]
        Hu = (Hu + Hu.transpose(0, 2, 1)) / np.where(self.iu == self.ju, 2.0, 1.0)[:, None, None]
        Hk = (Hu[self.k_idx] - Hu[self.k_rep]).reshape(self.p, n * n)
        da = np.abs(a[:, None] - a[None, :])
        emax = np.maximum(e[:, None], e[None, :])
        with np.errstate(invalid="ignore", divide="ignore"):
            gam = np.where(da > 1e-12, emax * (-np.expm1(-da)) / da, emax)
        q = Hk[:, :: n + 1] @ e
        H = (Hk * gam.reshape(-1)) @ Hk.T / Z - np.outer(q, q) / Z**2
        H *= n * n / eps
        return D, Sigma, g, H

    def run(self, W: np.ndarray, tol: float, best_P: float, max_steps: int = 40) -> PolishResult:
        """Newton from W (Armijo backtracking) until the gap to ``best_P`` or a better feasible
        primal value is <= ``tol`` (relative), Newton stalls, or ``max_steps``."""
        start = self.eigendecompositions
        D, Sigma, g, H = self.evaluate(W, True)
        best_S = None
        for step in range(1, max_steps + 1):
            S, s = feasible_primal(Sigma, self.features)
            self.eigendecompositions += 1
            P = primal_value(S, s, self.F, self.eps)
            if P > best_P:
                best_P, best_S = P, S
            if relative_gap(D, best_P, self.eps) <= tol:
                return PolishResult(D, W, best_P, best_S, step,
                                    self.eigendecompositions - start)
            mu = 1e-12 * max(float(np.max(np.diag(H))), 1e-300)
            # Cholesky where H + mu I is numerically positive definite, else the minimum-norm
            # step (the pivot and singular-value threshold of zbound.utils.linalg.singular_rtol)
            with np.errstate(over="ignore", invalid="ignore"):
                delta = psd_solve(H + mu * np.eye(self.p), -g)
                slope = float(g @ delta)
            if not (slope < 0 and np.isfinite(delta).all()):
                break           # no finite descent step: the polish ends where it is
            with np.errstate(over="ignore", invalid="ignore"):
                dW = self._basis_matrix(delta)
            if not np.isfinite(dW).all():
                break
            def trial(t, W=W, dW=dW):
                with np.errstate(over="ignore", invalid="ignore"):
                    point = W + t * dW
                return self.evaluate(point, False)[0], None

            found = armijo_search(trial, D, slope, 1.0, shrink="halve", min_step=1e-10)
            if found is None:
                break
            t = found[0]
            W = W + t * dW
            D, Sigma, g, H = self.evaluate(W, True)
        S, s = feasible_primal(Sigma, self.features)
        self.eigendecompositions += 1
        P = primal_value(S, s, self.F, self.eps)
        if P > best_P:
            best_P, best_S = P, S
        return PolishResult(D, W, best_P, best_S, max_steps, self.eigendecompositions - start)
