"""SoftmaxLoss's float64 value and gradient in the residual form (row loss
log sum_a exp(s_a - s_y), gradient (P - Y) X): against a row-by-row brute force on random and
extreme cases, accurate relative to themselves where rows are fitted well, the Hessian's
probabilities restored exactly, and no one-hot matrix or observed-feature sum at build time."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _rows import sample_weights
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp, softmax

from _memory import peak_mb
from zbound.models.loss import SoftmaxLoss

pytestmark = pytest.mark.numerics


def _brute(X, y, n_classes, sw, reference, fit_intercept, theta):
    """Value and gradient row by row from the full (t, n_classes) scores."""
    X = X.toarray() if sp.issparse(X) else X
    t = X.shape[0]
    Xa = np.hstack([X, np.ones((t, 1))]) if fit_intercept else X
    k = n_classes - int(reference)
    W = theta.reshape(k, Xa.shape[1])
    S = Xa @ W.T
    if reference:
        S = np.hstack([np.zeros((t, 1)), S])
    w = np.ones(t) if sw is None else sw
    rows = logsumexp(S, axis=1) - S[np.arange(t), y]
    R = softmax(S, axis=1)
    R[np.arange(t), y] -= 1.0
    g = (R[:, int(reference):] * w[:, None]).T @ Xa
    return float(w @ rows), g.ravel(), S


@settings(max_examples=2000, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_classes=st.integers(2, 6),
       fit_intercept=st.booleans(), weights=st.sampled_from(["none", "random", "zeros"]),
       sparse=st.booleans(), log_scale=st.floats(-3.0, 5.0),
       chunk=st.sampled_from([None, 1, 7, 64]), reference=st.booleans(),
       ties=st.booleans())
def test_value_and_gradient_match_brute_force(seed, n_classes, fit_intercept, weights, sparse,
                                              log_scale, chunk, reference, ties):
    """Every loss form (binary with a reference class, multinomial, several free classes),
    sample weights with zeros, CSR, chunks down to one row, tied scores (theta = 0 rows) and
    parameters from 1e-3 to 1e5 (scores near 1e6: e^s overflows, the loss must not)."""
    rng = np.random.default_rng(seed)
    t, dx = int(rng.integers(1, 80)), int(rng.integers(1, 6))
    X = rng.standard_normal((t, dx))
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
    y = rng.integers(0, n_classes, t)
    sw = sample_weights(rng, weights, t)
    reference = reference or n_classes == 2
    loss = SoftmaxLoss(sp.csr_matrix(X) if sparse else X, y, n_classes, sw,
                       reference_class=reference, chunk_size=chunk,
                       fit_intercept=fit_intercept)
    theta = rng.standard_normal(loss.n_params) * 10.0 ** log_scale
    if ties:
        theta[: loss.d] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f, g = loss.value_and_grad(theta)
        v = loss.value(theta)
        fh, gh, _ = loss.value_grad_hessian(theta)
    fb, gb, S = _brute(X, y, n_classes, sw, reference, fit_intercept, theta)
    w = np.ones(t) if sw is None else sw
    f_scale = float(w @ (1.0 + np.abs(S).max(axis=1)))
    col = w @ np.abs(X)
    g_scale = np.tile(np.append(col, w.sum()) if fit_intercept else col, loss.k)
    assert np.isfinite(f) and np.all(np.isfinite(g))
    assert abs(f - fb) <= 1e-12 * f_scale
    assert v == pytest.approx(f, rel=1e-13, abs=1e-13 * f_scale)
    assert fh == pytest.approx(f, rel=1e-13, abs=1e-13 * f_scale)
    assert np.all(np.abs(g - gb) <= 1e-12 * (g_scale + 1.0))
    np.testing.assert_array_equal(gh, g)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_value_is_accurate_where_rows_are_fitted_well(n_classes):
    """Weights fitting every row by a wide margin (row losses near 1e-30): value and gradient
    keep their relative accuracy (a difference of sums, log Z - theta^T Y X, would return 0
    or noise of the size of the scores)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 4))
    W = rng.standard_normal((n_classes, 4)) * 3.0
    y = np.argmax(X @ W.T, axis=1)
    margin = np.sort(X @ W.T, axis=1)
    keep = margin[:, -1] - margin[:, -2] > 0.5
    X, y = X[keep], y[keep]
    scale = 140.0 / 0.5                             # margins of 70 or more
    loss = SoftmaxLoss(X, y, n_classes, reference_class=n_classes == 2)
    if n_classes == 2:
        theta = (W[1] - W[0]) * scale
    else:
        theta = W.ravel() * scale
    f, g = loss.value_and_grad(theta)
    # reference: sum over rows of log1p(sum_{a != y} e^{s_a - s_y}), e^{..} tiny: sum itself
    S = X @ (theta.reshape(-1, 4)).T
    if n_classes == 2:
        S = np.hstack([np.zeros((len(y), 1)), S])
    D = S - S[np.arange(len(y)), y][:, None]
    D[np.arange(len(y)), y] = -np.inf
    ref = float(np.exp(D).sum())
    assert 0.0 < ref < 1e-20
    assert f == pytest.approx(ref, rel=1e-10)
    R = np.exp(D)
    R[np.arange(len(y)), y] = -R.sum(axis=1)
    gref = (R[:, int(n_classes == 2):].T @ X).ravel()
    np.testing.assert_allclose(g, gref, rtol=1e-9, atol=1e-9 * np.abs(gref).max())


