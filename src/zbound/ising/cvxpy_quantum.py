"""The quantum relaxation a_eps(F) written in CVXPY: the generic conic solver the library's
Chambolle-Pock solver is timed against (the speed peer of ``zbound bench ising``).

    maximize  tr(F Sigma) + (eps / n) von_neumann_entr(Sigma)
    s.t.      Sigma >> 0, Sigma in V (entries equal on each XOR class), diag(Sigma) = 1

which is a_eps(F) of Beyler & Bach, Sec. 4.1 (K' = {Sigma >= 0, tr Sigma = n, Sigma in V}; the
diagonal is one XOR class, so "equal diagonal and trace n" is "diagonal = 1").
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from zbound.ising.features import FeatureSet, coefficient_matrix
from zbound.ising.quantum.checks import resolve_features
from zbound.ising.quantum.kprime import k_prime_constraints
from zbound.ising.result import BoundResult
from zbound.solvers.result import Status
from zbound.utils.extras import require

__all__ = ["CvxpyQuantumResult", "cvxpy_quantum_bound"]

_SOLVERS = ("CLARABEL", "SCS")


@dataclass(kw_only=True, repr=False)
class CvxpyQuantumResult(BoundResult):
    """Outcome of :func:`cvxpy_quantum_bound`, a :class:`~zbound.ising.result.BoundResult`.

    bound: the solver's optimal value (``certified`` False: a solver's optimum, not a dual
    certificate), or None when it failed, was inaccurate or not finite. message: CVXPY's status
    string (or "solver_error: ..."); converged: ``bound`` is not None (status "optimal" with a
    finite value); seconds: wall time of building and solving; sigma: the solver's primal matrix
    (None on failure). No marginals are read from it.
    """

    sigma: np.ndarray | None = None
    certified: bool = False


def cvxpy_quantum_bound(
    model,
    features: FeatureSet | None = None,
    solver: str = "CLARABEL",
    time_limit: float | None = None,
) -> CvxpyQuantumResult:
    """a_eps(F) (Beyler & Bach, Sec. 4.1) through CVXPY's ``von_neumann_entr`` atom.

    solver: "CLARABEL" or "SCS". time_limit: seconds handed to the solver (Clarabel's
    ``time_limit``, SCS's ``time_limit_secs``); None for no limit.
    """
    cp = require("cvxpy", "cvxpy_quantum_bound")

    start = time.perf_counter()
    features = resolve_features(model, features)
    if not isinstance(solver, str) or solver.upper() not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    solver = solver.upper()
    if time_limit is not None:
        if isinstance(time_limit, bool) or not isinstance(time_limit, int | float):
            raise TypeError(f"time_limit must be a number or None, got {type(time_limit)}")
        if not (time_limit > 0):
            raise ValueError(f"time_limit must be > 0, got {time_limit}")
    eps = model.epsilon
    if eps <= 0:
        raise ValueError("cvxpy_quantum_bound needs epsilon > 0")
    F = coefficient_matrix(model, features)
    n = features.n
    S = cp.Variable((n, n), symmetric=True)
    cons = [*k_prime_constraints(S, features), S >> 0]
    obj = cp.Maximize(cp.trace(F @ S) + (eps / n) * cp.von_neumann_entr(S))
    prob = cp.Problem(obj, cons)
    opts = {}
    if time_limit is not None:
        opts = {"time_limit": float(time_limit)} if solver == "CLARABEL" else {
            "time_limit_secs": float(time_limit)
        }
    try:
        with warnings.catch_warnings():
            # an inaccurate solve is reported through ``status`` and ``bound = None``
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            prob.solve(solver=solver, **opts)
        status = str(prob.status)
    except (cp.error.SolverError, ValueError, ArithmeticError) as err:
        return CvxpyQuantumResult(bound=None, message=f"solver_error: {err}",
                                  method=f"cvxpy-{solver.lower()}",
                                  seconds=time.perf_counter() - start)
    value = prob.value
    ok = status == cp.OPTIMAL and value is not None and math.isfinite(float(value))
    if status == cp.OPTIMAL and not ok:
        status = f"{status} (value {value})"
    sigma = None if S.value is None else np.asarray(S.value)
    return CvxpyQuantumResult(
        bound=float(value) if ok else None,
        converged=ok,
        status=Status.STATIONARY if ok else Status.FAILED,
        message=status,
        method=f"cvxpy-{solver.lower()}",
        seconds=time.perf_counter() - start,
        sigma=sigma,
    )
