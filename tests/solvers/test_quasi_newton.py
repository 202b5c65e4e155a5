"""L-BFGS directions safeguarded by the bound ("lbfgs-bound", not in the registry): monotone
every iteration, the bound's steps used where the unit step fails, same optimum."""

from __future__ import annotations

import numpy as np
import pytest
from _solver_problems import logistic_problem, reference_optimum

from zbound.solvers import minimize
from zbound.solvers.quasi_newton import LBFGSBound


def _assert_monotone(res):
    f = res.trace.objective
    assert np.all(np.diff(f) <= 1e-12 * np.maximum(1.0, np.abs(f[:-1]))), np.diff(f).max()


@pytest.mark.parametrize("seed,reg,separation", [(0, 1.0, 1.0), (1, 1e-3, 3.0), (3, 10.0, 0.5)])
@pytest.mark.parametrize("opts", [{}, {"first_step": "hessian"},
                                  {"first_step": "bound", "backtracks": 0, "memory": 3}])
def test_monotone_and_reaches_the_optimum(seed, reg, separation, opts):
    model = logistic_problem(seed, reg=reg, separation=separation)
    x0 = np.random.default_rng(seed).standard_normal(model.n_params)   # a poor start
    x_ref, f_ref = reference_optimum(model, x0)
    res = minimize(model, x0, method=LBFGSBound, tol=1e-9, max_iter=5000, **opts)
    _assert_monotone(res)
    assert res.converged, res.message
    np.testing.assert_allclose(res.fun, f_ref, rtol=1e-6)
    if opts.get("first_step") == "bound":   # no backtracking: failed unit steps -> bound
        assert res.info["bound_steps"] >= 1 and res.info["interpolated_steps"] == 0


def test_bad_options():
    with pytest.raises(ValueError, match="memory"):
        LBFGSBound(memory=0)
    with pytest.raises(ValueError, match="first_step"):
        LBFGSBound(first_step="newton")
    with pytest.raises(ValueError, match="backtracks"):
        LBFGSBound(backtracks=-1)
