"""Peak memory of ``BoundLogisticRegression.fit`` (tracemalloc, as ``zbound bench logreg-large``
measures it): the fit never copies X or forms a (t, d) temporary, so its peak is a small
fraction of X's size (at most 2x scikit-learn's peak, which holds no copy either); on sparse data
wider than it is long, every dense object the solvers build fits the budget the data sets."""

from __future__ import annotations

import numpy as np
import pytest

from _memory import peak_mb
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
    peak = peak_mb(lambda: clf.fit(X, y))
    assert peak < 0.2 * X.nbytes / 2**20, (peak, X.nbytes / 2**20)


def _csr_bytes(X) -> int:
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def test_sparse_fit_peak_memory_is_below_x():
    """Two classes on CSR rows (20 000 x 30 000, 50 stored entries a row): the fit holds no
    copy of X's entries, and the diagonal of the bound squares X a block at a time."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    t, d, per_row = 20000, 30000, 50
    X = sp.csr_matrix((rng.random(t * per_row), rng.integers(0, d, t * per_row),
                       np.arange(0, t * per_row + 1, per_row)), shape=(t, d))
    y = (np.asarray(X[:, : d // 2].sum(axis=1)).ravel() > per_row / 4).astype(int)
    clf = BoundLogisticRegression(C=1.0)
    clf.fit(X, y)
    peak = peak_mb(lambda: clf.fit(X, y))
    assert peak < 0.75 * _csr_bytes(X) / 2**20, (peak, _csr_bytes(X) / 2**20)


def test_row_blocks_of_a_sparse_loss_share_x():
    """A loss cut into row blocks keeps X's arrays: every block's entries and column indices
    are views of X's (scipy's own row slice would copy them)."""
    import scipy.sparse as sp

    from zbound.models.multinomial import logistic_objective

    X = sp.random(3000, 400, density=0.05, format="csr", random_state=0)
    y = np.arange(3000) % 4
    model = logistic_objective(X, y, 4, np.ones(4 * 401), None, 0.0, fit_intercept=True,
                               chunk_size=500)
    chunks = model.loss._chunks
    assert len(chunks) == 6
    for c in chunks:
        assert np.shares_memory(c.X.data, X.data) and np.shares_memory(c.X.indices, X.indices)
    # the same objective as one block
    whole = logistic_objective(X, y, 4, np.ones(4 * 401), None, 0.0, fit_intercept=True)
    theta = np.random.default_rng(1).standard_normal(4 * 401) * 0.1
    f, g = model.value_and_grad(theta)
    f1, g1 = whole.value_and_grad(theta)
    assert f == pytest.approx(f1, rel=1e-12) and np.allclose(g, g1, rtol=1e-10, atol=1e-12)


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
    peak = peak_mb(lambda: clf.fit(X, y))
    ref = peak_mb(lambda: LogisticRegression(max_iter=1000).fit(X, y))
    assert peak <= 2.0 * ref + 8 * MIN_BLOCK_ELEMS / 2**20, (peak, ref)
    assert clf.score(X, y) > 0.5
