"""Box constraints on coef_ / intercept_: respected, active where expected, and equal to the
constrained optimum computed independently with CVXPY (Clarabel)."""

from __future__ import annotations

import numpy as np
import pytest

from zbound import BoundLogisticRegression


def cvxpy_reference(X, y, C, fit_intercept=True, coef_bounds=(None, None),
                    intercept_bounds=(None, None)):
    """argmin sum_j log-loss_j + 1/(2C)||W||^2 s.t. the boxes, as an exponential-cone program.

    Returns (coef, intercept) in BoundLogisticRegression's shapes (binary: one row).
    """
    cp = pytest.importorskip("cvxpy", reason="the CVXPY reference needs zbound[cvxpy]")
    classes, yi = np.unique(y, return_inverse=True)
    t, d = X.shape
    binary = classes.size == 2
    k = 1 if binary else classes.size
    W = cp.Variable((k, d))
    b = cp.Variable(k) if fit_intercept else np.zeros(k)
    S = X @ W.T + (np.ones((t, 1)) @ cp.reshape(b, (1, k), order="C") if fit_intercept else 0)
    if binary:
        s = S[:, 0]
        loss = cp.sum(cp.logistic(s)) - yi.astype(float) @ s
    else:
        Y = np.eye(k)[yi]
        loss = cp.sum(cp.log_sum_exp(S, axis=1)) - cp.sum(cp.multiply(Y, S))
    cons = []
    for var, (lo, hi) in ((W, coef_bounds), (b, intercept_bounds)):
        if lo is not None:
            cons.append(var >= np.broadcast_to(lo, var.shape))
        if hi is not None:
            cons.append(var <= np.broadcast_to(hi, var.shape))
    prob = cp.Problem(cp.Minimize(loss + 0.5 / C * cp.sum_squares(W)), cons)
    # 1e-9 is ample for the 1e-5 comparisons; at 1e-10 Clarabel reports "optimal_inaccurate"
    # for some caps depending on rounding in their last digits.
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert prob.status == cp.OPTIMAL, prob.status
    intercept = np.asarray(b.value) if fit_intercept else np.zeros(k)
    return np.asarray(W.value), intercept


def kkt_residual(est, X, y, C):
    """Largest violation of the box KKT conditions of the fitted coefficients (a projected
    gradient), from the objective's gradient computed here."""
    proba = est.predict_proba(X)
    Y = (y[:, None] == est.classes_[None, :]).astype(float)
    R = proba - Y
    if est.coef_.shape[0] == 1:
        R = R[:, 1:]
    grad = R.T @ X + est.coef_ / C
    lo, hi = est.coef_bounds
    lo = np.broadcast_to(-np.inf if lo is None else lo, grad.shape)
    hi = np.broadcast_to(np.inf if hi is None else hi, grad.shape)
    # projected gradient: coordinates at a bound may have a gradient pointing outward
    proj = est.coef_ - np.clip(est.coef_ - grad, lo, hi)
    return float(np.max(np.abs(proj)))


@pytest.fixture(scope="module")
def iris(dataset):
    return dataset("iris")


@pytest.fixture(scope="module")
def cancer(dataset):
    X, y = dataset("breast_cancer")
    return X[::3], y[::3]


def test_multinomial_box_matches_cvxpy(iris):
    X, y = iris
    free = BoundLogisticRegression(C=1.0, tol=1e-10).fit(X, y)
    est = BoundLogisticRegression(C=1.0, tol=1e-10, coef_bounds=(-0.8, 0.8)).fit(X, y)
    assert np.abs(free.coef_).max() > 1.5                  # the box cuts the free solution
    assert est.solver_result_.converged
    assert est.coef_.min() >= -0.8 and est.coef_.max() <= 0.8
    active = np.isclose(np.abs(est.coef_), 0.8, atol=1e-9)
    assert active.sum() >= 2
    coef, intercept = cvxpy_reference(X, y, 1.0, coef_bounds=(-0.8, 0.8))
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)
    # intercepts are defined up to a common shift
    np.testing.assert_allclose(est.intercept_, intercept - intercept.mean(), atol=1e-5)
    assert np.abs(est.coef_ - free.coef_).max() > 0.5
    assert kkt_residual(est, X, y, 1.0) < 1e-6


