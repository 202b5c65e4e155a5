"""The latent conditional likelihood (mixtures of Gaussian-gated logistic regressions): value
against brute force, gradient and Hessian against finite differences, the majorizer (Jensen on
the numerator + Alg. 1 on the denominator) an upper bound tight at its expansion point."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import approx_fprime

from zbound.models.latent import LatentSoftmaxLoss, latent_objective


def _problem(seed, t=25, d=3, K=3, M=2, scale=1.0, weights=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    y = np.arange(t) % K
    sw = rng.uniform(0, 2, t) if weights else None
    loss = LatentSoftmaxLoss(X, y, M, sample_weight=sw)
    theta = scale * rng.standard_normal(loss.n_params)
    return loss, theta, X, y, sw


def _brute(X, y, K, M, theta, sw=None):
    W = theta.reshape(K, M, X.shape[1] + 1)
    total = 0.0
    for j in range(X.shape[0]):
        s = np.array([[W[k, m, :-1] @ X[j] + W[k, m, -1] for m in range(M)] for k in range(K)])
        num = np.log(np.exp(s[y[j]]).sum())
        den = np.log(np.exp(s).sum())
        total += (1.0 if sw is None else sw[j]) * (den - num)
    return total


@pytest.mark.parametrize("weights", [False, True])
def test_value_matches_brute_force_and_probabilities(weights):
    loss, theta, X, y, sw = _problem(0, weights=weights)
    assert loss.value(theta) == pytest.approx(_brute(X, y, 3, 2, theta, sw), rel=1e-12)
    lp = loss.log_proba(theta)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-12)
    expect = -(lp[np.arange(len(y)), y] * (1.0 if sw is None else sw)).sum()
    assert loss.value(theta) == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_gradient_and_hessian_match_finite_differences(seed):
    loss, theta, *_ = _problem(seed, t=15, d=2, K=2, M=3, weights=seed == 2)
    f, g = loss.value_and_grad(theta)
    assert f == pytest.approx(loss.value(theta))
    g_fd = approx_fprime(theta, loss.value, 1e-6)
    np.testing.assert_allclose(g, g_fd, atol=2e-5)
    H = loss.hessian(theta).to_dense()
    H_fd = np.array([approx_fprime(theta, lambda t, i=i: loss.value_and_grad(t)[1][i], 1e-6)
                     for i in range(loss.n_params)])
    np.testing.assert_allclose(H, H_fd, atol=2e-5)
    # not convex: the Hessian of a mixture has negative directions somewhere
    assert np.allclose(H, H.T)


def test_one_component_is_multinomial_logistic_regression():
    from zbound.models.loss import SoftmaxLoss

    loss, theta, X, y, _ = _problem(3, M=1)
    ref = SoftmaxLoss(X, y, 3, fit_intercept=True)
    assert loss.value(theta) == pytest.approx(ref.value(theta), rel=1e-12)
    np.testing.assert_allclose(loss.value_and_grad(theta)[1], ref.value_and_grad(theta)[1],
                               atol=1e-12)


def _check_majorizer(loss, theta, rng, n_dirs=200):
    maj = loss.majorizer(theta)
    f, g = loss.value_and_grad(theta)
    assert maj.value == pytest.approx(f, rel=1e-12, abs=1e-12)       # tight in value ...
    np.testing.assert_allclose(maj.grad, g, atol=1e-10)              # ... and gradient
    for _ in range(n_dirs):
        delta = rng.standard_normal(loss.n_params) * rng.choice([1e-4, 1e-2, 1.0, 10.0])
        new = theta + delta
        exact = loss.value(new)
        assert exact <= maj.evaluate(new) + 1e-9 * max(1.0, abs(exact))


@pytest.mark.parametrize("order", ["descending", "ascending", "given"])
def test_majorizer_is_a_tight_upper_bound(order):
    rng = np.random.default_rng(4)
    loss, theta, *_ = _problem(4, weights=True)
    maj = loss.majorizer(theta, order)
    assert maj.value == pytest.approx(loss.value(theta))
    for _ in range(200):
        new = theta + rng.standard_normal(loss.n_params) * rng.choice([1e-3, 0.3, 3.0])
        assert loss.value(new) <= maj.evaluate(new) + 1e-9 * max(1.0, abs(loss.value(new)))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0, 300.0]),
       M=st.integers(1, 3), K=st.integers(2, 3), zero_weights=st.booleans())
def test_majorizer_bound_property(seed, scale, M, K, zero_weights):
    """Random and extreme points: large scores (near-overflow ranges), ties (scale 0: all
    scores equal), zero sample weights."""
    rng = np.random.default_rng(seed)
    t, d = 12, 2
    X = rng.standard_normal((t, d)) * rng.choice([1.0, 10.0])
    y = np.arange(t) % K
    sw = rng.uniform(0, 1, t)
    if zero_weights:
        sw[: t // 2] = 0.0
    loss = LatentSoftmaxLoss(X, y, M, sample_weight=sw)
    theta = scale * rng.standard_normal(loss.n_params)
    _check_majorizer(loss, theta, rng, n_dirs=30)
    assert np.isfinite(loss.value(theta))


def test_extreme_scores_stay_finite():
    loss, theta, *_ = _problem(5, scale=400.0)
    f, g = loss.value_and_grad(theta)
    assert np.isfinite(f) and np.all(np.isfinite(g))
    maj = loss.majorizer(theta)
    assert np.isfinite(maj.value) and np.all(np.isfinite(maj.curvature.to_dense()))


def test_penalty_and_responsibilities():
    loss, theta, X, y, _ = _problem(6)
    obj = latent_objective(X, y, 2, reg=0.5)
    assert obj.value(theta) == pytest.approx(loss.value(theta) + 0.25 * theta @ theta)
    eta = loss.responsibilities(theta)
    np.testing.assert_allclose(eta.sum(axis=1), 1.0)
    mass = loss.pair_mass(theta)
    np.testing.assert_allclose(mass.sum(axis=1), np.bincount(y))


@pytest.mark.parametrize("kwargs,match", [
    ({"n_components": 0}, "n_components must be >= 1"),
    ({"n_components": 9}, "more than the samples of class"),
    ({"y": np.zeros(10, dtype=int)}, "at least 2 classes"),
])
def test_bad_input(kwargs, match):
    X = np.random.default_rng(0).standard_normal((10, 2))
    args = {"y": np.arange(10) % 2, "n_components": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        LatentSoftmaxLoss(X, args["y"], args["n_components"])


def test_nan_is_rejected():
    X = np.ones((6, 2))
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="(?i)nan|finite"):
        LatentSoftmaxLoss(X, np.arange(6) % 2, 2)
