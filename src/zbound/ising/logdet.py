"""Log-determinant relaxation of Jordan & Wainwright (2003/2006), in the {-1, 1} convention.

Beyler & Bach, Suppl. A.1. For x in {-1, 1}^d and U uniform on [-1, 1]^d independent of x, x + U
has density p(x)/2^d on disjoint boxes of volume 2^d, so its differential entropy is
H(p) + d log 2, and Cov(x + U) = Cov(x) + I/3. The Gaussian of the same covariance has the largest
differential entropy, hence

    H(p) <= 1/2 log det( Cov_p(x) + I/3 ) + d/2 log(2 pi e) - d log 2
          = 1/2 log det( Sigma_p + 1/3 blkdiag(0, I_d) ) + d/2 log(pi e / 2),

with Sigma_p = E[(1, x)(1, x)^T] the (d+1) x (d+1) moment matrix (det Sigma_p-block = det Cov by
the Schur complement on the leading 1). The 1/3 is the {-1, 1} version of the 1/12 of the {0, 1}
formulation (x = 2y - 1 scales covariances by 4; the 4^d in the determinant is the d log 2).

Relaxing the marginal polytope to {Sigma >= 0, Sigma_00 = 1, diag Sigma = 1} plus the pairwise
constraints 1 + a mu_i + b mu_j + ab mu_ij >= 0 (a, b in {-1, 1}, all pairs i < j) gives, in the
convention of eq. (5) (uniform base measure: -D(p || q) = H(p) - d log 2; temperature eps):

    Phi_eps(f) <= max_Sigma  sum_i h_i mu_i + sum_{i<j} J_ij mu_ij
                  + eps * [ 1/2 log det(Sigma + 1/3 blkdiag(0, I_d)) + d/2 log(pi e / 2) - d log 2 ]

(at eps = 0 the entropy term vanishes and the value is the SDP relaxation of max f).
Solved with CVXPY (``log_det``; Clarabel by default, SCS as fallback).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from zbound.ising.model import IsingModel, check_scale
from zbound.ising.result import BoundResult
from zbound.solvers.result import Status
from zbound.utils.extras import require

_SOLVER_OPTIONS = {
    "CLARABEL": {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9},
    "SCS": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 200000},
}
LOGDET_CONSTANT = 0.5 * np.log(np.pi * np.e / 2.0)   # per variable, in nats


@dataclass(kw_only=True, repr=False)
class LogDetResult(BoundResult):
    """Outcome of :func:`logdet_bound`, a :class:`~zbound.ising.result.BoundResult`.

    ``bound``: the relaxation's value (Phi_eps convention; None if the solver failed), the
    solver's reported optimum (``certified`` False); ``message``: CVXPY's status string
    ("optimal", "optimal_inaccurate" or the failure); ``converged``: it is "optimal";
    ``solver``: the CVXPY solver that produced it; ``marginals``: P(x_i = 1) = (1 + mu_i) / 2,
    clipped to [0, 1] (``means``: mu_i = E[x_i]); ``moments``: the optimal (d+1) x (d+1)
    Sigma = E[(1, x)(1, x)^T] of the relaxation."""

    moments: np.ndarray | None = None
    solver: str = ""
    certified: bool = False

    @property
    def means(self) -> np.ndarray | None:
        """E[x_i] = mu_i, the first row of ``moments`` (unclipped)."""
        return None if self.moments is None else self.moments[0, 1:].copy()


#: parameters above this are divided out before solving (the problem is homogeneous)
_RESCALE_ABOVE = 1e4

def logdet_entropy_bound(moments: np.ndarray) -> float:
    """Upper bound on the Shannon entropy H(p) (nats) from the (d+1)x(d+1) moment matrix."""
    S = np.asarray(moments, dtype=np.float64)
    d = S.shape[0] - 1
    M = S + np.diag(np.r_[0.0, np.full(d, 1.0 / 3.0)])
    sign, logdet = np.linalg.slogdet(M)
    if sign <= 0:
        return -np.inf
    return 0.5 * logdet + d * LOGDET_CONSTANT


def _relaxation(cp, model: IsingModel, c: float, pairwise: bool):
    """The log-det relaxation of ``model`` with its parameters divided by ``c`` (the problem
    is homogeneous); (CVXPY problem, the moment matrix variable)."""
    d, eps = model.d, model.epsilon
    h_s, J_s, eps_s = model.h / c, model.J / c, eps / c
    S = cp.Variable((d + 1, d + 1), symmetric=True)
    mu = S[0, 1:]
    iu, ju = np.triu_indices(d, 1)
    energy = h_s @ mu
    pair = None
    if len(iu):
        # vectorized selection of the upper triangle of S[1:, 1:] (column-major vec)
        pair = cp.vec(S[1:, 1:], order="F")[ju * d + iu]
        energy = energy + J_s[iu, ju] @ pair
    cons = [S >> 0, cp.diag(S) == 1]
    if pairwise and len(iu):
        mi, mj = mu[iu], mu[ju]
        for a in (-1.0, 1.0):
            for b in (-1.0, 1.0):
                cons.append(1 + a * mi + b * mj + a * b * pair >= 0)
    shift = np.diag(np.r_[0.0, np.full(d, 1.0 / 3.0)])
    objective = energy + eps_s * 0.5 * cp.log_det(S + shift) if eps > 0 else energy
    return cp.Problem(cp.Maximize(objective), cons), S


def _solve(cp, problem, S, solvers: list[str], verbose: bool):
    """``problem`` by the first of ``solvers`` that reports an optimal, finite value (else the
    first "optimal inaccurate" one); ((value, S, status) or None, solver used, failures)."""
    status, used = "not solved", solvers[0]
    fallback = None
    failures: list[str] = []
    for name in solvers:
        used = name
        try:
            with warnings.catch_warnings():
                # an inaccurate solve is reported through ``status``
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=name, verbose=verbose, **_SOLVER_OPTIONS.get(name, {}))
            status = problem.status
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - Clarabel panics raise a BaseException
            # (pyo3 PanicException); any solver failure becomes a reported status
            status = f"solver error: {type(exc).__name__}: {str(exc)[:200]}"
            failures.append(f"{name}: {status}")
            continue
        if S.value is None or problem.value is None or not np.isfinite(problem.value):
            failures.append(f"{name}: status {status!r} without a finite value")
            continue
        if status == cp.OPTIMAL:
            return (problem.value, S.value, status), used, failures
        if status == cp.OPTIMAL_INACCURATE and fallback is None:
            fallback = (problem.value, S.value.copy(), status, name)
    if fallback is not None:
        return fallback[:3], fallback[3], failures
    return None, used, failures or [str(status)]


def logdet_bound(model: IsingModel, solver: str | None = None, pairwise: bool = True,
                 verbose: bool = False) -> LogDetResult:
    """Jordan-Wainwright log-det upper bound on Phi_eps(f) (formula in the module docstring).

    ``solver``: a CVXPY solver name; default Clarabel for d <= 24 and SCS above (faster there),
    each falling back to the other when it fails. Tolerances 1e-9 (Clarabel) / 1e-8 (SCS).
    ``pairwise``: add the pairwise marginal constraints for all pairs i < j.
    """
    cp = require("cvxpy", "logdet_bound")

    if not isinstance(model, IsingModel):
        raise TypeError(f"expected an IsingModel, got {type(model).__name__}")
    if solver is not None:
        if not isinstance(solver, str):
            raise TypeError(f"solver must be a CVXPY solver name or None, got {solver!r}")
        if solver.upper() not in cp.installed_solvers():
            raise ValueError(f"solver {solver!r} is not an installed CVXPY solver; installed: "
                             f"{', '.join(cp.installed_solvers())}")
    d, eps = model.d, model.epsilon
    check_scale(model, "logdet_bound", ratio=False)
    # The problem is homogeneous: maximizing c (h/c . mu + J/c . mu_ij + eps/(2c) log det) has
    # the same maximizer, so very large parameters are divided by c = max |theta| (interior-point
    # solvers fail, even panic, with coefficients near 1e300) and the value multiplied back.
    big = float(max(np.abs(model.h).max(), np.abs(model.J).max()))
    c = big if big > _RESCALE_ABOVE else 1.0
    problem, S = _relaxation(cp, model, c, pairwise)
    const = eps * (d * LOGDET_CONSTANT - d * np.log(2.0))
    if solver:
        solvers = [solver.upper()]
    else:
        # Clarabel (interior point) is the more accurate; SCS is the faster for d > 24
        solvers = ["CLARABEL", "SCS"] if d <= 24 else ["SCS", "CLARABEL"]
    start = time.perf_counter()
    solved, used, failures = _solve(cp, problem, S, solvers, verbose)
    seconds = time.perf_counter() - start
    if solved is None:
        return _failed(f"failed: {'; '.join(failures)}", used, seconds)
    value, Sv, status = solved
    value = c * value + const
    if not np.isfinite(value):
        return _failed(f"failed: value {value} not finite (parameter scale {big:.3g})", used,
                       seconds)
    Sv = 0.5 * (Sv + Sv.T)
    return LogDetResult(
        bound=float(value),
        marginals=np.clip((1 + Sv[0, 1:]) / 2, 0.0, 1.0),
        moments=Sv,
        message=str(status),
        converged=str(status) == "optimal",
        status=Status.STATIONARY if str(status) == "optimal" else Status.FAILED,
        method=f"cvxpy-{used.lower()}",
        solver=used,
        seconds=seconds,
    )


def _failed(message: str, solver: str, seconds: float) -> LogDetResult:
    return LogDetResult(bound=None, message=message, method=f"cvxpy-{solver.lower()}",
                        solver=solver, seconds=seconds, status=Status.FAILED)
