"""Temperature-continuation Newton on the diagonal dual, for pair-only feature sets at large n.

For feature sets whose off-diagonal XOR classes are single pairs (e.g. (1, x)), V-perp is the set
of traceless diagonal matrices W = diag(w), so the dual of the relaxation is a smooth convex
problem in n - 1 variables:

    min_{sum w = 0}  D(w) = eps log( (1/n) tr exp(n (F - diag w) / eps) ),

with gradient -(diag Sigma(w) - 1) on the traceless subspace, Sigma(w) = n exp(A) / tr exp(A),
A = n (F - diag w) / eps. Its Hessian (Daleckii-Krein, App. D) in the eigenbasis A = U diag(a) U^T,
with e = exp(a - a_max), Z = sum e and Gamma the divided differences of exp (scaled by e^-a_max), is

    H_bc = (n^2 / eps) [ sum_ij U_bi U_ci U_bj U_cj Gamma_ij / Z  -  q_b q_c / Z^2 ],
    q_b = sum_i U_bi^2 e_i.

Gamma_ij <= max(e_i, e_j), so only the rows i of the few eigenvalues within ~35 of the top (the set
K, about 10-30 at the optimum for d = 200-1000) matter, and

    sum_ij (...) = sum_{i in K} diag(u_i) U diag(g_i) U^T diag(u_i),
    g_ij = (2 - [j in K]) Gamma_ij,

that is, k rank-n SYRKs (B_i = u_i o U o sqrt(g_i)): O(k n^3) instead of the O(n^4) of the general
polish (:mod:`.newton`), which is limited to n <= 128. At low temperature most eigenvalues lie
far below K (the spectrum of A spans ~10^4-10^5 at d = 1000-2000, eps = 1), and for those columns
g_ij = 2 e_i / (c_j - c_i), c = a_max - a, is a geometric series in (c_i - c0) / (c_j - c0): the
far part of the sum is sum_k M_k o P_k with one rank-|far| SYRK M_k per term (4-7 terms for
1e-5) instead of one per row of K (15-24), see :meth:`_Eval.hessian`.

Newton from w = 0 spends most steps damped (D is nearly piecewise linear at eps << n * |F|), so the
temperature is lowered in stages, eps_0 = 4^J eps > ... > eps (4^J the power of 4 nearest
max(64, n / 2)), each stage warm-started from the
previous one and stopped when max |1 - diag Sigma| < 0.1; the last stage stops when the certified
relative gap (the same as Chambolle-Pock's: D at the iterate against the repaired feasible primal
point of Sigma(w), :mod:`.duality`) reaches tol. Steps are capped so that no entry of A moves by
more than ``STEP_CAP`` (the quadratic model of a log-sum-exp is trusted only over O(1) changes of
the exponents) and then backtracked (Armijo). The reported bound is :func:`dual_value` at the final
w, computed exactly as for Chambolle-Pock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg.lapack
from scipy.linalg.blas import dsyrk, ssyrk

from zbound.ising.features import FeatureSet
from zbound.ising.model import relative_gap
from zbound.ising.quantum.duality import dual_value, feasible_primal, primal_value
from zbound.ising.result import CheckLog
from zbound.solvers.linesearch import armijo_search
from zbound.utils.linalg import cholesky_solve
from zbound.utils.logspace import log_mean_exp

CONTINUATION_FACTOR = 4.0   # eps_{k+1} = eps_k / 4
CONTINUATION_START = 64.0   # eps_0 = max(64, n / 2) eps, rounded to a power of 4 times eps
STAGE_GTOL = 0.1            # intermediate stages stop at max |1 - diag Sigma| < 0.1
PRIMAL_CHECK_GTOL = 0.05    # the last stage repairs a primal point once max |...| < 0.05
STEP_CAP = 30.0             # max |change of A| = (n / eps) max |delta w| of a first trial step
HESSIAN_CUT = 1e-8          # eigenvalues with e_i = exp(a_i - a_max) below this leave K
HESSIAN_MAX_K = 24          # at most the top 24 eigenvalues enter K (an approximate Hessian)
SIGMA_CUT = 1e-18           # Sigma(w) is built from the eigenpairs with e_i above this
HESSIAN_CHUNK = 4           # rows i of K per SYRK (memory: n x 4 n floats)
HESSIAN_FLOAT32 = True      # the Hessian only steers Newton: single-precision SYRK
HESSIAN_FAR_GAP = 40.0      # columns this far below K's range are summed as a series ...
HESSIAN_SERIES_RATIO = 0.15  # ... whose ratio is at most this ...
HESSIAN_SERIES_TOL = 1e-5   # ... to this relative accuracy


@dataclass
class DiagonalNewtonSolution:
    """Outcome of :meth:`DiagonalDualNewton.solve`.

    bound: dual value D(W) at ``W`` (an upper bound on a_eps whatever happened). primal: best
    primal value, that of the feasible matrix ``sigma`` (-inf and None when no point was repaired).
    W: (n, n) diagonal traceless dual point. steps: Newton steps (all stages).
    eigendecompositions: LAPACK eigensolves (full eigenpairs of A, and eigenvalues of the repaired
    primal points). converged: the relative gap reached ``tol``. stages: (eps, steps) per stage.
    history: (step, bound, primal) at every primal check of the last stage.
    """

    bound: float
    primal: float
    sigma: np.ndarray | None
    W: np.ndarray
    steps: int
    eigendecompositions: int
    converged: bool
    stages: list[tuple[float, int]] = field(default_factory=list)
    history: list[tuple[int, float, float]] = field(default_factory=list, repr=False)


class _Eval:
    """Eigendecomposition of A = n (F - diag w) / eps with the dual value and Sigma's diagonal."""

    __slots__ = ("D", "a", "U", "e", "Z", "diag_sigma")

    def __init__(self, F: np.ndarray, w: np.ndarray, eps: float):
        n = F.shape[0]
        A = (n / eps) * F
        A[np.diag_indices(n)] -= (n / eps) * w
        a, U, info = scipy.linalg.lapack.dsyevd(A, compute_v=1, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"syevd failed to converge (info={info})")
        lme, e, Z = log_mean_exp(a, return_exp=True)
        Z = float(Z[0])
        self.D = eps * lme
        self.a, self.U, self.e, self.Z = a, U, e, Z
        K = e > SIGMA_CUT
        self.diag_sigma = (n / Z) * ((U[:, K] ** 2) @ e[K])

    def sigma(self) -> np.ndarray:
        """Sigma(w) = n U diag(e / Z) U^T from the eigenpairs with e > SIGMA_CUT."""
        n = self.U.shape[0]
        K = self.e > SIGMA_CUT
        R = self.U[:, K] * np.sqrt((n / self.Z) * self.e[K])
        return R @ R.T

    def hessian(self, eps: float) -> np.ndarray:
        """Lower triangle of the Hessian of D(w) (rows of K only, see the module docstring).

        Columns j far below K (see :func:`_far_columns`) enter through the series of
        g_ij = 2 e_i / (c_j - c_i) (c = a_max - a) around the middle c0 of K's range,

            sum_{i in K, j far} ... = sum_k M_k o P_k,
            M_k = U_F diag((c_F - c0)^-(k+1)) U_F^T,  P_k = U_K diag(2 e_K (c_K - c0)^k) U_K^T,

        one rank-|F| SYRK per term instead of one per row of K; the rest, exactly, as k SYRKs
        over the near columns only.
        """
        a, U, e, Z = self.a, self.U, self.e, self.Z
        n = U.shape[0]
        K = np.flatnonzero(e > HESSIAN_CUT)[-HESSIAN_MAX_K:]
        inK = np.zeros(n, dtype=bool)
        inK[K] = True
        c = a[-1] - a
        far, c0, terms = _far_columns(c, K, inK)
        near = np.flatnonzero(~far)
        H = np.zeros((n, n), order="F")
        Un = U[:, near]
        for start in range(0, K.shape[0], HESSIAN_CHUNK):
            blocks = []
            for i in K[start:start + HESSIAN_CHUNK]:
                da = np.abs(a[i] - a[near])
                emax = np.maximum(e[i], e[near])
                with np.errstate(invalid="ignore", divide="ignore"):
                    g = np.where(da > 1e-12, emax * (-np.expm1(-da)) / da, emax)
                g[~inK[near]] *= 2.0
                blocks.append(Un * (U[:, i:i + 1] * np.sqrt(g)[None, :]))
            B = np.concatenate(blocks, axis=1)
            if HESSIAN_FLOAT32:
                H += ssyrk(1.0, B.astype(np.float32), lower=1)
            else:
                H = dsyrk(1.0, B, beta=1.0, c=H, lower=1, overwrite_c=1)
        if terms:
            # (c_j - c0)^-(k+1) = s^-(k+1) y_j^-(k+1) with y >= 1: s^-(k+1) goes into P_k
            x = c[far] - c0
            s = float(x.min())
            y = x / s
            dtype = np.float32 if HESSIAN_FLOAT32 else np.float64
            syrk = ssyrk if HESSIAN_FLOAT32 else dsyrk
            UF = U[:, far].astype(dtype)
            UK = U[:, K]
            rK = (c[K] - c0) / s
            acc = np.zeros((n, n), dtype=dtype, order="F")
            for k in range(terms):
                root = y ** (-(k + 1) / 2.0)
                root[root < 1e-18] = 0.0            # no subnormal floats in the SYRK
                M = syrk(1.0, UF * root.astype(dtype)[None, :], lower=1)  # upper part: 0
                M *= ((UK * ((2.0 / s) * e[K] * rK**k)[None, :]) @ UK.T).astype(dtype)
                acc += M
            H += acc
        q = (U[:, K] ** 2) @ e[K]
        H /= Z
        H -= np.outer(q, q) / Z**2
        H *= n * n / eps
        return H


