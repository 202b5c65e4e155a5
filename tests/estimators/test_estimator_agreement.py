"""BoundLogisticRegression solves scikit-learn's LogisticRegression problem.

Reference: ``LogisticRegression(C, fit_intercept, solver="lbfgs")`` with a tiny tol on the same
standardized data. L-BFGS stops on its own relative-decrease test (about 1e-6 to 1e-5 from the
optimum on digits, see the objective check), while the library's default Newton-bound solver
reaches gradient ~1e-12; so besides closeness we check that the library's objective is never
worse than scikit-learn's.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from zbound import BoundLogisticRegression

CASES = [
    ("iris", 1.0, True),
    ("iris", 10.0, False),
    ("wine", 1.0, True),
    ("wine", 0.1, False),
    ("digits", 1.0, True),
    ("breast_cancer", 1.0, True),
    ("breast_cancer", 10.0, False),
]


def objective(est, X, y, C):
    """sum_j log-loss_j + 1/(2C) ||coef||^2, scikit-learn's L2 objective."""
    loss = log_loss(y, est.predict_proba(X), labels=est.classes_, normalize=False)
    return loss + 0.5 / C * float(np.sum(est.coef_**2))


@pytest.fixture(scope="module")
def fitted(dataset):
    cache = {}

    def get(name, C, fit_intercept):
        key = (name, C, fit_intercept)
        if key not in cache:
            X, y = dataset(name)
            sk = LogisticRegression(C=C, fit_intercept=fit_intercept, solver="lbfgs", tol=1e-12,
                                    max_iter=10_000).fit(X, y)
            zb = BoundLogisticRegression(C=C, fit_intercept=fit_intercept, tol=1e-10).fit(X, y)
            cache[key] = (X, y, sk, zb)
        return cache[key]

    return get


@pytest.mark.parametrize(("name", "C", "fit_intercept"), CASES)
def test_matches_sklearn(fitted, name, C, fit_intercept):
    X, y, sk, zb = fitted(name, C, fit_intercept)
    assert zb.solver_result_.converged
    assert zb.coef_.shape == sk.coef_.shape
    assert zb.intercept_.shape == sk.intercept_.shape
    np.testing.assert_array_equal(zb.classes_, sk.classes_)
    np.testing.assert_allclose(zb.coef_, sk.coef_, rtol=0, atol=1e-5)
    # the unpenalized intercepts are the least determined parameters for L-BFGS
    np.testing.assert_allclose(zb.intercept_, sk.intercept_, rtol=0, atol=5e-5)
    np.testing.assert_allclose(zb.predict_proba(X), sk.predict_proba(X), rtol=0, atol=1e-5)
    np.testing.assert_allclose(zb.decision_function(X), sk.decision_function(X), rtol=1e-4,
                               atol=1e-4)
    assert (zb.predict(X) == sk.predict(X)).mean() >= 0.995


@pytest.mark.parametrize(("name", "C", "fit_intercept"), CASES)
def test_objective_not_worse_than_sklearn(fitted, name, C, fit_intercept):
    X, y, sk, zb = fitted(name, C, fit_intercept)
    f_zb, f_sk = objective(zb, X, y, C), objective(sk, X, y, C)
    assert f_zb <= f_sk + 1e-9 * abs(f_sk)
    np.testing.assert_allclose(zb.solver_result_.fun, f_zb, rtol=1e-10)
    # the objective the fit reports is J at (coef_, intercept_), centering term removed
    np.testing.assert_allclose(zb.objective_, f_zb, rtol=1e-12)


def test_multinomial_intercepts_sum_to_zero(fitted):
    # unpenalized intercepts are defined up to a common shift; the fit returns the centered ones
    _, _, _, zb = fitted("wine", 1.0, True)
    assert abs(zb.intercept_.sum()) < 1e-10


@pytest.mark.parametrize("solver", ["bound", "squarem", "newton", "lbfgs", "lbfgs-precond"])
def test_other_solvers_same_solution(fitted, solver):
    X, y, _, ref = fitted("iris", 1.0, True)
    est = BoundLogisticRegression(C=1.0, solver=solver, tol=1e-9, max_iter=5000).fit(X, y)
    assert est.solver_result_.method == solver
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-5)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-6)


