"""The log-space module: every log-sum-exp and log-mean-exp of the library, against SciPy,
extended precision and mpmath, at the scales where the naive forms lose their digits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zbound.utils.logspace import log_cumsum_exp, log_mean_exp, log_softmax, logsumexp

LD = np.longdouble
RAISE = dict(over="raise", invalid="raise", divide="raise")


@settings(max_examples=500)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 12)),
                  elements=st.one_of(st.floats(-750, 750), st.just(-np.inf))))
def test_log_cumsum_exp_matches_extended_precision(a):
    with np.errstate(**RAISE):
        got = log_cumsum_exp(a, axis=1)
    aa = a.astype(LD)
    with np.errstate(divide="ignore"):
        ref = np.log(np.cumsum(np.exp(aa), axis=1)).astype(float)
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-14, atol=1e-13)


def test_log_softmax_is_the_stable_log_sum_exp():
    """Against SciPy's logsumexp and softmax at scores spanning 1e3 nats, ties and -inf (zero
    weight) entries; an all -inf slice gives -inf."""
    from scipy.special import logsumexp, softmax


    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 7)) * 400
    A[0, 3] = -np.inf
    A[2] = A[2, 0]                                           # a row of ties
    for axis in (0, 1):
        lse, P = log_softmax(A, axis)
        np.testing.assert_allclose(lse, logsumexp(A, axis=axis), rtol=1e-15, atol=1e-12)
        np.testing.assert_allclose(P, softmax(A, axis=axis), rtol=1e-13, atol=1e-300)
    assert log_softmax(np.full((2, 3), -np.inf), 1, softmax=False).tolist() == [-np.inf] * 2


@pytest.mark.parametrize("axis", [0, 1])
def test_log_softmax_over_its_input_gives_the_same_and_leaves_a_input_alone(axis):
    """``overwrite_a`` writes the softmax over the scores, bit for bit what the copying
    form returns; without it the scores are untouched (integer input too)."""

    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 9)) * 50
    A[1, 2] = -np.inf
    keep = A.copy()
    lse, P = log_softmax(A, axis)
    np.testing.assert_array_equal(A, keep)
    lse2, P2 = log_softmax(A, axis, overwrite_a=True)
    assert P2 is A
    np.testing.assert_array_equal(lse2, lse)
    np.testing.assert_array_equal(P2, P)
    ints = np.arange(6).reshape(2, 3)
    lse3, P3 = log_softmax(ints, axis)
    assert P3.dtype == np.float64 and ints.tolist() == [[0, 1, 2], [3, 4, 5]]


def _mp_log_mean_exp(a) -> float:
    import mpmath

    with mpmath.workdps(60):
        return float(mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(float(x))) for x in a)
                                / len(a)))


@pytest.mark.parametrize("spread", [1e-7, 1e-10, 1e-13])
def test_log_mean_exp_keeps_the_digits_that_log_of_z_over_n_loses(spread):
    """Close entries (a partition function at high temperature): the value is as small as the
    spread, and perturbing the entries by one rounding moves it by about eps max|a|, which is
    what the log1p / expm1 form stays within against 60-digit arithmetic; log(Z / n) of a
    Z / n near 1 keeps only about eps absolute."""
    rng = np.random.default_rng(0)
    a = spread * rng.standard_normal(200)
    ref = _mp_log_mean_exp(a)
    eps = np.finfo(float).eps
    got = log_mean_exp(a)
    assert abs(got - ref) <= 8 * eps * np.abs(a).max()
    e = np.exp(a - a.max())
    naive = a.max() + np.log(e.sum() / a.size)
    assert abs(naive - ref) > 100 * 8 * eps * np.abs(a).max()   # the form it replaces
    val, e2, s2 = log_mean_exp(a, return_exp=True)
    assert val == got
    np.testing.assert_allclose(e2, np.exp(a - a.max()), rtol=4e-16)
    np.testing.assert_allclose(s2, [e2.sum()], rtol=1e-15)


@settings(max_examples=300)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 9)),
                  elements=st.one_of(st.floats(-700, 700), st.just(-np.inf))))
def test_log_mean_exp_matches_extended_precision(a):
    with np.errstate(**RAISE):
        got = log_mean_exp(a, axis=1)
    aa = a.astype(LD)
    top = aa.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        ref = (np.log(np.mean(np.exp(aa - top), axis=1)) + top[:, 0]).astype(float)
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-13, atol=1e-13)


@settings(max_examples=300)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 9)),
                  elements=st.one_of(st.floats(-700, 700), st.just(-np.inf))),
       st.sampled_from([0, 1, None]))
def test_logsumexp_with_the_implicit_zero_is_the_reference_class_softmax(a, axis):
    """``include_zero``: log(1 + sum exp a), its exponentials and sums as a softmax over the
    scores with a 0 column, at extreme scores and -inf entries."""
    from scipy.special import logsumexp as scipy_lse

    with np.errstate(**RAISE):
        lse, e, s = logsumexp(a, axis, include_zero=True, return_exp=True)
    if axis is None:
        ref = scipy_lse(np.append(a.ravel(), 0.0))
    else:
        pad = np.zeros((1, a.shape[1]) if axis == 0 else (a.shape[0], 1))
        ref = scipy_lse(np.concatenate([a, pad], axis=axis), axis=axis)
    np.testing.assert_allclose(lse, ref, rtol=1e-14, atol=1e-13)
    assert np.all(s >= 1.0 - 1e-15)                     # the shift is max(0, max a)
    full = lse if axis is None else np.expand_dims(lse, axis)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(e / s, np.exp(a - full), rtol=1e-12, atol=1e-300)


def test_overwrite_needs_a_floating_array_and_keeps_its_precision():
    with pytest.raises(TypeError, match="floating"):
        logsumexp(np.arange(3), overwrite_a=True)
    a = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    lse, e, _ = logsumexp(a, 1, return_exp=True, overwrite_a=True)
    assert e is a and e.dtype == np.float32
    np.testing.assert_allclose(lse, np.log(np.exp([1.0, 2.0, 3.0]).sum()), rtol=1e-6)
    assert logsumexp(np.full(3, -np.inf)) == -np.inf
    assert log_mean_exp(np.full(3, -np.inf)) == -np.inf
