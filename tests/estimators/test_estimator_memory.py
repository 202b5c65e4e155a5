"""Peak memory of ``BoundLogisticRegression.fit`` (tracemalloc, as ``zbound bench logreg-large``
measures it): the fit never copies X or forms a (t, d) temporary, so its peak is a small
fraction of X's size (at most 2x scikit-learn's peak, which holds no copy either); on sparse data
wider than it is long, every dense object the solvers build fits the budget the data sets."""

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


@pytest.mark.slow
def test_sparse_wide_fit_stays_within_the_preconditioner_budget():
    """Sparse rows wider than long (the shape of text data): the Woodbury preconditioner's
    (rows, rows) systems per class would take 10 x 1500^2 float64 (180 MB); the budget is the
    data's size, at least 32 MB, so the fit builds Jacobi and peaks near scikit-learn's."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    from zbound.bounds.preconditioners import (
        MIN_BLOCK_ELEMS,
        block_budget,
        block_preconditioner_kind,
    )

    t, d, k = 1500, 4000, 10
    X = sp.random(t, d, density=50 / d, format="csr", random_state=0)
    y = np.random.default_rng(0).integers(0, k, t)
    budget = block_budget([(X, np.ones((t, k)), True)])
    assert budget == MIN_BLOCK_ELEMS                         # the floor binds here
    assert block_preconditioner_kind(t, d + 1, k, budget) == "jacobi"
    assert block_preconditioner_kind(t, d + 1, k) == "woodbury"      # without the budget
    clf = BoundLogisticRegression()
    peak = traced_peak(lambda: clf.fit(X, y))[0]
    ref = traced_peak(lambda: LogisticRegression(max_iter=1000).fit(X, y))[0]
    assert peak <= 2.0 * ref + 8 * MIN_BLOCK_ELEMS / 2**20, (peak, ref)
    assert clf.score(X, y) > 0.5