def test_binary_box_matches_cvxpy(cancer):
    X, y = cancer
    free = BoundLogisticRegression(C=1.0, tol=1e-10).fit(X, y)
    assert free.coef_.min() < -1.0 and free.coef_.max() > 0.5
    est = BoundLogisticRegression(C=1.0, tol=1e-10, coef_bounds=(-0.5, 0.2)).fit(X, y)
    assert est.coef_.min() >= -0.5 and est.coef_.max() <= 0.2
    assert np.isclose(est.coef_, -0.5, atol=1e-9).sum() >= 5
    assert np.isclose(est.coef_, 0.2, atol=1e-9).sum() >= 5
    coef, intercept = cvxpy_reference(X, y, 1.0, coef_bounds=(-0.5, 0.2))
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)
    np.testing.assert_allclose(est.intercept_, intercept, atol=1e-5)
    assert kkt_residual(est, X, y, 1.0) < 1e-6


def test_binary_nonnegative_matches_cvxpy(cancer):
    X, y = cancer
    est = BoundLogisticRegression(C=1.0, tol=1e-10, coef_bounds=(0.0, None)).fit(X, y)
    assert est.coef_.min() >= 0.0
    coef, intercept = cvxpy_reference(X, y, 1.0, coef_bounds=(0.0, None))
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)
    np.testing.assert_allclose(est.intercept_, intercept, atol=1e-5)
    assert kkt_residual(est, X, y, 1.0) < 1e-6


def test_intercept_bounds_match_cvxpy(cancer):
    X, y = cancer
    free = BoundLogisticRegression(C=1.0, tol=1e-10).fit(X, y)
    cap = round(float(free.intercept_[0]) - 1.0, 3)   # a fixed number, not our last digits
    est = BoundLogisticRegression(C=1.0, tol=1e-10, intercept_bounds=(None, cap)).fit(X, y)
    np.testing.assert_allclose(est.intercept_, [cap], atol=1e-12)
    coef, intercept = cvxpy_reference(X, y, 1.0, intercept_bounds=(None, cap))
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)
    np.testing.assert_allclose(est.intercept_, intercept, atol=1e-5)


def test_multinomial_intercept_bounds_no_intercept_shift(iris):
    # with boxes on the intercepts the common shift is no longer free: no centering
    X, y = iris
    est = BoundLogisticRegression(tol=1e-10, intercept_bounds=(0.5, None)).fit(X, y)
    assert est.intercept_.min() >= 0.5 - 1e-12
    coef, intercept = cvxpy_reference(X, y, 1.0, intercept_bounds=(0.5, None))
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)
    np.testing.assert_allclose(est.predict_proba(X),
                               BoundLogisticRegression().fit(X, y).predict_proba(X), atol=1e-4)


def test_array_bounds_broadcast_per_feature(iris):
    X, y = iris
    lower = np.array([-np.inf, 0.0, -0.3, -np.inf])           # one per feature, every class
    upper = np.array([np.inf, np.inf, 0.3, 0.5])
    est = BoundLogisticRegression(tol=1e-10, coef_bounds=(lower, upper)).fit(X, y)
    assert (est.coef_ >= lower - 1e-12).all() and (est.coef_ <= upper + 1e-12).all()
    coef, _ = cvxpy_reference(X, y, 1.0, coef_bounds=(lower, upper))
    np.testing.assert_allclose(est.coef_, coef, atol=1e-5)


def test_inactive_bounds_change_nothing(iris):
    X, y = iris
    free = BoundLogisticRegression(tol=1e-10).fit(X, y)
    loose = BoundLogisticRegression(tol=1e-10, coef_bounds=(-100.0, 100.0)).fit(X, y)
    np.testing.assert_allclose(loose.coef_, free.coef_, atol=1e-6)


