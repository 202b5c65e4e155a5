"""Diagonal metric learning for the quantum relaxation (Beyler & Bach, supplement C).

With V = diag(eta), eta in the simplex, phi(x)^T V phi(x) = 1 on the hypercube, so every such V
gives a lower bound on the KL; the best one is D_diag(Sigma) = max_i [h(Sigma)]_ii with
h(t) = t log t - t + 1, and (eq. (10))

    a_eps^diag(F) = sup_{Sigma in K'} tr(Sigma F) - eps max_i [h(Sigma)]_ii,

which lies between Phi_eps(f) and a_eps(F) (max_i >= mean_i, and (1/n) tr h(Sigma) is the
entropy term of a_eps since tr Sigma = n). The objective is concave and nonsmooth; it is maximized
with Kelley's cutting-plane method (C.2): each cut uses a supergradient F - eps grad g_i(Sigma)
for an active i, with grad g_i from the divided differences of h (App. D), and each master problem
max_{Sigma in K'} min_t (cut_t) is a small SDP solved by CVXPY.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from zbound.ising.features import FeatureSet, coefficient_matrix
from zbound.ising.model import relative_gap
from zbound.ising.quantum import QuantumResult, quantum_bound
from zbound.ising.quantum.checks import check_int, check_positive, resolve_features
from zbound.ising.quantum.duality import eigvalsh
from zbound.ising.quantum.kprime import k_prime_constraints
from zbound.ising.result import BoundResult
from zbound.solvers.result import Status
from zbound.utils.extras import require

__all__ = [
    "MetricResult",
    "metric_learning_bound",
    "diag_entropy",
    "diag_entropy_gradient",
]


def _h(t: np.ndarray) -> np.ndarray:
    """h(t) = t log t - t + 1 on t >= 0 (h(0) = 1)."""
    t = np.clip(t, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t + 1.0


def diag_entropy(Sigma: np.ndarray) -> np.ndarray:
    """(n,) diagonal of h(Sigma) = Sigma log Sigma - Sigma + I (supplement C, eq. (10))."""
    lam, U = scipy.linalg.eigh(Sigma)
    return (U**2) @ _h(lam)


def _divided_differences(lam: np.ndarray) -> np.ndarray:
    """Gamma_kl = (h(l_k) - h(l_l)) / (l_k - l_l), h'(l) = log l on ties (App. D)."""
    hl = _h(lam)
    dl = lam[:, None] - lam[None, :]
    close = np.abs(dl) <= 1e-10 * np.maximum(1.0, np.abs(lam)[:, None])
    mid = np.maximum(0.5 * (lam[:, None] + lam[None, :]), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        gam = np.where(close, np.log(mid), (hl[:, None] - hl[None, :]) / np.where(close, 1.0, dl))
    return gam


def diag_entropy_gradient(Sigma: np.ndarray, i: int) -> np.ndarray:
    """Gradient of g_i(Sigma) = [h(Sigma)]_ii (App. D / C.2.2), Sigma positive definite.

    grad g_i = U (Gamma o (u_i u_i^T)) U^T with u_i = U[i, :] the i-th row of the eigenvectors.
    """
    lam, U = scipy.linalg.eigh(Sigma)
    if lam[0] <= 0:
        raise ValueError("diag_entropy_gradient needs a positive definite Sigma")
    u = U[i]
    return U @ (_divided_differences(lam) * np.outer(u, u)) @ U.T


@dataclass(kw_only=True, repr=False)
class MetricResult(BoundResult):
    """Outcome of :func:`metric_learning_bound`, a :class:`~zbound.ising.result.BoundResult`.

    bound: min(Kelley's upper value, the plain quantum bound) >= a_eps^diag(F) >= Phi_eps.
    lower: best objective value of eq. (10) found (a value of a feasible Sigma).
    kelley_upper: the cutting-plane model's maximum (upper value on a_eps^diag).
    quantum: the plain relaxation a_eps(F) result it started from.
    converged: Kelley's gap reached ``tol``; message: "converged", "max_iter reached" or
    "master problem <CVXPY status>" (the bound is valid in every case); iterations (= ``nit``):
    cutting-plane iterations; history: (upper, lower) per iteration, ``trace`` the upper value.
    """

    lower: float
    kelley_upper: float
    gap: float
    sigma: np.ndarray
    quantum: QuantumResult
    history: list[tuple[float, float]] = field(default_factory=list, repr=False)


def _objective(Sigma, F, eps):
    lam, U = scipy.linalg.eigh(Sigma)
    g = (U**2) @ _h(lam)
    return float(np.vdot(Sigma, F) - eps * g.max()), g, lam, U


class _Kelley:
    """Kelley's cutting-plane model of a_eps^diag over K': the master problem's variables
    (S, the epigraph s) and constraints, its cuts, and the best objective value seen."""

    def __init__(self, cp, features: FeatureSet, F, eps: float, interior: float):
        self.F, self.eps, self.interior = F, eps, interior
        self.n, self.xc = features.n, features.xor_classes
        self.S = cp.Variable((self.n, self.n), symmetric=True)
        self.s = cp.Variable()
        self.psd = self.S >> 0
        self.base = [*k_prime_constraints(self.S, features), self.psd]
        self.cuts: list = []
        self.planes: list = []      # (val - <G, Sig>, G) of every cut, for the certificate
        self.best_lower, self.best_sigma = -math.inf, None
        self._cp = cp

    def solve_master(self, solver: str) -> str | None:
        """Solve the master problem (the model's maximum over the cuts so far); None, or
        why it has no solution to cut at."""
        cp = self._cp
        prob = cp.Problem(cp.Maximize(self.s), [*self.base, *self.cuts])
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                prob.solve(solver=solver)
        except cp.error.SolverError as exc:
            return f"master problem solver error ({str(exc)[:80]})"
        if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or self.S.value is None:
            return f"master problem {prob.status}"
        return None

    def add_cut(self, Sig) -> None:
        """A cut at (1 - interior) Sig + interior I (in K', log finite) from a supergradient of
        the objective at an active diagonal entry."""
        cp, n = self._cp, self.n
        Sig = (1 - self.interior) * Sig + self.interior * np.eye(n)
        val, g, lam, U = _objective(Sig, self.F, self.eps)
        if val > self.best_lower:
            self.best_lower, self.best_sigma = val, Sig
        i = int(np.argmax(g))
        u = U[i]
        grad_g = U @ (_divided_differences(lam) * np.outer(u, u)) @ U.T
        G = self.xc.project(self.F - self.eps * grad_g)  # only the V-part acts on K'
        self.cuts.append(self.s <= val + cp.sum(cp.multiply(G, self.S - Sig)))
        self.planes.append((val - float(np.vdot(G, Sig)), G))

    def certified_upper(self) -> float:
        """An upper value on the master problem from its dual, not from the solver's
        objective (exact to the solver's tolerance only): for multipliers lam >= 0 of the cuts
        summing to 1 and any W in V-perp, max_{S in K'} min_j cut_j(S) <= sum_j lam_j c_j +
        n lambda_max(G_lam - W), W taken from the solver's PSD multiplier as in
        zero_temperature_bound."""
        lam = np.array([max(float(np.asarray(c.dual_value).ravel()[0]), 0.0)
                        if c.dual_value is not None else 0.0 for c in self.cuts])
        if not lam.sum() > 0 or self.psd.dual_value is None:
            return math.inf
        lam /= lam.sum()
        const = float(sum(w * c for w, (c, _) in zip(lam, self.planes)))
        G = sum(w * g for w, (_, g) in zip(lam, self.planes))
        W = self.xc.project_perp(G + self.psd.dual_value)
        return const + self.n * float(eigvalsh(np.asfortranarray(G - W))[-1])


def metric_learning_bound(
    model,
    features: FeatureSet | None = None,
    tol: float = 1e-4,
    max_iter: int = 200,
    solver: str = "CLARABEL",
    interior: float = 1e-6,
    quantum_tol: float = 1e-7,
) -> MetricResult:
    """a_eps^diag(F) of eq. (10) by Kelley's cutting planes (supplement C.2).

    tol: relative gap between Kelley's model maximum and the best objective value.
    interior: cuts are taken at (1 - interior) Sigma + interior I, which stays in K' and keeps
    log Sigma finite (the master problem's solutions are often singular).
    """
    cp = require("cvxpy", "metric_learning_bound")

    start = time.perf_counter()
    features = resolve_features(model, features)
    eps = model.epsilon
    if eps <= 0:
        raise ValueError("metric_learning_bound needs epsilon > 0")
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, 1)
    interior = check_positive("interior", interior)
    if interior >= 1:
        raise ValueError(f"interior must be in (0, 1), got {interior}")
    F = coefficient_matrix(model, features)
    n = features.n
    quantum = quantum_bound(model, features, tol=quantum_tol)

    kelley = _Kelley(cp, features, F, eps, interior)
    S = kelley.S
    upper = math.inf
    history: list[tuple[float, float]] = []
    kelley.add_cut(quantum.sigma)
    kelley.add_cut(np.eye(n))
    converged = False
    status = "max_iter reached"
    it = 0
    while it < max_iter:
        it += 1
        failure = kelley.solve_master(solver)
        if failure is not None:                   # the plain quantum bound stands
            status = failure
            break
        cert = kelley.certified_upper()
        if math.isfinite(cert):
            upper = min(upper, cert)
        history.append((upper, kelley.best_lower))
        if relative_gap(upper, kelley.best_lower, eps) <= tol:
            converged = True
            status = "converged"
            break
        kelley.add_cut(0.5 * (S.value + S.value.T))
    history.append((upper, kelley.best_lower))
    bound = min(upper, quantum.bound)
    return MetricResult(
        bound=bound,
        lower=kelley.best_lower,
        kelley_upper=upper,
        gap=relative_gap(bound, kelley.best_lower, eps),
        nit=it,
        n_evals=it,
        method="kelley",
        converged=converged,
        status=(Status.STATIONARY if converged else Status.MAX_ITER
                if status == "max_iter reached" else Status.FAILED),
        message=status,
        seconds=time.perf_counter() - start,
        sigma=kelley.best_sigma,
        quantum=quantum,
        history=history,
    )
