"""Peak memory of ``BoundLogisticRegression.fit`` (tracemalloc, as ``zbound bench logreg-large``
measures it): the fit never copies X or forms a (t, d) temporary, so its peak is a small
fraction of X's size (issue: at most 2x scikit-learn's peak, which holds no copy either)."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.bench.timing import traced_peak
from zbound.estimators.logistic import BoundLogisticRegression


@pytest.mark.parametrize("n_classes", [2, 5])
def test_fit_peak_memory_is_a_small_fraction_of_x(n_classes):
    rng = np.random.default_rng(0)
    t, dx = 30000, 60
    X = rng.standard_normal((t, dx))
    W = rng.standard_normal((n_classes, dx)) * 0.3
    y = (X @ W.T + rng.gumbel(size=(t, n_classes))).argmax(axis=1)
    clf = BoundLogisticRegression(C=1.0)
    clf.fit(X, y)                                   # imports and caches outside the measure
    peak = traced_peak(lambda: clf.fit(X, y))[0]
    assert peak < 0.2 * X.nbytes / 2**20, (peak, X.nbytes / 2**20)