@pytest.mark.parametrize("solver", ["bound", "squarem", "lbfgs"])
def test_constrained_solvers_agree(cancer, solver):
    X, y = cancer
    ref = BoundLogisticRegression(tol=1e-10, coef_bounds=(0.0, None)).fit(X, y)
    est = BoundLogisticRegression(tol=1e-9, coef_bounds=(0.0, None), solver=solver,
                                  max_iter=20_000).fit(X, y)
    assert est.coef_.min() >= 0.0
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-4)


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bounds", "match"), [
    ((np.nan, 1.0), "lower bound contains NaN"),
    ((0.0, [1.0, np.nan, 1.0, 1.0]), "upper bound contains NaN"),
    ((np.inf, None), "lower bound contains inf: the feasible set is empty"),
    ((None, -np.inf), "upper bound contains -inf: the feasible set is empty"),
    ((1.0, 0.0), r"lower > upper at index \(0, 0\)"),
    (([0.0, 0.0, 2.0, 0.0], 1.0), r"lower > upper at index \(0, 2\)"),
    ((np.zeros(3), None), "does not broadcast"),
    ((0.0,), "pair"),
    (0.0, "pair"),
    (("a", 1.0), "numeric"),
])
def test_bad_coef_bounds(iris, bounds, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        BoundLogisticRegression(coef_bounds=bounds).fit(X, y)


def test_bad_intercept_bounds(iris):
    X, y = iris
    with pytest.raises(ValueError, match="intercept_bounds: lower > upper"):
        BoundLogisticRegression(intercept_bounds=(1.0, -1.0)).fit(X, y)
    with pytest.raises(ValueError, match="intercept_bounds needs fit_intercept=True"):
        BoundLogisticRegression(fit_intercept=False, intercept_bounds=(0.0, 1.0)).fit(X, y)


def test_solver_without_constraint_support(iris):
    X, y = iris
    with pytest.raises(ValueError, match="solver 'bfgs' does not support coef_bounds"):
        BoundLogisticRegression(solver="bfgs", coef_bounds=(0.0, None)).fit(X, y)


def test_bounds_on_many_parameters_need_lbfgs(monkeypatch):
    import zbound.solvers.policy as policy

    monkeypatch.setattr(policy, "MAX_QP_PARAMS", 10)
    X = np.random.default_rng(0).normal(size=(40, 6))
    y = np.arange(40) % 3
    with pytest.raises(ValueError, match="dense QP in all 21 parameters.*solver='lbfgs'"):
        BoundLogisticRegression(coef_bounds=(0.0, None), solver="newton-bound").fit(X, y)
    est = BoundLogisticRegression(coef_bounds=(0.0, None), solver="lbfgs").fit(X, y)
    assert est.coef_.min() >= 0.0
    auto = BoundLogisticRegression(coef_bounds=(0.0, None)).fit(X * 100.0, y)   # raw units
    assert auto.solver_result_.method == "lbfgs" and auto.coef_.min() >= 0.0


def test_auto_under_bounds_runs_lbfgsb_and_finishes_with_newton_where_it_crawls():
    """Box bounds on standardized digits (650 parameters): "auto" runs SciPy's L-BFGS-B to
    newton-bound's optimum; cut to a few iterations, Newton steps with the exact box QP
    finish from where it stopped, within max_iter, monotone, one result for both. Raw
    columns keep newton-bound."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X, y = X[:500], y[:500]
    Z = StandardScaler().fit_transform(X)
    ref = BoundLogisticRegression(coef_bounds=(0.0, None), solver="newton-bound",
                                  tol=1e-9).fit(Z, y)
    auto = BoundLogisticRegression(coef_bounds=(0.0, None)).fit(Z, y)
    assert auto.solver_result_.method == "lbfgs" and auto.solver_result_.converged
    assert auto.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    short = BoundLogisticRegression(coef_bounds=(0.0, None), max_iter=16).fit(Z, y)
    res = short.solver_result_
    assert res.method == "newton-bound" and res.info["started_by"] == "lbfgs"
    assert res.info["first_iterations"] == 8 and res.nit <= 16 and res.converged
    assert len(res.trace.objective) == res.nit + 1
    assert np.all(np.diff(res.trace.objective) <= 1e-9 * abs(ref.objective_))
    assert np.all(np.diff(res.trace.seconds) >= 0.0)
    assert short.objective_ == pytest.approx(ref.objective_, rel=1e-5)
    assert np.all(short.coef_ >= 0.0)
    raw = BoundLogisticRegression(coef_bounds=(0.0, None)).fit(X, y)
    assert raw.solver_result_.method == "newton-bound"
