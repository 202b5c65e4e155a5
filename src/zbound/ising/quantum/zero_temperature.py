"""The zero-temperature relaxation a_0(F) = sup_{Sigma in K'} tr(Sigma F) (Beyler & Bach, Sec. 6):
an SDP relaxation of max_x f(x), solved with CVXPY and re-certified from its dual."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from zbound.ising.features import FeatureSet, coefficient_matrix
from zbound.ising.quantum.checks import resolve_features
from zbound.ising.quantum.duality import (
    eigvalsh,
    feasible_primal,
    marginals_from_means,
    spin_means,
)
from zbound.ising.result import BoundResult
from zbound.solvers.result import Status
from zbound.utils.extras import require


@dataclass(kw_only=True, repr=False)
class ZeroTemperatureResult(BoundResult):
    """Outcome of :func:`zero_temperature_bound`, a :class:`~zbound.ising.result.BoundResult`.

    bound: certified upper bound n * lambda_max(F - W) with W in V-perp from the solver's dual
    (>= a_0(F) >= max f), valid even when the solve is inexact. value: the solver's objective
    tr(Sigma F). message: CVXPY's status string; converged: it is "optimal".
    sigma: the feasible primal matrix (the solver's, repaired into K').
    marginals: (d,) P(x_i = 1) read from ``sigma`` (NaN where x_i is not representable);
    means: the same as E[x_i] = 2 P(x_i = 1) - 1 (unclipped).
    """

    value: float
    sigma: np.ndarray
    means: np.ndarray
    features: FeatureSet


def zero_temperature_bound(model, features: FeatureSet | None = None, solver: str = "CLARABEL"
                           ) -> ZeroTemperatureResult:
    """a_0(F) = sup_{Sigma in K'} tr(Sigma F) (Sec. 6): the SDP relaxation of max_x f(x).

    Solved with CVXPY (``solver``: "CLARABEL" or "SCS"); the returned ``bound`` is re-certified
    from the multiplier Z of the PSD constraint: W = proj_{V-perp}(F + Z) and
    bound = n lambda_max(F - W) >= a_0(F) >= max_x f(x), valid even if the solve is inexact.
    The limit eps -> 0 of a_eps(F) (Sec. 6); equals max f on trees with tree features (App. B.2).
    """
    cp = require("cvxpy", "zero_temperature_bound")

    from zbound.ising.quantum.kprime import k_prime_constraints

    start = time.perf_counter()
    features = resolve_features(model, features)
    if not isinstance(solver, str) or solver.upper() not in ("CLARABEL", "SCS"):
        raise ValueError(f"solver must be 'CLARABEL' or 'SCS', got {solver!r}")
    F = coefficient_matrix(model, features)
    n = features.n
    # a_0 is homogeneous in F: the solver sees F / c with entries of order one (interior
    # point solvers report "unbounded" at 1e100), the certificate is computed with F itself
    big = float(np.abs(F).max()) if F.size else 0.0
    c = big if big > 0.0 and not 1e-6 <= big <= 1e6 else 1.0
    S = cp.Variable((n, n), symmetric=True)
    cons = k_prime_constraints(S, features)
    psd = S >> 0
    prob = cp.Problem(cp.Maximize(cp.trace((F / c) @ S)), [*cons, psd])
    try:
        prob.solve(solver=solver.upper())
    except cp.error.SolverError as err:
        raise RuntimeError(f"zero_temperature_bound: solver {solver} failed: {err}") from err
    if S.value is None:
        raise RuntimeError(f"zero_temperature_bound: solver returned status {prob.status}")
    Sv = 0.5 * (S.value + S.value.T)
    # Dual of the SDP: min n t s.t. t I + W - F = Z >= 0, W in V-perp. From the solver's Z
    # (the multiplier of S >> 0), W = proj_{V-perp}(F + Z) is exactly in V-perp, and any such W
    # certifies a_0(F) <= n lambda_max(F - W) (tr S = n, S >= 0, <S, W> = 0 on K').
    W = features.xor_classes.project_perp(F + c * psd.dual_value)
    bound = float(n * eigvalsh(np.asfortranarray(F - W))[-1])
    Sf, _ = feasible_primal(Sv, features)
    means = spin_means(Sf, features)
    status = str(prob.status)
    return ZeroTemperatureResult(
        bound=bound,
        value=float(c * prob.value),
        message=status,
        method=f"cvxpy-{solver.lower()}",
        converged=status == cp.OPTIMAL,
        status=Status.STATIONARY if status == cp.OPTIMAL else Status.FAILED,
        seconds=time.perf_counter() - start,
        sigma=Sf,
        marginals=marginals_from_means(means),
        means=means,
        features=features,
    )
