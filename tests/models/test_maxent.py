"""Minimum relative entropy through its dual (paper 003, supplement Sec. 3), against CVXPY."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.models.maxent import MaxEnt
from zbound.solvers import solve_maxent


def _feasible_problem(seed: int, n: int = 30, d: int = 3, d_ineq: int = 2):
    """f centered under a random strictly positive q (so the equalities hold strictly inside
    the simplex); g feasible under q, the first inequality slack, the others random."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(n))
    f = rng.standard_normal((n, d))
    f -= q @ f
    g = rng.standard_normal((n, d_ineq))
    g -= q @ g                      # q satisfies g-moments = 0 (feasible)
    if d_ineq:
        g[:, 0] += 5.0              # first inequality: slack (inactive)
    log_prior = rng.standard_normal(n)
    return f, g, log_prior


def _cvxpy_primal(f, g, log_prior):
    cp = pytest.importorskip("cvxpy")
    keep = np.isfinite(log_prior)
    h = np.exp(log_prior[keep])
    p = cp.Variable(int(keep.sum()))
    cons = [cp.sum(p) == 1, p >= 0, f[keep].T @ p == 0]
    if g is not None and g.shape[1]:
        cons.append(g[keep].T @ p >= 0)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.rel_entr(p, h))), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal"
    out = np.zeros(f.shape[0])
    out[keep] = np.maximum(p.value, 0.0)
    return out, float(prob.value)


@pytest.mark.parametrize("method", ["newton-bound", "bound", "squarem"])
@pytest.mark.parametrize("seed", [0, 1])
def test_maxent_matches_the_primal_solved_by_cvxpy(method, seed):
    f, g, log_prior = _feasible_problem(seed)
    sol = solve_maxent(MaxEnt(f, g, log_prior), method=method, max_iter=5000)
    assert sol.result.converged, sol.result.message
    # constraints at the solution
    assert sol.max_violation <= 1e-7
    np.testing.assert_allclose(f.T @ sol.p, 0.0, atol=1e-7)
    assert np.all(g.T @ sol.p >= -1e-7)
    assert np.all(sol.vartheta >= 0.0)
    assert sol.complementary_slackness <= 1e-6
    assert sol.p.sum() == pytest.approx(1.0, abs=1e-12)
    p_ref, re_ref = _cvxpy_primal(f, g, log_prior)
    np.testing.assert_allclose(sol.p, p_ref, atol=2e-6)
    assert sol.relative_entropy == pytest.approx(re_ref, abs=1e-6)
    # strong duality: RE(p || h) = -log Z at the optimum
    assert sol.relative_entropy == pytest.approx(-sol.log_z, abs=1e-8)


def test_inequalities_matter_one_binds_one_is_slack():
    rng = np.random.default_rng(2)
    n = 30
    q = rng.dirichlet(np.ones(n))
    f = rng.standard_normal((n, 3))
    f -= q @ f
    log_prior = rng.standard_normal(n)
    without = solve_maxent(MaxEnt(f, None, log_prior))
    # an inequality that the equality-only solution violates but q satisfies strictly
    v = rng.standard_normal(n)
    if q @ v < without.p @ v:
        v = -v
    g = np.column_stack([v + 5.0, v - 0.5 * (q @ v + without.p @ v)])
    g[:, 0] -= q @ g[:, 0] - 5.0
    assert (without.p @ g)[1] < -1e-3 and (q @ g)[1] > 1e-3
    with_ineq = solve_maxent(MaxEnt(f, g, log_prior))
    assert with_ineq.vartheta[1] > 1e-6
    assert abs(with_ineq.inequality_value[1]) <= 1e-8
    assert with_ineq.vartheta[0] <= 1e-9 and with_ineq.inequality_value[0] > 1.0
    assert with_ineq.relative_entropy > without.relative_entropy


def test_uniform_prior_and_equalities_only_is_maximum_entropy():
    f, _, _ = _feasible_problem(3, n=12, d=2, d_ineq=0)
    sol = solve_maxent(MaxEnt(f))
    p_ref, _ = _cvxpy_primal(f, None, np.zeros(12))
    np.testing.assert_allclose(sol.p, p_ref, atol=2e-6)
    assert sol.vartheta.shape == (0,)
    # maximum entropy: RE(p || 1) = -H(p)
    assert sol.relative_entropy == pytest.approx(np.sum(sol.p * np.log(sol.p)), abs=1e-10)


def test_zero_prior_weight_gives_zero_probability():
    f, g, log_prior = _feasible_problem(4)
    log_prior[[0, 5]] = -np.inf
    sol = solve_maxent(MaxEnt(f, g, log_prior))
    assert sol.p[0] == 0.0 and sol.p[5] == 0.0
    p_ref, re_ref = _cvxpy_primal(f, g, log_prior)
    np.testing.assert_allclose(sol.p, p_ref, atol=2e-6)


def test_majorizer_upper_bounds_the_dual_and_matches_value_and_gradient():
    f, g, log_prior = _feasible_problem(5)
    model = MaxEnt(f, g, log_prior)
    rng = np.random.default_rng(0)
    beta = rng.standard_normal(model.n_params)
    maj = model.majorizer(beta)
    val, grad = model.value_and_grad(beta)
    assert maj.value == pytest.approx(val, rel=1e-12)
    np.testing.assert_allclose(maj.grad, grad, rtol=1e-10, atol=1e-12)
    for _ in range(50):
        other = beta + rng.standard_normal(model.n_params) * rng.uniform(0.01, 3.0)
        assert model.value(other) <= maj.evaluate(other) + 1e-10
    # the exact Hessian is dominated by the bound's curvature
    H = model.hessian(beta).to_dense()
    C = maj.curvature.to_dense()
    assert np.linalg.eigvalsh(C - H).min() >= -1e-10


def test_infeasible_moments_raise():
    rng = np.random.default_rng(6)
    f = np.abs(rng.standard_normal((10, 1))) + 0.1   # E_p f > 0 for every p: "= 0" impossible
    with pytest.raises(RuntimeError, match="infeasible"):
        solve_maxent(MaxEnt(f), max_iter=200)


@pytest.mark.parametrize("kwargs,match", [
    ({"f": np.ones(5)}, "f must be"),
    ({"f": np.ones((5, 2)), "g": np.ones((4, 1))}, "g must have shape"),
    ({"f": np.full((5, 2), np.nan)}, "finite"),
    ({"f": np.ones((5, 2)), "log_prior": np.ones(4)}, "log_prior must have shape"),
    ({"f": np.ones((5, 2)), "log_prior": np.full(5, np.inf)}, "NaN or \\+inf"),
    ({"f": np.ones((5, 2)), "log_prior": np.full(5, -np.inf)}, "no mass"),
    ({"f": np.ones((5, 0))}, "no constraints"),
])
def test_bad_input_is_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MaxEnt(**kwargs)
