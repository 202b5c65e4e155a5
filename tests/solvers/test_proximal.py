"""The proximal methods (bound-cd, fista) on L1 and elastic-net softmax regression: the optimum
against a tight reference, monotone traces, the KKT stop, the analytic lambda_max, and the
refusal of the smooth methods."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.models.loss import SoftmaxLoss
from zbound.models.objective import Objective
from zbound.models.penalty import ElasticNetPenalty, soft_threshold
from zbound.solvers import minimize


def problem(seed=0, n=80, d=10, classes=2, sparse=False, intercept=True, l1=2.0, l2=0.0,
            weights=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 3.0, size=d)
    W = rng.normal(size=(classes, d)) * (rng.random((classes, d)) < 0.3)
    y = np.argmax(X @ W.T + rng.gumbel(size=(n, classes)), axis=1)
    if sparse:
        X[rng.random(X.shape) < 0.7] = 0.0
        X = sp.csr_matrix(X)
    sw = rng.uniform(0.2, 2.0, size=n) if weights else None
    loss = SoftmaxLoss(X, y, classes, sample_weight=sw, reference_class=classes == 2,
                       fit_intercept=intercept)
    k, dd = loss.k, loss.d
    L1, L2 = np.full((k, dd), l1), np.full((k, dd), l2)
    if intercept:
        L1[:, -1] = L2[:, -1] = 0.0
    return Objective(loss, ElasticNetPenalty(L1.ravel(), L2.ravel()))


_REFERENCES: dict = {}


def reference(obj, key=None):
    """FISTA to a tight tolerance (one solve per case, shared by the tests)."""
    if key is not None and key in _REFERENCES:
        return _REFERENCES[key]
    out = minimize(obj, np.zeros(obj.n_params), method="fista", tol=1e-10, max_iter=100000,
                   ftol=0.0)
    _REFERENCES[key] = out
    return out


CASES = [dict(), dict(sparse=True), dict(classes=4), dict(classes=4, sparse=True),
         dict(intercept=False), dict(l2=1.5), dict(classes=3, l2=0.5, weights=True),
         dict(weights=True, l1=8.0)]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("curvature", ["newton", "bound"])
def test_bound_cd_reaches_the_optimum_and_its_support(case, curvature):
    obj = problem(**case)
    ref = reference(obj, str(case))
    res = minimize(obj, np.zeros(obj.n_params), method="bound-cd", tol=1e-10, max_iter=5000,
                   ftol=0.0,
                   curvature=curvature)
    assert res.converged and res.info["kkt_violation"] <= 1e-10
    assert res.fun == pytest.approx(ref.fun, rel=1e-9)
    if case.get("classes", 2) == 2:     # unique (a multinomial L1 optimum need not be)
        big = np.abs(ref.x) > 1e-6
        assert np.array_equal(res.x != 0, big) or np.abs(res.x[res.x != 0]).min() < 1e-5
    assert np.all(np.diff(res.trace.objective) <= 1e-12 * abs(res.fun))       # monotone


@given(seed=st.integers(0, 10 ** 6), l1=st.floats(0.05, 50.0), classes=st.sampled_from([2, 3]))
@settings(max_examples=25, deadline=None)
def test_bound_cd_never_rises_and_stops_on_the_kkt_violation(seed, l1, classes):
    obj = problem(seed=seed, n=60, d=8, classes=classes, l1=l1)
    res = minimize(obj, np.zeros(obj.n_params), method="bound-cd", tol=1e-7, max_iter=2000,
                   ftol=0.0,
                   curvature="bound")
    assert np.all(np.diff(res.trace.objective) <= 1e-12 * max(1.0, abs(res.fun)))
    assert res.converged and res.info["kkt_violation"] <= 1e-7
    # the reported violation is the one at the returned point, relative to the largest
    # entry of the loss's gradient at zero
    _, g = obj.smooth_value_and_grad(res.x)
    _, g0 = obj.loss.value_and_grad(np.zeros(obj.n_params))
    d = obj.loss.d
    scale = np.abs(g0.reshape(-1, d)[:, :d - 1]).max()
    assert res.info["kkt_scale"] == pytest.approx(scale, rel=1e-12)
    assert obj.violation(res.x, g).max() / scale == pytest.approx(
        res.info["kkt_violation"], rel=1e-6, abs=1e-12)


def _lambda_max(obj):
    """The smallest L1 strength at which zero coefficients (intercept at its optimum) are
    optimal: ||X^T (s (p - y))||_inf, p the intercept-only fit's probability."""
    loss = obj.loss
    X, y = loss.X, loss.y
    sw = np.ones(X.shape[0]) if loss.sample_weight is None else loss.sample_weight
    p = float(sw @ (y == 1)) / float(sw.sum())
    return float(np.abs(X.T @ (sw * (p - (y == 1)))).max())


