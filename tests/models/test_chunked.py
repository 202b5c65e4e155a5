"""The map-reduce contract of the losses: evaluation over row chunks equals the whole-data
evaluation (value, gradient, Hessian products, majorizer products), for random chunk sizes,
dense and sparse X; chunk majorizers plus the penalty's majorize the whole objective."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zbound.bounds.curvature import KroneckerCurvature
from zbound.bounds.multinomial import label_bound
from zbound.models.base import Majorizer
from zbound.models.loss import LogLinearLoss, SoftmaxLoss
from zbound.models.multinomial import logistic_objective
from zbound.models.objective import Objective
from zbound.models.penalty import InterceptCentering, L2Penalty

pytestmark = pytest.mark.filterwarnings("error")


@st.composite
def softmax_problems(draw):
    t = draw(st.integers(1, 25))
    d = draw(st.integers(1, 5))
    n = draw(st.integers(2, 5))
    scale = draw(st.sampled_from([1e-3, 1.0, 10.0, 200.0]))
    X = draw(hnp.arrays(np.float64, (t, d), elements=st.floats(-3, 3)))
    y = draw(hnp.arrays(np.int64, t, elements=st.integers(0, n - 1)))
    weights = draw(st.sampled_from(["none", "random", "zeros"]))
    sw = None
    if weights == "random":
        sw = draw(hnp.arrays(np.float64, t, elements=st.sampled_from([0.0, 0.5, 1.0, 7.0])))
    elif weights == "zeros":
        sw = np.zeros(t)
    reference = draw(st.booleans())
    k = n - 1 if reference else n
    theta = scale * draw(hnp.arrays(np.float64, k * d, elements=st.floats(-1, 1)))
    chunk = draw(st.integers(1, t + 2))
    sparse = draw(st.booleans())
    order = draw(st.sampled_from(["descending", "ascending", "given"]))
    return X, y, n, sw, reference, theta, chunk, sparse, order


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(softmax_problems())
def test_softmax_chunks_equal_the_whole(problem):
    X, y, n, sw, reference, theta, chunk, sparse, order = problem
    Xm = sp.csr_matrix(X) if sparse else X
    whole = SoftmaxLoss(Xm, y, n, sw, reference, chunk_size=X.shape[0])
    parts = SoftmaxLoss(Xm, y, n, sw, reference, chunk_size=chunk)
    assert whole.n_chunks == 1 and parts.n_chunks == -(-X.shape[0] // min(chunk, X.shape[0]))
    rng = np.random.default_rng(0)
    v = rng.normal(size=theta.size)
    tol = dict(rtol=1e-10, atol=1e-9 * (1 + np.abs(theta).max()) * (1 + np.abs(X).max()) ** 2)
    close = lambda a, b: a == pytest.approx(b, rel=tol["rtol"], abs=tol["atol"])
    assert close(parts.value(theta), whole.value(theta))
    fw, gw = whole.value_and_grad(theta)
    fp, gp = parts.value_and_grad(theta)
    assert close(fp, fw)
    np.testing.assert_allclose(gp, gw, **tol)
    Hw = whole.hessian(theta)
    Hp = parts.hessian(theta)
    np.testing.assert_allclose(Hp.matvec(v), Hw.matvec(v), **tol)
    np.testing.assert_allclose(Hp.to_dense(), Hw.to_dense(), **tol)
    mw = whole.majorizer(theta, order)
    mp = parts.majorizer(theta, order)
    assert close(mp.value, mw.value)
    np.testing.assert_allclose(mp.grad, gw, **tol)
    np.testing.assert_allclose(mp.curvature.matvec(v), mw.curvature.matvec(v), **tol)
    np.testing.assert_allclose(mp.curvature.diagonal(), mw.curvature.diagonal(), **tol)
    np.testing.assert_allclose(mp.curvature.to_dense(), mw.curvature.to_dense(), **tol)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(softmax_problems(), st.integers(0, 2**31 - 1))
def test_chunk_majorizers_plus_penalty_majorize_the_objective(problem, seed):
    """sum over chunks of the Alg. 1 majorizers + the penalties' (exact) majorizers is above
    the whole objective everywhere, equal at theta, with its gradient."""
    X, y, n, sw, reference, theta, chunk, sparse, order = problem
    Xm = sp.csr_matrix(X) if sparse else X
    rng = np.random.default_rng(seed)
    loss = SoftmaxLoss(Xm, y, n, sw, reference, chunk_size=chunk)
    p = loss.n_params
    strength = rng.choice([0.0, 0.1, 3.0], size=p)
    u = np.zeros(p)
    u[loss.d - 1:: loss.d] = 1.0
    obj = Objective(loss, L2Penalty(strength), InterceptCentering(u, 0.5))
    # the chunk majorizers of the loss, added by hand, plus each penalty's exact majorizer
    total = 0
    for a in range(0, X.shape[0], chunk):
        rows = slice(a, a + chunk)
        total = total + SoftmaxLoss(Xm[rows], y[rows], n, None if sw is None else sw[rows],
                                    reference).majorizer(theta, order)
    for pen in obj.penalties:
        total = total + Majorizer(theta, pen.value(theta), pen.grad(theta), pen.curvature(p))
    f, g = obj.value_and_grad(theta)
    assert total.value == pytest.approx(f, rel=1e-10, abs=1e-9)
    np.testing.assert_allclose(total.grad, g, rtol=1e-9, atol=1e-8)
    m = obj.majorizer(theta, order)
    np.testing.assert_allclose(m.curvature.to_dense(), total.curvature.to_dense(), rtol=1e-9,
                               atol=1e-8)
    for _ in range(20):
        other = theta + rng.choice([1e-4, 0.1, 1.0, 5.0]) * rng.normal(size=p)
        upper = total.evaluate(other)
        assert obj.value(other) <= upper + 1e-9 * max(1.0, abs(upper))


def test_majorizers_scale_and_reject_mismatched_points():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 3, 30)
    loss = SoftmaxLoss(X, y, 3)
    theta = rng.normal(size=loss.n_params)
    m = loss.majorizer(theta)
    half = 0.5 * m
    assert half.value == pytest.approx(0.5 * m.value)
    np.testing.assert_allclose(half.curvature.to_dense(), 0.5 * m.curvature.to_dense())
    weighted = loss.reweighted(np.full(30, 0.5))
    np.testing.assert_allclose(weighted.majorizer(theta).curvature.to_dense(),
                               half.curvature.to_dense(), rtol=1e-12)
    with pytest.raises(ValueError, match="same expansion point"):
        m + loss.majorizer(theta + 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        -1.0 * m


def test_subset_is_the_loss_on_those_rows():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 4))
    y = rng.integers(0, 4, 40)
    sw = rng.random(40)
    loss = SoftmaxLoss(X, y, 4, sw)
    rows = rng.permutation(40)[:13]
    theta = rng.normal(size=loss.n_params)
    direct = SoftmaxLoss(X[rows], y[rows], 4, sw[rows])
    assert loss.subset(rows).value(theta) == pytest.approx(direct.value(theta), rel=1e-13)


@pytest.mark.parametrize("chunk", [1, 3, 7, 100])
def test_loglinear_chunks_equal_the_whole(chunk):
    rng = np.random.default_rng(chunk)
    t, n, d = 17, 5, 3
    F = rng.normal(size=(t, n, d))
    obs = rng.integers(0, n, t)
    prior = np.where(rng.random((t, n)) < 0.2, -np.inf, rng.normal(size=(t, n)))
    prior[np.arange(t), obs] = 0.0
    whole = LogLinearLoss(F, obs, prior)
    parts = LogLinearLoss(F, obs, prior, chunk_size=chunk)
    theta = rng.normal(size=d)
    fw, gw, Hw = whole.value_grad_hessian(theta)
    fp, gp, Hp = parts.value_grad_hessian(theta)
    assert fp == pytest.approx(fw, rel=1e-12)
    np.testing.assert_allclose(gp, gw, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(Hp.to_dense(), Hw.to_dense(), rtol=1e-11, atol=1e-12)
    mw, mp = whole.majorizer(theta), parts.majorizer(theta)
    assert mp.value == pytest.approx(mw.value, rel=1e-12)
    np.testing.assert_allclose(mp.curvature.to_dense(), mw.curvature.to_dense(), rtol=1e-11)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(softmax_problems())
def test_factored_label_bound_equals_the_explicit_kronecker_sum(problem):
    """The (t, n)-factored Alg. 1 curvature acts exactly as sum_j s_j B_j (x) x_j x_j^T with B_j
    from the explicit L^T diag(w) L of label_bound."""
    X, y, n, sw, reference, theta, chunk, sparse, order = problem
    Xm = sp.csr_matrix(X) if sparse else X
    loss = SoftmaxLoss(Xm, y, n, sw, reference)
    C = loss.majorizer(theta, order).curvature
    W = theta.reshape(loss.k, loss.d)
    S = X @ W.T
    if reference:
        S = np.hstack([np.zeros((X.shape[0], 1)), S])
    _, _, B = label_bound(S, order)
    if sw is not None:
        B = B * sw[:, None, None]
    K = KroneckerCurvature(Xm, B[:, loss.free:, loss.free:])
    v = np.random.default_rng(3).normal(size=loss.n_params)
    scale = 1.0 + np.abs(K.to_dense()).max()
    np.testing.assert_allclose(C.matvec(v), K.matvec(v), rtol=1e-9, atol=1e-10 * scale)
    np.testing.assert_allclose(C.diagonal(), K.diagonal(), rtol=1e-9, atol=1e-10 * scale)
    np.testing.assert_allclose(C.to_dense(), K.to_dense(), rtol=1e-9, atol=1e-10 * scale)


def test_logistic_objective_is_the_multinomial_model_with_unit_weights():
    """One objective: the estimator's builder and MultinomialLogistic agree."""
    from zbound.models.multinomial import MultinomialLogistic

    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 3))
    y = rng.integers(0, 3, 50)
    a = MultinomialLogistic(X, y, 3, reg=0.7)
    b = logistic_objective(X, y, 3, np.full(9, 0.7))
    theta = rng.normal(size=9)
    assert a.value(theta) == pytest.approx(b.value(theta), rel=1e-14)
    np.testing.assert_allclose(a.majorizer(theta).curvature.to_dense(),
                               b.majorizer(theta).curvature.to_dense(), rtol=1e-13)
    assert type(a.loss) is type(b.loss)


