"""BoundLogisticRegressionCV: the scikit-learn contract, and the same choice as
LogisticRegressionCV on the same grid and folds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from zbound.estimators import BoundLogisticRegressionCV


@parametrize_with_checks([BoundLogisticRegressionCV(Cs=3, cv=3),
                          BoundLogisticRegressionCV(Cs=3, cv=3, penalty="l1")])
def test_sklearn_contract(estimator, check):
    check(estimator)


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.slow
@pytest.mark.parametrize("penalty, ratio", [("l2", 0.0), ("l1", 1.0)])
def test_same_choice_and_scores_as_logistic_regression_cv(penalty, ratio):
    X, y = _data()
    Cs = np.logspace(-3, 1, 8)
    folds = StratifiedKFold(4, shuffle=True, random_state=0)
    ours = BoundLogisticRegressionCV(Cs=Cs, penalty=penalty, cv=folds, tol=1e-8).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegressionCV(Cs=Cs, cv=folds, l1_ratios=(ratio,), solver="saga",
                                   tol=1e-8, max_iter=20_000).fit(X, y)
    ref_scores = np.asarray(ref.scores_[1]).reshape(4, -1)
    # each score a fraction of about 140 validation rows: a sample or two may differ
    np.testing.assert_allclose(ours.scores_[:, 0, :], ref_scores, atol=0.015)
    # the same choice where the grid's mean scores are not within a sample of each other
    # (saga stops a little short of the optimum at large C, so a validation row can flip)
    best, ref_best = ours.scores_.mean(axis=0).max(), ref_scores.mean(axis=0).max()
    assert ours.C_ == pytest.approx(float(np.ravel(ref.C_)[0])) or abs(best - ref_best) <= 0.005
    assert abs(ours.score(X, y) - ref.score(X, y)) <= 0.005


def test_elastic_net_grid_and_refit_false():
    X, y = _data()
    est = BoundLogisticRegressionCV(Cs=[0.01, 0.1, 1.0], penalty="elasticnet",
                                    l1_ratios=[0.2, 0.8], cv=3, refit=False).fit(X, y)
    assert est.scores_.shape == (3, 2, 3) and est.coefs_paths_.shape == (3, 2, 3, 1, 31)
    assert est.l1_ratio_ in (0.2, 0.8) and est.C_ in (0.01, 0.1, 1.0)
    r = list(est.l1_ratios_).index(est.l1_ratio_)
    c = list(est.Cs_).index(est.C_)
    np.testing.assert_allclose(est.coef_, est.coefs_paths_[:, r, c, :, :-1].mean(axis=0))


@pytest.mark.parametrize("params, match", [
    (dict(penalty="elasticnet"), "needs l1_ratios"),
    (dict(penalty="elasticnet", l1_ratios=[1.5]), "l1_ratios must lie"),
    (dict(Cs=[-1.0]), "Cs must be"),
])
def test_bad_grids_are_refused(params, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        BoundLogisticRegressionCV(cv=3, **params).fit(X, y)
