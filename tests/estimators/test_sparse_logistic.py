"""BoundLogisticRegression with L1 and elastic-net penalties against scikit-learn's saga on the
same objective, exact zeros, the parameter checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from zbound import BoundLogisticRegression


def objective(coef, intercept, X, y, classes, C, l1_ratio):
    S = np.asarray(X @ coef.T) + intercept
    if S.shape[1] == 1:
        S = np.hstack([np.zeros_like(S), S])
    yi = np.searchsorted(classes, y)
    loss = float(np.sum(logsumexp(S, axis=1) - S[np.arange(len(y)), yi]))
    return loss + (l1_ratio * np.abs(coef).sum() + (1 - l1_ratio) / 2 * (coef ** 2).sum()) / C


def _data(name):
    X, y = (load_breast_cancer if name == "cancer" else load_digits)(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[::2], y[::2]


@pytest.mark.parametrize("name", ["cancer", pytest.param("digits", marks=pytest.mark.slow)])
@pytest.mark.parametrize("penalty, l1_ratio", [("l1", None), ("elasticnet", 0.4)])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_optimum_of_scikit_learns_objective(name, penalty, l1_ratio, sparse):
    X, y = _data(name)
    Xf = sp.csr_matrix(X) if sparse else X
    C, r = 0.1, (1.0 if penalty == "l1" else l1_ratio)
    est = BoundLogisticRegression(C=C, penalty=penalty, l1_ratio=l1_ratio, tol=1e-9).fit(Xf, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=C, l1_ratio=r, solver="saga", tol=1e-9,
                                 max_iter=100000).fit(X, y)
    f = objective(est.coef_, est.intercept_, X, y, est.classes_, C, r)
    f_ref = objective(ref.coef_, ref.intercept_, X, y, est.classes_, C, r)
    assert f <= f_ref * (1 + 1e-6)
    assert est.objective_ == pytest.approx(f, rel=1e-9)
    assert est.solver_result_.method == "bound-cd"
    assert est.solver_result_.converged and est.solver_result_.info["kkt_violation"] <= 1e-6
    if name == "cancer":                        # binary: a unique optimum and support
        np.testing.assert_array_equal(est.coef_ != 0, np.abs(ref.coef_) > 1e-8)


def test_l1_gives_exact_zeros_and_c_to_zero_gives_no_coefficients():
    X, y = _data("cancer")
    est = BoundLogisticRegression(C=0.05, penalty="l1").fit(X, y)
    assert 0 < np.count_nonzero(est.coef_) < X.shape[1]
    assert not BoundLogisticRegression(C=1e-6, penalty="l1").fit(X, y).coef_.any()


def test_the_l2_solver_bound_cd_matches_the_default_l2_fit():
    X, y = _data("digits")
    a = BoundLogisticRegression(C=0.5, tol=1e-8).fit(X, y)
    b = BoundLogisticRegression(C=0.5, solver="bound-cd", tol=1e-8).fit(X, y)
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-7)


def test_no_penalty_is_the_unpenalized_fit():
    X, y = _data("cancer")
    X = X[:, :3]                                # not separable: a finite optimum
    a = BoundLogisticRegression(penalty=None, tol=1e-10).fit(X, y)
    b = BoundLogisticRegression(C=1e12, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5)


@pytest.mark.parametrize("params, err, match", [
    (dict(penalty="elasticnet"), ValueError, "needs l1_ratio"),
    (dict(penalty="l1", solver="lbfgs"), ValueError, "needs a proximal solver"),
    (dict(penalty="l1", coef_bounds=(-1, 1)), ValueError, "takes no coef_bounds"),
    (dict(penalty="l3"), ValueError, "penalty"),
    (dict(penalty="elasticnet", l1_ratio=1.5), ValueError, "l1_ratio"),
])
def test_parameter_checks(params, err, match):
    X, y = _data("cancer")
    with pytest.raises(err, match=match):
        BoundLogisticRegression(**params).fit(X, y)


def test_l1_ratio_without_elasticnet_warns():
    X, y = _data("cancer")
    with pytest.warns(UserWarning, match="l1_ratio is used only"):
        BoundLogisticRegression(l1_ratio=0.5).fit(X, y)
