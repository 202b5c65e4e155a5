"""Shared data for the estimator tests: small standardized scikit-learn datasets, cached."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

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


@pytest.fixture(scope="session")
def dataset():
    """The :func:`standardized` loader, as a fixture: ``X, y = dataset("iris")``."""
    return standardized


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    """These problems are tiny: multi-threaded BLAS only adds contention. On a loaded 2-core
    machine it made one scikit-learn L-BFGS fit on digits take 20 s instead of 0.2 s."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
