"""LogLinearModel over explicit configurations: objective, derivatives, Alg. 1 majorizer.

The objective, gradient and Hessian are recomputed in long double from their definitions
(J = sum_j [log Z_j - theta^T f_j(y_j) - log h_j(y_j)] + reg/2 ||theta||^2, grad = E_p f - f(y),
Hessian = Cov_p f); derivatives are also checked by finite differences.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import approx_fprime, check_grad

from zbound.models.base import Majorizer, Model
from zbound.models.loglinear import LogLinearModel

# Any RuntimeWarning (overflow, invalid value) from the library is a test failure.
pytestmark = pytest.mark.filterwarnings("error")

LD = np.longdouble
ORDERS = ["descending", "ascending", "given"]
RAISE = dict(over="raise", invalid="raise", divide="raise")
SUBNORMAL = np.finfo(np.float64).smallest_subnormal


def reference_ld(F, obs, lp, reg, theta):
    """(J, grad, Hessian) in long double, Hessian as a covariance (no cancellation)."""
    t, n, d = F.shape
    Fl = F.astype(LD)
    th = np.asarray(theta, dtype=LD)
    lpl = np.broadcast_to(np.asarray(0.0 if lp is None else lp, dtype=LD), (t, n))
    la = lpl + Fl @ th
    m = la.max(axis=1, keepdims=True)
    with np.errstate(under="ignore"):
        e = np.exp(la - m)
    lse = m[:, 0] + np.log(e.sum(axis=1))
    p = e / e.sum(axis=1, keepdims=True)
    rows = np.arange(t)
    J = lse.sum() - (Fl[rows, obs] @ th).sum() - lpl[rows, obs].sum() + LD(reg) / 2 * th @ th
    mu = np.einsum("tn,tnd->td", p, Fl)
    grad = mu.sum(axis=0) - Fl[rows, obs].sum(axis=0) + LD(reg) * th
    C = Fl - mu[:, None, :]
    H = np.einsum("tn,tni,tnj->ij", p, C, C) + LD(reg) * np.eye(d, dtype=LD)
    return float(J), grad.astype(float), H.astype(float)


@st.composite
def problems(draw):
    t = draw(st.integers(1, 5))
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    F = draw(hnp.arrays(np.float64, (t, n, d), elements=st.floats(-3, 3)))
    F = F * draw(st.sampled_from([1.0, 1.0, 1e-3, 20.0])) + draw(
        st.sampled_from([0.0, 0.0, 5.0, -300.0, 1e4]))          # common offset: a stress test
    obs = np.asarray(draw(hnp.arrays(np.int64, t, elements=st.integers(0, n - 1))))
    mode = draw(st.sampled_from(["none", "finite", "zeros"]))
    if mode == "none":
        lp = None
    else:
        lp = np.asarray(draw(hnp.arrays(np.float64, (t, n), elements=st.floats(-5, 5))))
        if mode == "zeros":
            lp[np.asarray(draw(hnp.arrays(np.bool_, (t, n))))] = -np.inf
            lp[np.arange(t), obs] = 0.0
    reg = draw(st.sampled_from([0.0, 1e-2, 1.0]))
    fs = max(float(np.max(np.abs(F - F.mean()))), 1e-6)
    theta = draw(hnp.arrays(np.float64, d, elements=st.floats(-3, 3))) / fs
    D = draw(hnp.arrays(np.float64, (8, d), elements=st.floats(-4, 4))) / fs
    thetas = theta + D * draw(st.sampled_from([1e-6, 0.1, 1.0, 3.0]))
    return F, obs, lp, reg, theta, thetas, draw(st.sampled_from(ORDERS))


@settings(max_examples=300)
@given(problems())
def test_objective_gradient_hessian_and_majorizer(problem):
    F, obs, lp, reg, theta, thetas, order = problem
    model = LogLinearModel(F, obs, log_prior=lp, reg=reg)
    assert isinstance(model, Model) and model.n_params == F.shape[2]
    J_ref, g_ref, H_ref = reference_ld(F, obs, lp, reg, theta)
    with np.errstate(**RAISE):
        J, g, Hc = model.value_grad_hessian(theta)
        maj = model.majorizer(theta, order=order)
    fmax = np.abs(F).max()
    t, n, d = F.shape
    sc = np.abs(F @ theta).max() + (0 if lp is None else np.abs(lp[np.isfinite(lp)]).max())
    # value: sum of t log-sum-exps, each exact to ~n ulps of its largest term
    assert J == pytest.approx(J_ref, rel=0, abs=1e-13 * t * n * (1 + sc + abs(J_ref)))
    assert model.value(theta) == J
    assert maj.value == pytest.approx(J_ref, rel=0, abs=1e-13 * t * n * (1 + sc + abs(J_ref)))
    # gradient: E_p f - f(y): ~n ulps of max|f| per sample
    # plus a few ulps of the regularizer term reg * theta; below the smallest normal number the
    # spacing of floats is absolute (5e-324), so a few subnormal steps are the floor.
    gtol = 1e-13 * (t * n * fmax + reg * np.abs(theta).max()) + 8 * SUBNORMAL
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=gtol)
    np.testing.assert_allclose(model.value_and_grad(theta)[1], g, rtol=0, atol=gtol)
    np.testing.assert_allclose(maj.grad, g_ref, rtol=0,
                               atol=gtol * (1 + abs(np.log(fmax + 1e-300))))
    # Hessian Cov_p f: accurate relative to the spread of f (not to max|f|^2, which would hide
    # cancellation in E[f f^T] - mu mu^T when f has a large common offset).
    spread = np.max(np.abs(F - F[:, :1, :]))
    H = Hc.to_dense()
    err_scale = (spread + 4e-16 * fmax) * (spread + fmax) + 1e-300
    np.testing.assert_allclose(H, H_ref, rtol=0, atol=1e-12 * t * n * err_scale)
    # majorizer: above the objective everywhere, touching at theta
    assert isinstance(maj, Majorizer)
    assert maj.evaluate(theta) == maj.value
    C = maj.curvature.to_dense()
    for th in thetas:
        truth = reference_ld(F, obs, lp, reg, th)[0]
        with np.errstate(**RAISE):
            bound = maj.evaluate(th)
        delta = np.abs(th - theta)
        # grad = E_p f - f(y) is a difference of terms of size max|f|: its rounding is
        # relative to those, hence the t * fmax * |delta|_1 term.
        scale = (1 + abs(truth) + abs(maj.value) + delta @ np.abs(maj.grad)
                 + delta @ np.abs(C) @ delta + t * sc + 2 * t * fmax * delta.sum())
        assert bound >= truth - 1e-10 * scale, (bound, truth)
    ev = np.linalg.eigvalsh(C - H_ref)
    # rounding of C and H is relative to their entries, reg on the diagonal included (with
    # features ~1e-24 the data part, ~1e-48, vanishes next to reg = 0.01 on the diagonal)
    assert ev.min() >= -1e-11 * (t * n * fmax**2 + reg)


@settings(max_examples=150)
@given(problems())
def test_derivatives_by_finite_differences(problem):
    F, obs, lp, reg, theta, _, _ = problem
    # Finite differences need moderate magnitudes: work on the centered features.
    F = F - F.mean()
    fs = np.max(np.abs(F))
    if fs == 0:
        fs = 1.0
    model = LogLinearModel(F / fs, obs, log_prior=lp, reg=reg)
    u = 3.0 * np.tanh(theta * fs)        # moderate expansion point for finite differences

    def g(v):
        return model.value_and_grad(v)[1]

    t = F.shape[0]
    h = 1e-7
    err = check_grad(model.value, g, u, epsilon=h)
    assert err <= 1e-5 * t * (1 + np.linalg.norm(g(u)))
    d = u.shape[0]
    H_fd = np.asarray(approx_fprime(u, g, h)).reshape(d, d)
    np.testing.assert_allclose(model.hessian(u).to_dense(), 0.5 * (H_fd + H_fd.T), rtol=0,
                               atol=1e-5 * t)


@pytest.mark.parametrize("order", ORDERS)
def test_majorization_steps_decrease_objective(order):
    rng = np.random.default_rng(ORDERS.index(order) + 20)
    F = rng.normal(size=(30, 5, 4))
    obs = rng.integers(0, 5, size=30)
    lp = rng.normal(size=(30, 5))
    lp[rng.random(lp.shape) < 0.2] = -np.inf
    lp[np.arange(30), obs] = 0.0
    model = LogLinearModel(F, obs, log_prior=lp, reg=0.05)
    theta = rng.normal(scale=3, size=4)
    J = model.value(theta)
    for _ in range(30):
        maj = model.majorizer(theta, order=order)
        new = maj.minimizer()
        J_new = model.value(new)
        assert J_new <= maj.evaluate(new) + 1e-10 * abs(J_new)
        assert J_new <= J + 1e-10 * abs(J)
        theta, J = new, J_new


def test_hessian_with_offset_features_stays_psd_and_accurate():
    """Features with a common offset of 1e6: Cov_p f must not be swamped by E[f f^T]."""
    rng = np.random.default_rng(0)
    F = 1e6 + rng.normal(size=(5, 6, 3))
    obs = rng.integers(0, 6, size=5)
    model = LogLinearModel(F, obs)
    theta = rng.normal(size=3) * 1e-3
    _, _, H_ref = reference_ld(F, obs, None, 0.0, theta)
    H = model.hessian(theta).to_dense()
    np.testing.assert_allclose(H, H_ref, rtol=1e-9, atol=1e-9 * np.abs(H_ref).max())
    assert np.linalg.eigvalsh(H).min() > 0


@pytest.mark.parametrize("kwargs, exc", [
    (dict(features=np.full((2, 3, 2), np.nan), observed=np.array([0, 1])), ValueError),
    (dict(features=np.full((2, 3, 2), np.inf), observed=np.array([0, 1])), ValueError),
    (dict(features=np.zeros((3, 2)), observed=np.array([0, 1, 0])), ValueError),
    (dict(features=np.zeros((0, 3, 2)), observed=np.array([], dtype=int)), ValueError),
    (dict(features=np.zeros((2, 0, 2)), observed=np.array([0, 0])), ValueError),
    (dict(features=np.zeros((2, 3, 0)), observed=np.array([0, 0])), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 3])), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([-1, 0])), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1, 2])), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0.0, 1.0])), (ValueError, TypeError)),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1]),
          log_prior=np.array([0.0, np.nan, 0.0])), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1]),
          log_prior=np.array([0.0, np.inf, 0.0])), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1]),
          log_prior=np.array([0.0, -np.inf, 0.0])), ValueError),      # observed has h = 0
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1]),
          log_prior=np.zeros(4)), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1]), reg=-1.0), ValueError),
    (dict(features=np.zeros((2, 3, 2)), observed=np.array([0, 1]), reg=np.nan), ValueError),
])
def test_bad_input(kwargs, exc):
    with pytest.raises(exc):
        LogLinearModel(**kwargs)


def test_bad_theta():
    model = LogLinearModel(np.zeros((2, 3, 2)), np.array([0, 1]))
    for bad in (np.zeros(3), np.array([np.nan, 0.0]), np.array([np.inf, 0.0])):
        with pytest.raises(ValueError):
            model.majorizer(bad)
