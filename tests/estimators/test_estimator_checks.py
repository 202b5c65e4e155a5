"""The scikit-learn estimator contract: every check of ``check_estimator`` passes."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from zbound import BoundLogisticRegression

_BOXED = BoundLogisticRegression(fit_intercept=False, coef_bounds=(-1.0, 1.0))


def _expected_failures(estimator):
    if estimator is _BOXED:
        # The check puts extreme class weights on a problem whose classes differ only in the
        # intercept; with no intercept and |coef| <= 1 the boxed model cannot move its decision
        # boundary far enough. The unconstrained estimator passes it (class_weight is tested
        # against scikit-learn in test_estimator_agreement.py).
        return {"check_class_weight_classifiers":
                "no intercept and a coefficient box: the extreme-weight optimum is infeasible"}
    return {}


@parametrize_with_checks([
    BoundLogisticRegression(),
    BoundLogisticRegression(class_weight="balanced", warm_start=True),
    # the constrained path (a QP per iteration) and no intercept
    _BOXED,
    # the sparse penalties (the proximal method bound-cd)
    BoundLogisticRegression(penalty="l1", C=10.0),
    BoundLogisticRegression(penalty="elasticnet", l1_ratio=0.5, class_weight="balanced"),
], expected_failed_checks=_expected_failures)
def test_sklearn_contract(estimator, check):
    check(estimator)
