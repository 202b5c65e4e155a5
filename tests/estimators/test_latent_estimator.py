"""``LatentLogisticRegression``: the scikit-learn contract, bad input, collapsed components,
the toy problem, and agreement with multinomial logistic regression at n_components = 1."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from zbound import LatentLogisticRegression
from zbound.estimators.latent import CollapsedComponentWarning


def _stripes(n, seed):
    rng = np.random.default_rng(seed)
    cx = np.array([-4.0, 4.0] * 4)
    cy = np.repeat([3.0, 1.0, -1.0, -3.0], 2)
    lab = np.repeat([0, 1, 0, 1], 2)
    k = rng.integers(0, 8, n)
    return np.c_[cx[k], cy[k]] + 0.5 * rng.standard_normal((n, 2)), np.array(["a", "b"])[lab[k]]


@parametrize_with_checks([LatentLogisticRegression(),
                          LatentLogisticRegression(n_components=1, solver="bound", n_init=2)])
def test_sklearn_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollapsedComponentWarning)
        check(estimator)


def test_toy_fit_predict_and_objective():
    X, y = _stripes(300, 0)
    Xt, yt = _stripes(300, 1)
    est = LatentLogisticRegression(n_components=2, C=100.0, random_state=0, n_init=2).fit(X, y)
    assert est.coef_.shape == (2, 2, 2) and est.intercept_.shape == (2, 2)
    P = est.predict_proba(Xt)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    rows = (np.arange(300), (yt == "b").astype(int))
    # objective = negative log-likelihood + a penalty that does not depend on the data
    assert est.objective(X, y) == pytest.approx(est.objective_, rel=1e-12)
    Ptr = est.predict_proba(X)
    penalty = est.objective_ + np.log(Ptr[np.arange(300), (y == "b").astype(int)]).sum()
    assert penalty > 0
    assert est.objective(Xt, yt) == pytest.approx(-np.log(P[rows]).sum() + penalty, rel=1e-9)
    with pytest.warns(FutureWarning, match="objective"):
        assert est.loglik(Xt, yt) == pytest.approx(np.log(P[rows]).sum())
    np.testing.assert_allclose(est.component_weights_.sum(axis=1), 1.0)
    assert est.collapsed_components_ == []
    # one component per class cannot separate the stripes
    one = LatentLogisticRegression(n_components=1, C=100.0).fit(X, y)
    assert one.score(Xt, yt) < 0.8


def test_toy_restarts_find_the_separating_fit():
    """The stripes objective has local optima (about 1 random start in 4 ends in one); the
    separating fit has the far lower objective, so n_init=3 keeps it on most draws."""
    scores, objectives = [], []
    for seed in range(10):
        X, y = _stripes(300, seed)
        Xt, yt = _stripes(300, seed + 100)
        est = LatentLogisticRegression(C=100.0, n_init=3, random_state=seed).fit(X, y)
        scores.append(est.score(Xt, yt))
        objectives.append(est.objective_)
        single = [LatentLogisticRegression(C=100.0, random_state=seed * 10 + k).fit(X, y)
                  for k in range(3)]
        # n_init keeps the lowest objective of its starts: never worse than the typical start
        assert est.objective_ <= np.median([s.objective_ for s in single]) + 1e-6
    assert np.sum(np.array(scores) >= 0.9) >= 8
    good = np.array(scores) >= 0.9
    if good.any() and (~good).any():                  # a failed draw is a worse optimum
        assert max(np.array(objectives)[good]) < min(np.array(objectives)[~good])


def test_one_component_matches_multinomial_logistic_regression():
    from zbound import BoundLogisticRegression

    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 3))
    y = (X[:, 0] + 0.5 * rng.standard_normal(60) > 0).astype(int) + (X[:, 1] > 1)
    lat = LatentLogisticRegression(n_components=1, C=2.0, tol=1e-10, max_iter=5000).fit(X, y)
    ref = BoundLogisticRegression(C=2.0, tol=1e-10).fit(X, y)
    # the latent model also penalizes the offsets: compare probabilities loosely, objective tight
    assert lat.converged_
    np.testing.assert_allclose(lat.predict_proba(X), ref.predict_proba(X), atol=0.05)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_one_component_is_logistic_regression_at_the_same_C(n_classes):
    """n_components = 1 is LogisticRegression(C)'s model for two classes (one weight vector,
    penalty ||w||^2 / (2C)) and for three (the multinomial one), the offsets penalized like
    the weights: LogisticRegression on [X, 1] without its own intercept."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.standard_normal((80, 3))
    s = X[:, 0] - 0.5 * X[:, 2] + 0.5 * rng.standard_normal(80)
    y = (s > 0).astype(int) if n_classes == 2 else np.digitize(s, [-0.5, 0.5])
    for C in (0.05, 1.0, 20.0):
        lat = LatentLogisticRegression(n_components=1, C=C, tol=1e-10, max_iter=5000,
                                       random_state=0).fit(X, y)
        X1 = np.column_stack([X, np.ones(80)])
        ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10000).fit(
            X1, y)
        np.testing.assert_allclose(lat.predict_proba(X), ref.predict_proba(X1), atol=1e-6)


@pytest.mark.parametrize("params,match", [
    ({"n_components": 0}, "'n_components' parameter .* must be an int in the range"),
    ({"n_components": 40}, "more than the samples of class"),
    ({"C": -1.0}, "'C' parameter"),
    ({"C": True}, "'C' parameter"),
    ({"solver": "nope"}, "'solver' parameter .*'em'.*'em-joint'"),
    ({"solver": "sample-newton"}, "'solver' parameter"),
    ({"n_init": 0}, "'n_init' parameter"),
])
def test_bad_parameters(params, match):
    X, y = _stripes(40, 3)
    with pytest.raises(ValueError, match=match):
        LatentLogisticRegression(**params).fit(X, y)


def test_bad_data():
    X, y = _stripes(40, 4)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LatentLogisticRegression().fit(Xn, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        LatentLogisticRegression().fit(X, np.full(40, "a"))
    with pytest.raises(TypeError, match="n_components"):
        LatentLogisticRegression(n_components=1.5).fit(X, y)


def test_collapsed_components_are_reported_not_nan():
    # one tight cluster per class and 3 components: extra components lose all their mass
    rng = np.random.default_rng(5)
    X = np.r_[rng.normal(-3, 0.1, (30, 1)), rng.normal(3, 0.1, (30, 1))]
    y = np.repeat([0, 1], 30)
    est = LatentLogisticRegression(n_components=3, C=np.inf, max_iter=300, init_scale=1.0,
                                   random_state=0, solver="bound")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.predict_proba(X)))
    weights = est.component_weights_
    assert np.all(np.isfinite(weights))
    collapsed = {(k, m) for k in range(2) for m in range(3) if weights[k, m] < 1e-6}
    assert set(est.collapsed_components_) == collapsed
    if collapsed:
        assert any(issubclass(w.category, CollapsedComponentWarning) for w in caught)


@pytest.mark.parametrize("solver", ["bound", "em", "em-joint", "bfgs", "cg", "steepest",
                                    "newton", "lbfgs", "newton-bound"])
def test_every_solver_fits(solver):
    X, y = _stripes(80, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LatentLogisticRegression(solver=solver, C=10.0, max_iter=300, random_state=0)
        est.fit(X, y)
    assert np.isfinite(est.objective_)
    assert est.predict(X).shape == (80,)
