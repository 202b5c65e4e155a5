"""The BLAS thread rule of the estimators (zbound.utils.threads): one thread inside a fit whose
work (rows x parameters) is below SMALL_WORK, the user's setting above it; warnings raised in a
fit still name the caller's line."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import zbound.utils.threads as T
from zbound import (
    BoundLogisticRegression,
    BoundSGDClassifier,
    LatentLogisticRegression,
    MixtureOfExperts,
)


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


class _Spy(BoundLogisticRegression):
    """Records the BLAS threads seen inside fit."""

    seen: list = []

    def _check_params(self):
        type(self).seen.append(_blas_threads())
        return super()._check_params()


def test_small_fit_runs_with_one_blas_thread(monkeypatch):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 5)), rng.integers(0, 3, 200)
    _Spy.seen = []
    _Spy().fit(X, y)
    assert _Spy.seen and all(n == 1 for n in _Spy.seen[-1])
    before = _blas_threads()
    monkeypatch.setattr(T, "SMALL_WORK", 0)            # the rule off: the user's setting
    _Spy().fit(X, y)
    assert _Spy.seen[-1] == before
    assert _blas_threads() == before                   # restored after the fit


def test_work_counts_rows_columns_and_classes():
    X = np.zeros((1000, 50))
    assert T._work(X, np.arange(1000) % 4) == 1000 * 50 * 4
    assert T._work(X, np.zeros(1000)) == 1000 * 50 * 2          # at least 2 labels
    assert T._work(X, np.arange(1000)) == 1000 * 50 * 100       # regression: capped
    assert T._work([[1, 2]], [0]) is None                       # not an array: unchanged
    big = np.broadcast_to(np.zeros(1), (T.SMALL_WORK, 1))
    assert T._work(big, None) >= T.SMALL_WORK


@pytest.mark.parametrize("make", [
    lambda: BoundLogisticRegression(max_iter=1),
    lambda: LatentLogisticRegression(max_iter=1, random_state=0),
    lambda: MixtureOfExperts(n_components=2, expert="logistic", max_iter=1, random_state=0),
    lambda: BoundSGDClassifier(finish_tol=None, max_iter=1, random_state=0),
])
def test_fit_warnings_name_the_callers_line(make):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4)) * 10
    y = (X[:, 0] + rng.normal(size=120) > 0).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make().fit(X, y)
    assert not any(w.filename == T.__file__ for w in caught)
    # warnings raised outside the package's own files (the package's path, not a word in it:
    # a checkout may live in any folder, ``git clone`` names it zbound/)
    package = Path(T.__file__).resolve().parents[1]
    mine = [w for w in caught if not Path(w.filename).resolve().is_relative_to(package)]
    assert mine and all(w.filename == __file__ for w in mine), \
        [(w.filename, str(w.message)[:60]) for w in caught]


def test_partial_fit_is_limited_too():
    assert getattr(BoundSGDClassifier.partial_fit, "__wrapped__", None) is not None
    assert getattr(BoundSGDClassifier.fit, "__wrapped__", None) is not None
