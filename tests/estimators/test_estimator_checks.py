"""The scikit-learn estimator contract (STYLE.md): every check of ``check_estimator`` passes."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from zbound import BoundLogisticRegression


@parametrize_with_checks([
    BoundLogisticRegression(),
    # the constrained path (a QP per iteration) and no intercept
    BoundLogisticRegression(fit_intercept=False, coef_bounds=(-1.0, 1.0)),
])
def test_sklearn_contract(estimator, check):
    check(estimator)
