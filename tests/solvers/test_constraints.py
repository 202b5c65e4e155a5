"""Alg. 2 with convex constraints (step 3 as a QP): box and A theta <= b, checked against CVXPY,
SciPy L-BFGS-B (box) and the KKT conditions."""

from __future__ import annotations

import numpy as np
import pytest
from _solver_problems import logistic_problem

from zbound.solvers import LinearConstraints, minimize

MM_METHODS = ("bound", "squarem", "newton-bound")


def _cvxpy_solution(model, cons: LinearConstraints):
    cp = pytest.importorskip("cvxpy")
    n, d = model.n_classes, model.n_features
    X, y = model.X, model.y
    W = cp.Variable((n, d))
    theta = cp.reshape(W, (n * d,), order="C")
    S = X @ W.T
    Y = np.zeros((X.shape[0], n))
    Y[np.arange(X.shape[0]), y] = 1.0
    obj = cp.sum(cp.log_sum_exp(S, axis=1)) - cp.sum(cp.multiply(Y, S)) \
        + 0.5 * model.reg * cp.sum_squares(W)
    constraints = []
    lo, hi = np.isfinite(cons.lb), np.isfinite(cons.ub)
    if lo.any():
        constraints.append(theta[np.flatnonzero(lo)] >= cons.lb[lo])
    if hi.any():
        constraints.append(theta[np.flatnonzero(hi)] <= cons.ub[hi])
    if cons.has_general:
        constraints.append(cons.A @ theta <= cons.b)
    prob = cp.Problem(cp.Minimize(obj), constraints)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    return np.asarray(theta.value).ravel(), float(prob.value)


def _box_problem():
    model = logistic_problem(20, t=80, d=4, n=3, reg=0.05, separation=2.5)
    p = model.n_params
    lb = np.full(p, -0.5)
    ub = np.full(p, 0.6)
    lb[::5] = -np.inf  # some coordinates unbounded below
    return model, LinearConstraints(lb=lb, ub=ub)


def _general_problem():
    model = logistic_problem(21, t=80, d=4, n=3, reg=0.05, separation=2.5)
    p = model.n_params
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, p))
    b = np.abs(rng.standard_normal(4)) * 0.5
    return model, LinearConstraints(lb=-2.0, ub=2.0, A=A, b=b, n_params=p)


@pytest.mark.parametrize("method", MM_METHODS)
@pytest.mark.parametrize("make", [_box_problem, _general_problem])
def test_constrained_solution_matches_cvxpy(method, make):
    model, cons = make()
    x0 = np.zeros(model.n_params)
    assert cons.is_feasible(x0)
    res = minimize(model, x0, method=method, constraints=cons, tol=1e-9, max_iter=3000)
    assert res.converged, res.message
    assert cons.violation(res.x) <= 1e-9
    f = res.trace.objective
    assert np.all(np.diff(f) <= 1e-12 * np.abs(f[:-1]))
    x_ref, f_ref = _cvxpy_solution(model, cons)
    np.testing.assert_allclose(res.fun, f_ref, rtol=1e-6)
    # the unconstrained optimum violates the constraints, so they matter
    free = minimize(model, x0, method="newton", tol=1e-10)
    assert not cons.is_feasible(free.x)
    assert res.fun > free.fun + 1e-3
    assert np.max(np.abs(res.x - x_ref)) <= 2e-3


@pytest.mark.parametrize("method", MM_METHODS + ("lbfgs",))
def test_box_solution_satisfies_kkt(method):
    model, cons = _box_problem()
    res = minimize(model, np.zeros(model.n_params), method=method, constraints=cons, tol=1e-10,
                   max_iter=3000)
    assert res.converged, res.message
    _, g = model.value_and_grad(res.x)
    at_lb = np.isclose(res.x, cons.lb, atol=1e-7)
    at_ub = np.isclose(res.x, cons.ub, atol=1e-7)
    free = ~(at_lb | at_ub)
    assert at_lb.any() and at_ub.any()
    assert np.all(g[at_lb] >= -1e-5)   # pushing further down would not help
    assert np.all(g[at_ub] <= 1e-5)
    assert np.max(np.abs(g[free])) <= 1e-5


