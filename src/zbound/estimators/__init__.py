"""scikit-learn estimators built on the bounds and solvers (estimators sit on top of both).

One module per estimator family:

- :mod:`zbound.estimators.logistic`: :class:`BoundLogisticRegression` (batch, binary or
  multinomial, optional box constraints).

Names are imported lazily so that importing one estimator does not load the others' dependencies.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "BoundLogisticRegression": "zbound.estimators.logistic",
    "BoundLogisticRegressionCV": "zbound.estimators.logistic",
    "BoundSGDClassifier": "zbound.estimators.sgd",
    "MixtureOfExperts": "zbound.estimators.moe",
    "LatentLogisticRegression": "zbound.estimators.latent",
    "ChainCRF": "zbound.estimators.crf",
    "GraphCRF": "zbound.estimators.graph_crf",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'zbound.estimators' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
