"""Scalar pieces of Alg. 1: beta(r) = tanh(r/2) / (2r), the log-space sigmoid, running log-sum-exp
and the visiting order.

References are computed independently in extended precision (np.longdouble, 64-bit mantissa on
x86-64; mpmath is not installed) or by the Taylor series with more terms than the library uses.
"""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zbound.bounds.scalar import beta, ordering, sigmoid_from_log

# Any RuntimeWarning (overflow, invalid value) from the library is a test failure.
pytestmark = pytest.mark.filterwarnings("error")

LD = np.longdouble
RAISE = dict(over="raise", invalid="raise", divide="raise")

# tanh(x)/x = 1 - x^2/3 + 2x^4/15 - 17x^6/315 + 62x^8/2835 - ..., beta(r) = tanh(r/2)/(2r)
# = (1/4) tanh(x)/x with x = r/2.
_TANH_OVER_X = [LD(1), LD(-1) / 3, LD(2) / 15, LD(-17) / 315, LD(62) / 2835, LD(-1382) / 155925]


def beta_reference(r) -> np.ndarray:
    """beta in extended precision; series (6 terms) for |r| < 0.05, tanh in long double above."""
    r = np.abs(np.asarray(r, dtype=LD))
    out = np.zeros(r.shape, dtype=LD)
    small = r < LD("0.05")
    x2 = (r[small] / 2) ** 2
    acc = np.zeros(x2.shape, dtype=LD)
    for c in reversed(_TANH_OVER_X):
        acc = acc * x2 + c
    out[small] = acc / 4
    big = ~small & np.isfinite(r)
    out[big] = np.tanh(r[big] / 2) / r[big] / 2
    return out


def test_reference_is_consistent_across_its_two_branches():
    # Validates the reference itself: series and long-double tanh agree where both are accurate.
    r = np.linspace(0.01, 0.1, 50, dtype=LD)
    x = r / 2
    acc = np.zeros_like(x)
    for c in reversed(_TANH_OVER_X):
        acc = acc * x * x + c
    np.testing.assert_allclose((acc / 4).astype(float), (np.tanh(x) / x / 4).astype(float),
                               rtol=1e-15)


FINITE_R = st.floats(allow_nan=False, allow_infinity=False)


@pytest.mark.slow
@settings(max_examples=3000)
@given(FINITE_R)
@example(0.0)
@example(-0.0)
@example(1e-300)
@example(-1e-300)
@example(5e-324)
@example(1e-3)
@example(np.nextafter(1e-3, 0))
@example(np.nextafter(1e-3, 1))
@example(1e300)
@example(-1e300)
@example(np.finfo(float).max)
@example(-np.finfo(float).max)
@example(40.0)
@example(700.0)
def test_beta_matches_extended_precision(r):
    with np.errstate(**RAISE):
        got = beta(np.array([r]))[0]
    ref = float(beta_reference([r])[0])
    # beta is smooth with condition number <= 1 in relative terms; a few ulps of float64.
    assert got == pytest.approx(ref, rel=4e-16 * 8, abs=0.0) or (ref < 1e-300 and got <= 1e-300)
    assert 0.0 <= got <= 0.25


def test_beta_special_values():
    with np.errstate(**RAISE):
        out = beta(np.array([0.0, np.inf, -np.inf, np.nan, 1e-300, 1e300, -1e300]))
    assert out[0] == 0.25
    assert out[1] == 0.0 and out[2] == 0.0
    assert out[3] == 0.0  # NaN = (-inf) - (-inf): a zero-weight configuration, weight 0
    assert out[4] == 0.25
    assert out[5] == pytest.approx(0.5 / 1e300, rel=1e-15)
    assert out[6] == out[5]


def test_beta_taylor_coefficient_is_one_over_48():
    # (1/4 - beta(r)) / r^2 -> 1/48 as r -> 0 (an early design note printed 1/96; check which
    # is right).
    r = np.array([1e-2, 3e-3, 1e-3, 3e-4])
    ratio = (0.25 - beta_reference(r)) / LD(r) ** 2
    np.testing.assert_allclose(ratio.astype(float), 1 / 48, rtol=1e-4)
    with np.errstate(**RAISE):
        lib = (0.25 - beta(np.array([0.02, 0.05]))) / np.array([0.02, 0.05]) ** 2
    np.testing.assert_allclose(lib, 1 / 48, rtol=2e-3)


@settings(max_examples=300)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_beta_is_elementwise_even_bounded_and_shape_preserving(r):
    with np.errstate(**RAISE):
        out = beta(r)
        neg = beta(-r)
    assert out.shape == r.shape
    assert np.all((out >= 0) & (out <= 0.25))
    np.testing.assert_array_equal(out, neg)
    np.testing.assert_array_equal(out[np.isnan(r)], 0.0)


def test_beta_is_monotone_in_abs_r_on_a_dense_grid():
    r = np.concatenate([[0.0], np.logspace(-12, 300, 200_001)])
    with np.errstate(**RAISE):
        b = beta(r)
    # beta strictly decreases in |r|; allow one-ulp wobble at the series/tanh switch.
    assert np.all(np.diff(b) <= 2 * np.spacing(b[:-1]))


@settings(max_examples=1000)
@given(FINITE_R)
@example(0.0)
@example(800.0)
@example(-800.0)
@example(-1e308)
@example(1e308)
def test_sigmoid_from_log_matches_extended_precision(r):
    with np.errstate(**RAISE):
        got = sigmoid_from_log(np.array([r]))[0]
    x = LD(r)
    with np.errstate(over="ignore", under="ignore"):
        ref = float(1 / (1 + np.exp(-x))) if r >= 0 else float(np.exp(x) / (1 + np.exp(x)))
    assert got == pytest.approx(ref, rel=1e-15, abs=1e-300)
    assert 0.0 <= got <= 1.0


def test_sigmoid_from_log_special_values():
    with np.errstate(**RAISE):
        out = sigmoid_from_log(np.array([np.inf, -np.inf, np.nan, 0.0]))
    np.testing.assert_array_equal(out, [1.0, 0.0, 0.0, 0.5])


@settings(max_examples=500)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 10)),
                  elements=st.one_of(st.sampled_from([-1.0, 0.0, 2.0, -np.inf]),
                                     st.floats(-700, 700))),
       st.sampled_from(["descending", "ascending", "given"]))
def test_ordering_is_a_permutation_sorted_as_promised_and_stable(la, order):
    perm = ordering(la, order)
    assert perm.shape == la.shape
    np.testing.assert_array_equal(np.sort(perm, axis=-1), np.broadcast_to(np.arange(la.shape[1]),
                                                                           la.shape))
    s = np.take_along_axis(la, perm, axis=-1)
    for row, prow in zip(s, perm):
        if order == "descending":
            assert np.all(row[:-1] >= row[1:])
        elif order == "ascending":
            assert np.all(row[:-1] <= row[1:])
        else:
            np.testing.assert_array_equal(prow, np.arange(len(row)))
        # ties keep the input order
        if order != "given":
            for i in range(len(row) - 1):
                if row[i] == row[i + 1]:
                    assert prow[i] < prow[i + 1]


def test_ordering_rejects_unknown_order():
    with pytest.raises(ValueError, match="order"):
        ordering(np.zeros((1, 3)), "random")