def test_general_constraints_satisfy_kkt_with_nonnegative_multipliers():
    model, cons = _general_problem()
    res = minimize(model, np.zeros(model.n_params), constraints=cons, tol=1e-11, max_iter=500)
    _, g = model.value_and_grad(res.x)
    p = model.n_params
    rows = [cons.A, np.eye(p), -np.eye(p)]
    slack = np.concatenate([cons.b - cons.A @ res.x, cons.ub - res.x, res.x - cons.lb])
    G = np.vstack(rows)
    active = slack <= 1e-7
    assert active.any()
    # g + G_active^T lam = 0 with lam >= 0
    from scipy.optimize import nnls

    lam, resid = nnls(G[active].T, -g)
    assert resid <= 1e-5 * max(1.0, np.linalg.norm(g))


def test_squarem_extrapolation_is_projected_onto_the_constraints():
    model, cons = _general_problem()
    res = minimize(model, np.zeros(model.n_params), method="squarem", constraints=cons,
                   tol=1e-9, max_iter=2000)
    assert cons.violation(res.x) <= 1e-9
    assert res.info["cycles"] > 0


def test_project_returns_the_nearest_feasible_point():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((3, 5))
    b = np.ones(3)
    cons = LinearConstraints(lb=-1.0, ub=1.0, A=A, b=b, n_params=5)
    z = 3.0 * rng.standard_normal(5)
    x = cons.project(z)
    assert cons.is_feasible(x)
    # no feasible point is closer: compare with a few random feasible points and with SLSQP
    from scipy.optimize import minimize as sp_min

    ref = sp_min(lambda v: 0.5 * np.sum((v - z) ** 2), np.zeros(5), jac=lambda v: v - z,
                 method="SLSQP", bounds=[(-1, 1)] * 5,
                 constraints=[{"type": "ineq", "fun": lambda v: b - A @ v, "jac": lambda v: -A}],
                 options={"ftol": 1e-12})
    np.testing.assert_allclose(x, ref.x, atol=1e-6)
    box = LinearConstraints(lb=[0, 0], ub=[1, 2])
    np.testing.assert_array_equal(box.project(np.array([-3.0, 5.0])), [0.0, 2.0])


@pytest.mark.parametrize("kwargs,match", [
    ({"lb": [0.0, 2.0], "ub": [1.0, 1.0]}, "lb > ub"),
    ({"A": np.ones((2, 3))}, "without b"),
    ({"b": np.ones(2)}, "without A"),
    ({"A": np.ones((2, 3)), "b": np.ones(3)}, "rows"),
    ({"lb": [0.0, np.nan]}, "NaN"),
    ({"lb": [0.0, 1.0], "ub": [1.0, 2.0, 3.0]}, "length"),
    ({"A": np.array([[1.0, np.inf]]), "b": [1.0]}, "non-finite"),
    ({}, "at least one"),
    ({"lb": 0.0}, "n_params"),
    ({"ub": [-np.inf, 1.0]}, "empty"),
])
def test_linear_constraints_reject_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinearConstraints(**kwargs)