def _far_columns(c: np.ndarray, K: np.ndarray, inK: np.ndarray):
    """(far, c0, terms): the columns j whose divided differences with every i in K are summed
    as a series (c = a_max - a), its center c0 and its number of terms (0: none is far).

    Far means c_j - c0 >= (half-width of K's range) / HESSIAN_SERIES_RATIO (the series'
    ratio) and c_j - max c_K >= HESSIAN_FAR_GAP (then 1 - exp(-(a_i - a_j)) = 1 to double
    precision). Terms: the ratio^terms / (1 - ratio) <= HESSIAN_SERIES_TOL, and the series
    only where it costs fewer SYRK columns than the rows of K it replaces."""
    cK = c[K]
    lo, hi = float(cK.min()), float(cK.max())
    c0, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    reach = max(half / HESSIAN_SERIES_RATIO, hi - c0 + HESSIAN_FAR_GAP)
    far = (c - c0 >= reach) & ~inK
    n_far = int(far.sum())
    if n_far == 0:
        return far, c0, 0
    ratio = half / float((c[far] - c0).min())
    terms = 1
    if ratio > 0:
        terms = max(1, math.ceil(math.log(HESSIAN_SERIES_TOL * (1.0 - ratio)) / math.log(ratio)))
    if terms >= K.shape[0]:
        return np.zeros_like(far), c0, 0
    return far, c0, terms