def test_auto_is_library_default(dataset):
    from zbound.solvers import DEFAULT_METHOD

    X, y = dataset("iris")
    est = BoundLogisticRegression().fit(X, y)
    assert est.solver_result_.method == DEFAULT_METHOD


def test_auto_follows_the_library_constant(dataset, monkeypatch):
    """The estimator's "auto" is the solver policy's choice, which falls back on its default."""
    import zbound.solvers.policy

    monkeypatch.setattr(zbound.solvers.policy, "DEFAULT_METHOD", "squarem")
    X, y = dataset("iris")
    assert BoundLogisticRegression().fit(X, y).solver_result_.method == "squarem"


@pytest.mark.parametrize("order", ["descending", "ascending", "given"])
def test_bound_order_changes_path_not_solution(fitted, order):
    X, y, _, ref = fitted("iris", 1.0, True)
    est = BoundLogisticRegression(solver="bound", order=order, tol=1e-9, max_iter=5000).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-5)


def test_sample_weight_matches_sklearn(dataset):
    X, y = dataset("wine")
    rng = np.random.default_rng(0)
    sw = rng.uniform(0.2, 3.0, size=y.shape[0])
    sk = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=sw)
    zb = BoundLogisticRegression(C=1.0, tol=1e-10).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(zb.coef_, sk.coef_, rtol=0, atol=1e-5)
    np.testing.assert_allclose(zb.predict_proba(X), sk.predict_proba(X), rtol=0, atol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_sparse_high_dimensional_matches_sklearn(n_classes):
    # p > 300 parameters: the matrix-free (CG) inner solves on a CSR design
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(600, 800, density=0.02, format="csr", random_state=1)
    W = 3.0 * rng.normal(size=(n_classes, 800))
    y = np.asarray(X @ W.T + rng.gumbel(size=(600, n_classes))).argmax(axis=1)
    sk = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(X, y)
    zb = BoundLogisticRegression(C=1.0, tol=1e-10).fit(X, y)
    assert zb.solver_result_.converged
    np.testing.assert_allclose(zb.coef_, sk.coef_, rtol=0, atol=1e-5)
    np.testing.assert_allclose(zb.predict_proba(X), sk.predict_proba(X), rtol=0, atol=1e-5)
    f_zb, f_sk = objective(zb, X, y, 1.0), objective(sk, X, y, 1.0)
    assert f_zb <= f_sk + 1e-9 * abs(f_sk)


def _badly_scaled(n_classes, rows, seed=0):
    """Features in wildly different units, as raw data sets have them (adult: a column up to
    1.5e6 beside 0/1 columns): standard normal columns, one scaled by 1e6, one by 1e-3, and
    a 0/1 column; labels from a linear model in the standardized units."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((rows, 5))
    Z[:, 4] = Z[:, 4] > 0.5
    W = rng.standard_normal((5, n_classes))
    S = Z @ W + 0.5 * rng.standard_normal((rows, n_classes))
    y = S.argmax(axis=1)
    X = Z * np.array([1.0, 1e6, 1e-3, 1.0, 1.0])
    return X, y


@pytest.mark.parametrize("n_classes,rows", [(2, 500), (2, 6000), (4, 500), (4, 6000)])
def test_badly_scaled_features_reach_the_optimum(n_classes, rows):
    """Unscaled columns (1e6 next to 1e-3 and 0/1) must not change the answer or the
    convergence: every dense path (Cholesky Newton, PCG Newton with block preconditioners,
    L-BFGS with the bound preconditioner) used to judge the curvature singular, or shrink it,
    in the units of the largest column, and crawled to max_iter far from the optimum."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = _badly_scaled(n_classes, rows)
    C = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ours = BoundLogisticRegression(C=C).fit(X, y)
    ref = LogisticRegression(C=C, solver="newton-cholesky", tol=1e-10, max_iter=1000).fit(X, y)
    f_ours, f_ref = objective(ours, X, y, C), objective(ref, X, y, C)
    assert f_ours <= f_ref + 1e-6 * abs(f_ref), (f_ours, f_ref, ours.solver_result_.method)
    assert ours.solver_result_.converged