@pytest.mark.parametrize("seed", range(6))
def test_box_qp_is_exact_including_flat_directions(seed):
    cp = pytest.importorskip("cvxpy")
    from zbound.constraints import box_qp

    rng = np.random.default_rng(seed)
    p = 8
    A = rng.standard_normal((p, p - 2))
    P = A @ A.T                       # rank p - 2: flat directions
    g = 3.0 * rng.standard_normal(p)
    lo = -rng.random(p) * 2.0
    hi = rng.random(p) * 2.0
    d = box_qp(P, g, lo, hi)
    assert np.all(d >= lo) and np.all(d <= hi)
    x = cp.Variable(p)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(P)) + g @ x),
                      [x >= lo, x <= hi])
    prob.solve(solver=cp.CLARABEL)
    q = 0.5 * d @ P @ d + g @ d
    assert q <= prob.value + 1e-7 * max(1.0, abs(prob.value))
    # KKT: the gradient pushes outwards at active bounds and vanishes on free coordinates
    grad = P @ d + g
    free = (d > lo + 1e-12) & (d < hi - 1e-12)
    assert np.max(np.abs(grad[free]), initial=0.0) <= 1e-9
    assert np.all(grad[np.isclose(d, lo)] >= -1e-9)
    assert np.all(grad[np.isclose(d, hi)] <= 1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_box_qp_matches_clarabel_with_many_active_bounds(seed):
    """Larger QPs with most coordinates at a bound (a nonnegative fit's step), one-sided and
    infinite bounds, ill-conditioned and singular curvatures: the primal-dual active-set
    start and the certifying active-set method reach Clarabel's optimum and satisfy KKT."""
    cp = pytest.importorskip("cvxpy")
    from zbound.constraints import box_qp

    rng = np.random.default_rng(100 + seed)
    p = int(rng.integers(20, 120))
    full = bool(seed % 2)                   # odd seeds full rank, even singular
    r = p if full else p // 3
    A = rng.standard_normal((p, r)) * np.logspace(0, 1.5 * (seed % 3) if full else 1.0, r)
    P = A @ A.T + (0.1 * np.eye(p) if full else 0.0)
    g = rng.standard_normal(p) * 10.0 ** rng.integers(-1, 3)
    lo, hi = -rng.random(p), rng.random(p)
    if full:                                # one-sided and free coordinates: still bounded
        lo[rng.random(p) < 0.3] = -np.inf
        hi[rng.random(p) < 0.5] = np.inf
    d = box_qp(P, g, lo, hi)
    assert np.all(d >= lo) and np.all(d <= hi)
    x = cp.Variable(p)
    cons = [x[i] >= lo[i] for i in np.flatnonzero(np.isfinite(lo))] + \
        [x[i] <= hi[i] for i in np.flatnonzero(np.isfinite(hi))]
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(P)) + g @ x), cons)
    prob.solve(solver=cp.CLARABEL)
    q = 0.5 * d @ P @ d + g @ d
    assert q <= prob.value + 1e-7 * max(1.0, abs(prob.value))
    grad = P @ d + g
    scale = 1e-8 * max(1.0, float(np.max(np.abs(g))), float(np.max(np.abs(P))))
    free = (d > lo) & (d < hi)
    assert np.max(np.abs(grad[free]), initial=0.0) <= scale
    assert np.all(grad[d <= lo] >= -scale) and np.all(grad[d >= hi] <= scale)


def test_box_qp_certifies_where_the_active_set_start_stops_early(monkeypatch):
    """With the primal-dual phase cut to one iteration (its sets not settled), the
    one-at-a-time method still ends at the exact optimum from that point."""
    import zbound.constraints as cn

    rng = np.random.default_rng(5)
    p = 40
    A = rng.standard_normal((p, p))
    P = A @ A.T
    g = 5.0 * rng.standard_normal(p)
    lo, hi = -0.1 * np.ones(p), 0.1 * np.ones(p)
    exact = cn.box_qp(P, g, lo, hi)
    monkeypatch.setattr(cn, "BOX_QP_PDAS_ITERS", 1)
    d = cn.box_qp(P, g, lo, hi)
    q = lambda v: 0.5 * v @ P @ v + g @ v          # noqa: E731
    assert q(d) == pytest.approx(q(exact), rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(d, exact, atol=1e-8)


def test_nonnegative_multiclass_fit_matches_a_reference_optimum():
    """A nonnegative-coefficient fit on digits (650 parameters, most at their bound): the
    library's optimum agrees with SciPy's L-BFGS-B run to a tight tolerance, and the run is
    monotone."""
    from scipy.optimize import minimize as sp_minimize
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    from zbound import BoundLogisticRegression
    from zbound.models.multinomial import logistic_objective

    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:600])
    y = y[:600]
    est = BoundLogisticRegression(C=1.0, coef_bounds=(0.0, None), tol=1e-8).fit(X, y)
    assert est.solver_result_.converged and np.all(est.coef_ >= 0.0)
    assert np.all(np.diff(est.solver_result_.trace.objective) <= 1e-9)
    model = logistic_objective(X, y, 10, np.tile(np.r_[np.ones(64), 0.0], 10), None, 0.0,
                               fit_intercept=True)
    bounds = [(0.0, None) if j % 65 < 64 else (None, None) for j in range(650)]
    ref = sp_minimize(lambda th: model.value_and_grad(th), np.zeros(650), jac=True,
                      method="L-BFGS-B", bounds=bounds,
                      options=dict(maxiter=20000, gtol=1e-10, ftol=1e-15))
    assert est.objective_ <= ref.fun * (1 + 1e-7)
    assert est.objective_ == pytest.approx(ref.fun, rel=1e-6)
