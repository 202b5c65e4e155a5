"""SoftmaxLoss.single_precision: the loss evaluated in float32 (value and gradient) against
float64, on random and extreme cases; what it refuses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _rows import sample_weights
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.models.loss import SingleSoftmaxLoss, SoftmaxLoss
from zbound.models.multinomial import logistic_objective

pytestmark = pytest.mark.numerics


def _scales(loss, theta):
    """What float32 errors are relative to: per row 1 + the largest |score| (the value), and
    per parameter sum_j s_j |x_j| (the gradient, the intercept's entries sum_j s_j)."""
    X = loss.X.toarray() if sp.issparse(loss.X) else loss.X
    sw = np.ones(X.shape[0]) if loss.sample_weight is None else loss.sample_weight
    W = theta.reshape(loss.k, loss.d)
    S = X @ W[:, :loss.n_features].T + (W[:, -1] if loss.fit_intercept else 0.0)
    f_scale = float(sw @ (1.0 + np.abs(S).max(axis=1)))
    col = sw @ np.abs(X)
    if loss.fit_intercept:
        col = np.append(col, sw.sum())
    return f_scale, np.tile(col, loss.k)


@settings(max_examples=1500, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_classes=st.integers(2, 6),
       fit_intercept=st.booleans(), weights=st.sampled_from(["none", "random", "zeros"]),
       sparse=st.booleans(), log_scale=st.floats(-3.0, 3.0),
       chunk=st.sampled_from([None, 7, 64]), reference=st.booleans(),
       block_rows=st.sampled_from([None, 1, 5, 64]))
def test_float32_value_and_gradient_track_float64(seed, n_classes, fit_intercept, weights,
                                                  sparse, log_scale, chunk, reference,
                                                  block_rows):
    """Value and gradient within a few float32 roundings of float64, relative to their own
    scales, for every loss form (binary with a reference class, multinomial, a reference class
    with several free classes), sample weights (zeros included), CSR, chunks, and parameters
    from 1e-3 to 1e3 (nearly separable rows: scores in the thousands)."""
    rng = np.random.default_rng(seed)
    t, dx = int(rng.integers(1, 120)), int(rng.integers(1, 8))
    X = rng.standard_normal((t, dx)) * rng.uniform(0.1, 3.0, dx)
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    y = rng.integers(0, n_classes, t)
    sw = sample_weights(rng, weights, t)
    loss = SoftmaxLoss(X, y, n_classes, sw, reference_class=reference or n_classes == 2,
                       chunk_size=chunk, fit_intercept=fit_intercept)
    if block_rows is None:                          # a float32 copy of X
        single = loss.single_precision()
        assert not single.blocked
    else:                                           # row blocks converted per evaluation
        single = SingleSoftmaxLoss(loss, None, block_rows)
        assert single.blocked and single.X is loss.X
    assert isinstance(single, SingleSoftmaxLoss)
    theta = rng.standard_normal(loss.n_params) * 10.0 ** log_scale
    f, g = loss.value_and_grad(theta)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f32, g32 = single.value_and_grad(theta)
        v32 = single.value(theta)
    assert g32.dtype == np.float64 and g32.shape == g.shape
    f_scale, g_scale = _scales(loss, theta)
    assert abs(f32 - f) <= 1e-5 * f_scale
    assert v32 == pytest.approx(f32, rel=1e-6, abs=1e-6 * f_scale)
    assert np.all(np.abs(g32 - g) <= 1e-5 * (g_scale + 1.0))


def test_float32_value_is_accurate_where_rows_are_fitted_well():
    """Large weights fitting every row (losses ~ 1e-6 per row, scores ~ 30): the value and
    gradient stay accurate relative to themselves, not only to the scores (the row loss is
    formed from s - s_y, the gradient from (P - Y) X)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))
    W = rng.standard_normal((4, 5)) * 8.0
    y = np.argmax(X @ W.T, axis=1)
    obj = logistic_objective(X, y, 4, np.zeros(4 * 6), None, 0.0, fit_intercept=True)
    theta = np.hstack([W, np.zeros((4, 1))]).ravel() * 3.0
    f, g = obj.value_and_grad(theta)
    f32, g32 = obj.single_precision().value_and_grad(theta)
    assert abs(f32 - f) <= 1e-3 * f
    assert np.linalg.norm(g32 - g) <= 1e-3 * np.linalg.norm(g)


def test_single_precision_refuses_what_float32_cannot_hold():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3))
    y = rng.integers(0, 3, 50)
    assert SoftmaxLoss(X * 1e29, y, 3).single_precision() is None      # X x rows past 1e30
    assert SoftmaxLoss(X, y, 3).single_precision() is not None
    obj = logistic_objective(X * 1e29, y, 3, np.ones(9), None, 0.0)
    assert obj.single_precision() is None


def test_single_precision_loss_has_no_curvature():
    rng = np.random.default_rng(2)
    loss = SoftmaxLoss(rng.standard_normal((20, 3)), rng.integers(0, 3, 20), 3)
    single = loss.single_precision()
    theta = np.zeros(loss.n_params)
    for call in (lambda: single.majorizer(theta), lambda: single.hessian(theta),
                 lambda: single.value_grad_hessian(theta), lambda: single.bound_gram(),
                 lambda: single.subset([0, 1])):
        with pytest.raises(NotImplementedError, match="value and gradient only"):
            call()
    assert single.double is loss


def test_float32_overflow_gives_non_finite_values_without_warnings():
    """Parameters past float32's range: inf / nan, silently (a solver then goes on in
    float64), never a warning."""
    rng = np.random.default_rng(3)
    loss = SoftmaxLoss(rng.standard_normal((30, 3)), rng.integers(0, 3, 30), 3)
    single = loss.single_precision()
    theta = np.full(loss.n_params, 1e39)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f, g = single.value_and_grad(theta)
    assert not (np.isfinite(f) and np.isfinite(g).all())


def test_blocked_float32_needs_no_copy_of_x():
    """``single_precision(copy=False)``: an evaluation's traced peak is a fraction of a
    float32 copy of X, and its value and gradient are the copy's to float32 accuracy."""
    import tracemalloc

    rng = np.random.default_rng(4)
    X = rng.standard_normal((40000, 50))
    y = rng.integers(0, 5, 40000)
    loss = SoftmaxLoss(X, y, 5, fit_intercept=True)
    lean, copied = loss.single_precision(copy=False), loss.single_precision()
    assert lean.blocked and lean.X is X and lean.block_rows < X.shape[0]
    theta = rng.standard_normal(loss.n_params) * 0.1
    f_c, g_c = copied.value_and_grad(theta)
    tracemalloc.start()
    f_l, g_l = lean.value_and_grad(theta)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 0.25 * X.nbytes / 2          # a float32 copy would be X.nbytes / 2
    assert f_l == pytest.approx(f_c, rel=1e-6)
    np.testing.assert_allclose(g_l, g_c, rtol=0, atol=1e-5 * np.abs(g_c).max())