def test_hessian_probabilities_are_restored_exactly():
    """value_grad_hessian forms the gradient from P - Y in place and puts P back: its
    curvature uses the probabilities of predict_proba (to rounding)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 5))
    y = rng.integers(0, 3, 300)
    sw = rng.uniform(0.0, 2.0, 300)
    for reference in (False, True):
        loss = SoftmaxLoss(X, y, 3, sw, reference_class=reference)
        theta = rng.standard_normal(loss.n_params) * 4.0
        _, _, H = loss.value_grad_hessian(theta)
        P = loss.predict_proba(theta)
        v = rng.standard_normal(loss.n_params)
        # the Hessian of the free classes from the reference probabilities
        ref = np.zeros(loss.n_params)
        Pf = P[:, int(reference):]
        V = v.reshape(loss.k, 5)
        U = X @ V.T                                 # (t, k)
        A = Pf * U - Pf * (Pf * U).sum(axis=1, keepdims=True)
        ref = ((A * sw[:, None]).T @ X).ravel()
        np.testing.assert_allclose(H.matvec(v), ref, rtol=1e-12, atol=1e-12)


def test_building_the_loss_forms_no_one_hot_matrix():
    """The loss keeps X by reference and builds nothing of size t x n_classes: the
    observed-feature sums wait until a majorizer or a Hessian sweep asks for them."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20000, 30))
    y = rng.integers(0, 10, 20000)
    peak = peak_mb(lambda: SoftmaxLoss(X, y, 10, fit_intercept=True))
    assert peak < 0.05 * 20000 * 10 * 8 / 2**20, peak
    loss = SoftmaxLoss(X, y, 10, fit_intercept=True)
    theta = rng.standard_normal(loss.n_params) * 0.1
    f, g = loss.value_and_grad(theta)
    assert loss._chunks[0].observed is None
    m = loss.majorizer(theta)
    assert loss._chunks[0].observed is not None
    assert m.value == pytest.approx(f, rel=1e-12)
    np.testing.assert_allclose(m.grad, g, rtol=1e-9, atol=1e-9 * np.abs(g).max())


@pytest.mark.parametrize("single", [False, True])
def test_binary_rows_over_several_blocks_match_brute_force(single):
    """Binary rows run in blocks of 8192 (their temporaries stay small): a data set of
    three blocks and a part, labels unsorted, weights with zeros, float64 and float32."""
    rng = np.random.default_rng(4)
    t = 3 * 8192 + 123
    X = rng.standard_normal((t, 3))
    y = rng.integers(0, 2, t)
    sw = np.where(rng.random(t) < 0.2, 0.0, rng.uniform(0.5, 2.0, t))
    loss = SoftmaxLoss(X, y, 2, sw, reference_class=True, fit_intercept=True)
    theta = rng.standard_normal(loss.n_params) * 5.0
    fb, gb, _ = _brute(X, y, 2, sw, True, True, theta)
    ev = loss.single_precision() if single else loss
    f, g = ev.value_and_grad(theta)
    rel = 1e-5 if single else 1e-12
    assert f == pytest.approx(fb, rel=rel)
    np.testing.assert_allclose(g, gb, rtol=rel * 10, atol=rel * np.abs(gb).max())
    if not single:
        _, _, H = loss.value_grad_hessian(theta)
        p = loss.predict_proba(theta)[:, 1]
        v = rng.standard_normal(loss.n_params)
        Xa = np.hstack([X, np.ones((t, 1))])
        want = Xa.T @ (sw * p * (1 - p) * (Xa @ v))
        np.testing.assert_allclose(H.matvec(v), want, rtol=1e-10, atol=1e-10)
