"""zbound: upper bounds on log-partition functions, and learning with them.

Public names are imported lazily so that ``import zbound`` stays cheap and so that
optional heavy pieces (CVXPY, matplotlib) load only when used.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "quadratic_bound": "zbound.bounds.enumerate",
    "QuadraticBound": "zbound.bounds.enumerate",
    "multinomial_bound": "zbound.bounds.multinomial",
    "MultinomialBound": "zbound.bounds.multinomial",
    "Result": "zbound.solvers.result",
    "BoundLogisticRegression": "zbound.estimators.logistic",
    "BoundLogisticRegressionCV": "zbound.estimators.logistic",
    "BoundSGDClassifier": "zbound.estimators.sgd",
    "MixtureOfExperts": "zbound.estimators.moe",
    "LatentLogisticRegression": "zbound.estimators.latent",
    "IsingModel": "zbound.ising.model",
    "ChainCRF": "zbound.estimators.crf",
    "GraphCRF": "zbound.estimators.graph_crf",
    "junction_bound": "zbound.bounds.junction",
    "JunctionTree": "zbound.bounds.junction",
    "show_versions": "zbound.utils._show_versions",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'zbound' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
