"""Shared data for the estimator tests: small standardized scikit-learn datasets, cached."""

from __future__ import annotations

import functools

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.preprocessing import StandardScaler

_LOADERS = {
    "iris": load_iris,
    "wine": load_wine,
    "digits": load_digits,
    "breast_cancer": load_breast_cancer,
}


@functools.cache
def standardized(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a bundled scikit-learn dataset with standardized features (read-only)."""
    X, y = _LOADERS[name](return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y
