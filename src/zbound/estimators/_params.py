"""Parameter constraints of the estimators, in scikit-learn's own terms.

Each estimator states ``_parameter_constraints`` (scikit-learn's ``Interval`` /
``StrOptions`` / "boolean" / None ...), and ``fit`` / ``partial_fit`` run under
``_fit_context``, which checks them once, before any work, with scikit-learn's messages.
Two additions: :class:`~zbound.utils.validation.Number` is an ``Interval`` that refuses
booleans (``C=True`` is a mistake, not 1.0), and ``registered``
(:class:`zbound.solvers.MethodNames`) is the live set of solver names in
:data:`zbound.solvers.METHODS` that have a capability, so an estimator's choices come from the
registry and never from a table of its own.
"""

from __future__ import annotations

from sklearn.base import _fit_context

from zbound.solvers.base import MethodNames as registered  # noqa: F401  (re-exported)
from zbound.utils.threads import limit_small_fits
from zbound.utils.validation import Number  # noqa: F401  (the estimators' numbers)

#: ``stacklevel`` of a warning issued in the body of a method decorated by
#: :func:`fit_method`: the user's line is three frames up (two wrappers and the method).
STACKLEVEL = 4


def fit_method(fit):
    """Decorator for ``fit`` / ``partial_fit``: the parameters are checked once against
    ``_parameter_constraints`` before any work (scikit-learn's ``_fit_context``; a
    ``partial_fit`` on a fitted estimator skips it), and a small fit runs with one BLAS thread
    (:func:`zbound.utils.threads.limit_small_fits`)."""
    return limit_small_fits(_fit_context(prefer_skip_nested_validation=True)(fit))


__all__ = ["Number", "registered", "fit_method", "STACKLEVEL"]