def test_loss_input_errors():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="chunk_size"):
        SoftmaxLoss(X, np.array([0, 1, 0]), chunk_size=0)
    with pytest.raises(ValueError, match="sample_weight"):
        SoftmaxLoss(X, np.array([0, 1, 0]), sample_weight=[1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="non-negative"):
        SoftmaxLoss(X, np.array([0, 1, 0]), sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="2 classes"):
        SoftmaxLoss(X, np.array([0, 0, 0]), n_classes=1)
    with pytest.raises(ValueError, match="finite and >= 0"):
        L2Penalty(-1.0)
    with pytest.raises(ValueError, match="parameters"):
        Objective(SoftmaxLoss(X, np.array([0, 1, 0])), L2Penalty(np.ones(3)))


@pytest.mark.parametrize("intercept", [False, True])
def test_binary_reference_class_kernels_match_the_softmax_over_two_scores(intercept):
    """Two classes with a reference class take log(1 + e^s) and expit(s) directly (no (2, t)
    score matrix): the value and gradient equal the softmax over [0, s], also at scores near
    float64 overflow (|s| ~ 700) and with zero sample weights."""
    from scipy.special import logsumexp, softmax

    from zbound.models.loss import SoftmaxLoss

    rng = np.random.default_rng(4)
    X = rng.standard_normal((200, 5))
    X[:10] *= 300.0                                        # scores up to several hundred
    y = rng.integers(0, 2, 200)
    sw = rng.uniform(0.0, 2.0, 200)
    sw[10:20] = 0.0
    loss = SoftmaxLoss(X, y, 2, sample_weight=sw, reference_class=True,
                       fit_intercept=intercept, chunk_size=64)
    theta = rng.standard_normal(loss.n_params)
    w = theta[:5]
    s = X @ w + (theta[5] if intercept else 0.0)
    S = np.column_stack([np.zeros(200), s])
    assert np.abs(s).max() > 300.0
    f_want = float(sw @ (logsumexp(S, axis=1) - S[np.arange(200), y]))
    r = sw * (softmax(S, axis=1)[:, 1] - (y == 1))
    g_want = np.concatenate([X.T @ r, [r.sum()]]) if intercept else X.T @ r
    f, g = loss.value_and_grad(theta)
    np.testing.assert_allclose(f, f_want, rtol=1e-12)
    np.testing.assert_allclose(loss.value(theta), f_want, rtol=1e-12)
    np.testing.assert_allclose(g, g_want, rtol=1e-10, atol=1e-10 * np.abs(g_want).max())


def test_design_check_without_a_copy_still_rejects_non_finite_values():
    """The sum-of-squares shortcut of SoftmaxLoss's input check: NaN / inf still raise;
    finite values whose squares overflow go through the full check and then fail the
    magnitude check (their gradient would overflow); large values within it are accepted
    without a copy, and the refusal is decided on the exact magnitude, not the bound."""
    from zbound.models.loss import SoftmaxLoss

    y = np.array([0, 1, 0, 1])
    for bad in (np.nan, np.inf, -np.inf):
        X = np.ones((4, 2))
        X[2, 1] = bad
        with pytest.raises(ValueError, match="NaN or inf"):
            SoftmaxLoss(X, y)
    X = np.full((4, 8), 6e307)                             # the sum overflows: full check
    with pytest.raises(ValueError, match="magnitude 6e\\+307.*rescale"):
        SoftmaxLoss(X, y)
    X = np.full((4, 8), 1e140)                             # large, but its sums stay finite
    loss = SoftmaxLoss(X, y)
    assert loss.X is X and loss.magnitude == 1e140
    # sqrt(sum x^2) x rows = 1.6e150 is over the limit, the exact magnitude x rows is not
    X = np.full((4, 400), 1e148)
    assert SoftmaxLoss(X, y).magnitude == 1e148
    X[1, 7] = -3e149                                      # now 4 rows x 3e149 is over it
    with pytest.raises(ValueError, match="magnitude 3e\\+149"):
        SoftmaxLoss(X, y)
    X = np.ones((4, 2))
    assert SoftmaxLoss(X, y).X is X                        # no copy of a valid X
    with pytest.raises(ValueError, match="non-empty"):
        SoftmaxLoss(np.ones((4, 0)), y)


def test_sparse_rows_are_chunked_by_their_stored_entries():
    """A chunk's temporaries of CSR rows grow with their stored entries, not the width: wide
    sparse rows make one chunk where dense rows of that width would make many."""
    from zbound.models import loss as L

    t, d = 600, 20_000
    X = sp.random(t, d, density=5.0 / d, format="csr", random_state=0)
    y = np.arange(t) % 3
    assert SoftmaxLoss(X, y, 3).n_chunks == 1
    rows = L._CHUNK_ELEMS // (3 + d)                         # the rows a dense chunk holds
    assert rows < t
    assert SoftmaxLoss(X.toarray(), y, 3).n_chunks == -(-t // rows)
