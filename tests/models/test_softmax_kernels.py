"""The class-major softmax kernels against their plain NumPy definitions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from zbound.models.softmax import PRODUCT_BLOCK_BYTES, class_major_product


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 2, 7])
@pytest.mark.parametrize("d", [1, 5, 64])
@pytest.mark.parametrize("blocks", [0.5, 2.0, 3.7])
def test_class_major_product_is_r_times_x(dtype, k, d, blocks):
    """R X (and R [X, 1]) whether the rows run in one product or in blocks of
    PRODUCT_BLOCK_BYTES (``blocks``: how many such blocks X holds, a partial last one
    included)."""
    itemsize = np.dtype(dtype).itemsize
    step = max(256, PRODUCT_BLOCK_BYTES // (d * itemsize))
    t = max(1, int(blocks * step))
    rng = np.random.default_rng(k * 100 + d)
    X = rng.normal(size=(t, d)).astype(dtype)
    R = rng.normal(size=(k, t)).astype(dtype)
    want = R.astype(np.float64) @ X.astype(np.float64)
    rtol = 1e-12 if dtype == np.float64 else 2e-4
    scale = np.sqrt(t)                  # the size of each entry of the sum
    got = class_major_product(R, X)
    assert got.shape == (k, d) and got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)
    full = class_major_product(R, X, intercept=True)
    np.testing.assert_allclose(full[:, :-1], want, rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(full[:, -1], R.astype(np.float64).sum(axis=1), rtol=rtol,
                               atol=rtol * scale)
    sparse = class_major_product(R, sp.csr_matrix(X))
    np.testing.assert_allclose(sparse, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 7])
def test_class_major_scores_is_w_times_x_transposed(dtype, k):
    """W X^T (and W [X, 1]^T), C-contiguous in the dtype of the operands, whether the rows of
    W go one matrix-vector product at a time (up to SCORE_GEMV_ROWS) or in one product."""
    from zbound.models.softmax import SCORE_GEMV_ROWS, class_major_scores

    assert SCORE_GEMV_ROWS >= 2
    rng = np.random.default_rng(k)
    X = rng.normal(size=(300, 17)).astype(dtype)
    W = rng.normal(size=(k, 18)).astype(dtype)
    want = W[:, :-1].astype(np.float64) @ X.astype(np.float64).T
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    for got, expect in ((class_major_scores(X, W[:, :-1]), want),
                        (class_major_scores(X, W, intercept=True), want + W[:, -1:]),
                        (class_major_scores(sp.csr_matrix(X), W[:, :-1]), want),
                        (class_major_scores(np.asfortranarray(X), W[:, :-1]), want)):
        assert got.shape == (k, 300) and got.flags.c_contiguous and got.dtype == dtype
        np.testing.assert_allclose(got, expect, rtol=rtol, atol=rtol * 10)
    mixed = class_major_scores(X.astype(np.float32), W[:, :-1].astype(np.float64))
    assert mixed.dtype == np.float64