@pytest.mark.parametrize("weights", [False, True])
def test_lambda_max_is_where_the_first_feature_enters(weights):
    base = problem(seed=3, weights=weights)
    lmax = _lambda_max(base)
    for scale, nonzeros in ((1.01, 0), (0.97, 1)):
        obj = problem(seed=3, weights=weights, l1=scale * lmax)
        res = minimize(obj, np.zeros(obj.n_params), method="bound-cd", tol=1e-10)
        assert np.count_nonzero(res.x[:-1]) == nonzeros
    obj = problem(seed=3, weights=weights, l1=1e6)
    res = minimize(obj, np.zeros(obj.n_params), method="bound-cd", tol=1e-10)
    assert not res.x[:-1].any()                 # C -> 0: every coefficient exactly zero


def test_smooth_methods_refuse_an_l1_objective():
    obj = problem()
    for method in ("lbfgs", "newton-bound", "bound"):
        with pytest.raises(ValueError, match="proximal method"):
            minimize(obj, np.zeros(obj.n_params), method=method)
    assert minimize(obj, np.zeros(obj.n_params)).method == "bound-cd"     # the policy


def test_soft_threshold_and_prox():
    v = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_array_equal(soft_threshold(v, 1.0), [-2.0, 0.0, 0.0, 0.0, 2.0])
    pen = ElasticNetPenalty(1.0, 1.0)
    # prox minimizes 1/(2 step) (x - v)^2 + |x| + x^2 / 2: check against a fine grid
    grid = np.linspace(-4, 4, 80001)
    for vi in v:
        best = grid[np.argmin((grid - vi) ** 2 / (2 * 0.5) + np.abs(grid) + grid ** 2 / 2)]
        assert pen.prox(np.array([vi]), 0.5)[0] == pytest.approx(best, abs=1e-4)
    with pytest.raises(ValueError, match="L1 strength"):
        ElasticNetPenalty(-1.0)
    with pytest.raises(TypeError, match="proximal"):
        pen.curvature(3)


def test_the_interpreted_sweeps_match_the_compiled_ones():
    """Without Numba the same sweep functions run interpreted: one source, one answer."""
    from zbound.solvers import _cd_kernels as K

    if not K.COMPILED:
        pytest.skip("Numba is not installed: only the interpreted sweeps exist")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 12))
    Xc = sp.csc_matrix(np.where(rng.random(X.shape) < 0.5, X, 0.0))
    r, a = rng.normal(size=40), rng.uniform(0.05, 0.25, size=40)
    ws = np.arange(12, dtype=np.int64)
    l1, l2 = np.full(12, 0.3), np.full(12, 0.1)
    for compiled, interpreted, data in (
            (K.sweeps_dense, K.sweeps_dense.py_func, (np.asfortranarray(X),)),
            (K.sweeps_csc, K.sweeps_csc.py_func,
             (Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data))):
        outs = []
        for fn in (compiled, interpreted):
            h = np.zeros(12)
            (K.column_sq_dense if len(data) == 1 else K.column_sq_csc)(*data, ws, a, h)
            w, xi, b = np.zeros(12), np.zeros(40), np.zeros(1)
            ep = fn(*data, ws, w, h, l1, l2, r, a, xi, b, True, 50, 1e-12)
            outs.append((ep, w, xi, b))
        assert outs[0][0] == outs[1][0]
        for x, y in zip(outs[0][1:], outs[1][1:]):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


@given(u0=st.one_of(st.floats(-700, 700), st.sampled_from([0.0, 1e-300, -1e-9, 1e-4, 3e-4,
                                                            -1e-4, 40.0, -700.0])),
       d=st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, 1e-12, -1e-6])))
@settings(max_examples=300, deadline=None)
def test_the_per_class_bound_lies_above_log1p_exp_and_touches_at_plus_minus_u0(u0, d):
    """bound-cd's class bound: log(1 + e^(u0 + d)) <= log(1 + e^u0) + p d + jj(u0) d^2 / 2
    for every d (p = expit(u0)), with equality at d = 0 and at u0 + d = -u0."""
    from scipy.special import expit

    from zbound.solvers.proximal import _jj

    a = float(_jj(np.array([u0]))[0])
    f = lambda u: float(np.logaddexp(0.0, u))           # noqa: E731
    bound = f(u0) + float(expit(u0)) * d + 0.5 * a * d * d
    assert f(u0 + d) <= bound + 1e-12 * max(1.0, abs(bound))
    touch = -2.0 * u0                                    # the other point of contact
    other = f(u0) + float(expit(u0)) * touch + 0.5 * a * touch * touch
    assert abs(other - f(-u0)) <= 1e-9 * max(1.0, abs(other))
