"""How the estimators' ``fit`` and ``partial_fit`` run.

Each estimator states ``_parameter_constraints`` in scikit-learn's terms (``Interval`` /
``StrOptions`` / "boolean" / None ..., with :class:`zbound.utils.validation.Number`, an
``Interval`` that refuses booleans, and :class:`zbound.solvers.MethodNames`, the registered
solver names with a capability, so that an estimator's choices come from the registry and
never from a table of its own); :func:`fit_method` checks them once, before any work.
"""

from __future__ import annotations

from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from zbound.utils.threads import limit_small_fits
from zbound.utils.validation import check_score_labels

#: ``stacklevel`` of a warning issued in the body of a method decorated by
#: :func:`fit_method`: the user's line is three frames up (two wrappers and the method).
STACKLEVEL = 4


def fit_method(fit):
    """Decorator for ``fit`` / ``partial_fit``: the parameters are checked once against
    ``_parameter_constraints`` before any work (scikit-learn's ``_fit_context``; a
    ``partial_fit`` on a fitted estimator skips it), and a small fit runs with one BLAS thread
    (:func:`zbound.utils.threads.limit_small_fits`)."""
    return limit_small_fits(_fit_context(prefer_skip_nested_validation=True)(fit))


class LabelCheckedClassifier(ClassifierMixin):
    """scikit-learn's ``ClassifierMixin`` whose ``score`` refuses labels never seen in fit
    (:func:`zbound.utils.validation.check_score_labels`), as every classifier here does."""

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on (X, y). Unlike scikit-learn's default, labels never seen in fit
        raise a ValueError: such rows can never be predicted correctly, and they usually mean
        a label-encoding mismatch (e.g. fitting on strings and scoring on integers)."""
        check_is_fitted(self)
        check_score_labels(self.classes_, y)
        return super().score(X, y, sample_weight=sample_weight)


__all__ = ["fit_method", "LabelCheckedClassifier", "STACKLEVEL"]
