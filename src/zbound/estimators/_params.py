"""How the estimators' ``fit`` and ``partial_fit`` run.

Each estimator states ``_parameter_constraints`` in scikit-learn's terms (``Interval`` /
``StrOptions`` / "boolean" / None ..., with :class:`zbound.utils.validation.Number`, an
``Interval`` that refuses booleans, and :class:`zbound.solvers.MethodNames`, the registered
solver names with a capability, so that an estimator's choices come from the registry and
never from a table of its own); :func:`fit_method` checks them once, before any work.
"""

from __future__ import annotations

from sklearn.base import _fit_context

from zbound.utils.threads import limit_small_fits

#: ``stacklevel`` of a warning issued in the body of a method decorated by
#: :func:`fit_method`: the user's line is three frames up (two wrappers and the method).
STACKLEVEL = 4


def fit_method(fit):
    """Decorator for ``fit`` / ``partial_fit``: the parameters are checked once against
    ``_parameter_constraints`` before any work (scikit-learn's ``_fit_context``; a
    ``partial_fit`` on a fitted estimator skips it), and a small fit runs with one BLAS thread
    (:func:`zbound.utils.threads.limit_small_fits`)."""
    return limit_small_fits(_fit_context(prefer_skip_nested_validation=True)(fit))


__all__ = ["fit_method", "STACKLEVEL"]