class DiagonalDualNewton:
    """Newton with temperature continuation on the diagonal dual (pair-only feature sets)."""

    def __init__(self, F: np.ndarray, features: FeatureSet, epsilon: float):
        if not features.xor_classes.pairs_only:
            raise ValueError("DiagonalDualNewton needs a pair-only feature set such as (1, x)")
        self.F = np.asarray(F, dtype=np.float64)
        self.features, self.eps = features, float(epsilon)
        self.n = features.n
        self.eigendecompositions = 0

    def _evaluate(self, w: np.ndarray, eps: float) -> _Eval:
        self.eigendecompositions += 1
        return _Eval(self.F, w, eps)

    def _direction(self, ev: _Eval, grad: np.ndarray, eps: float) -> np.ndarray:
        """Newton direction on the traceless subspace (H 1 = 0: 1 1^T fills the null space)."""
        n = self.n
        H = ev.hessian(eps)
        mu = max(float(np.mean(np.diag(H))), 1e-300)
        H += mu / n  # + mu 1 1^T / n (lower triangle is all dpotrf reads)
        for reg in (1e-12, 1e-8, 1e-4, 1e-1):
            Hr = H.copy()
            Hr[np.diag_indices(n)] += reg * mu
            # the smallest ridge at which Hr passes the condition test of singular_rtol
            delta = cholesky_solve(Hr, -grad)
            if delta is not None and np.all(np.isfinite(delta)):
                return delta - delta.mean()
        return -grad * (eps / n)

    def _stage(self, w, eps, max_steps, final, tol, best, history, step0):
        """Newton at temperature eps from w; returns (w, ev, steps, converged)."""
        n = self.n
        ev = self._evaluate(w, eps)
        steps = 0
        while True:
            grad = 1.0 - ev.diag_sigma
            gmax = float(np.abs(grad).max())
            if final:
                if ev.D < best["D"]:
                    best["D"], best["w"] = ev.D, w
                if gmax < PRIMAL_CHECK_GTOL or steps == max_steps:
                    S, s = feasible_primal(ev.sigma(), self.features)
                    self.eigendecompositions += 1
                    P = primal_value(S, s, self.F, self.eps)
                    if P > best["P"]:
                        best["P"], best["S"] = P, S
                    history.append((step0 + steps, best["D"], best["P"]))
                    if relative_gap(best["D"], best["P"], self.eps) <= tol:
                        return w, steps, True
            elif gmax < STAGE_GTOL:
                return w, steps, True
            if steps == max_steps:
                return w, steps, False
            delta = self._direction(ev, grad, eps)
            slope = float(grad @ delta)
            if not slope < 0:
                return w, steps, False
            t = min(1.0, STEP_CAP / max((n / eps) * float(np.abs(delta).max()), 1e-300))

            def trial(t, w=w, delta=delta):
                point = self._evaluate(w + t * delta, eps)
                return point.D, point

            found = armijo_search(trial, ev.D, slope, t, min_step=1e-10)
            if found is None:
                return w, steps, False
            t, _, ev = found
            w = w + t * delta
            w -= w.mean()
            steps += 1

    def solve(self, tol: float, max_steps: int = 200, w0: np.ndarray | None = None,
              continuation: bool = True) -> DiagonalNewtonSolution:
        """Newton stages from eps_0 = 4^J eps down to eps (one stage at eps if not
        ``continuation``), at most ``max_steps`` Newton steps in all."""
        n, eps = self.n, self.eps
        w = np.zeros(n) if w0 is None else np.array(w0, dtype=np.float64) - np.mean(w0)
        temps = [eps]
        if continuation:
            # the first stage starts from w = 0; the larger n, the hotter it must start to be
            # an easy one (n = 2001: 60+ damped steps from 64 eps, 4 from 1024 eps)
            start = max(CONTINUATION_START, n / 2)
            j = int(round(math.log(start) / math.log(CONTINUATION_FACTOR)))
            temps = [eps * CONTINUATION_FACTOR**k for k in range(j, 0, -1)] + [eps]
        best = {"D": math.inf, "P": -math.inf, "S": None, "w": w}
        history = CheckLog()
        stages = []
        steps = 0
        converged = False
        for k, t_eps in enumerate(temps):
            final = k == len(temps) - 1
            w, s, ok = self._stage(w, t_eps, max_steps - steps, final, tol, best, history, steps)
            steps += s
            stages.append((t_eps, s))
            if final:
                converged = ok
            elif not ok and steps >= max_steps:
                break
        W = np.diag(best["w"])
        bound = dual_value(self.F, W, eps)  # the certificate, computed as for Chambolle-Pock
        self.eigendecompositions += 1
        return DiagonalNewtonSolution(
            bound=bound, primal=best["P"], sigma=best["S"], W=W, steps=steps,
            eigendecompositions=self.eigendecompositions, converged=converged, stages=stages,
            history=history)
