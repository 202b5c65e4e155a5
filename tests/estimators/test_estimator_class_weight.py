"""class_weight and warm_start follow scikit-learn's semantics."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from zbound import BoundLogisticRegression


def _data(load, binary=False):
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if binary:
        y = (y == 0).astype(int)
    return X, y


@pytest.mark.parametrize("load", [load_iris, load_wine])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("class_weight", ["balanced", "dict"])
def test_class_weight_matches_scikit_learn(load, binary, class_weight):
    X, y = _data(load, binary)
    if class_weight == "dict":
        class_weight = {c: w for c, w in zip(np.unique(y), (0.3, 2.0, 5.0))}
    sw = np.random.default_rng(0).random(len(y)) + 0.5
    ours = BoundLogisticRegression(C=0.7, tol=1e-10, class_weight=class_weight).fit(X, y, sw)
    ref = LogisticRegression(C=0.7, tol=1e-12, max_iter=10000,
                             class_weight=class_weight).fit(X, y, sw)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=2e-6)
    plain = BoundLogisticRegression(C=0.7, tol=1e-10).fit(X, y, sw)
    assert not np.allclose(plain.coef_, ours.coef_, atol=1e-3)


def test_class_weight_errors():
    X, y = _data(load_iris)
    with pytest.raises(ValueError, match="labels not in the data"):
        BoundLogisticRegression(class_weight={7: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="finite number >= 0"):
        BoundLogisticRegression(class_weight={0: -1.0}).fit(X, y)
    with pytest.raises(ValueError, match="'class_weight' parameter of BoundLogisticRegression"):
        BoundLogisticRegression(class_weight="even").fit(X, y)


def test_warm_start_resumes_from_the_previous_solution():
    X, y = _data(load_wine)
    est = BoundLogisticRegression(C=1.0, warm_start=True, tol=1e-9).fit(X, y)
    cold_iter = est.n_iter_[0]
    coef = est.coef_.copy()
    est.fit(X, y)
    assert est.n_iter_[0] <= 1 < cold_iter
    np.testing.assert_allclose(est.coef_, coef, atol=1e-7)
    # a new C starts from the old solution and needs fewer iterations than from zero
    est.set_params(C=2.0).fit(X, y)
    cold = BoundLogisticRegression(C=2.0, tol=1e-9).fit(X, y)
    assert est.n_iter_[0] < cold.n_iter_[0]
    np.testing.assert_allclose(est.coef_, cold.coef_, atol=1e-6)
    with pytest.raises(ValueError, match="same classes"):
        est.fit(X[y < 2], y[y < 2])
    with pytest.raises(ValueError, match="previous coef_ has shape"):
        BoundLogisticRegression(warm_start=True).fit(X, y).fit(X[:, :5], y)


def test_warm_start_projects_onto_the_bounds():
    X, y = _data(load_iris)
    est = BoundLogisticRegression(warm_start=True).fit(X, y)
    est.set_params(coef_bounds=(-0.1, 0.1)).fit(X, y)
    assert np.all(np.abs(est.coef_) <= 0.1 + 1e-9)
