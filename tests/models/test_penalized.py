"""logistic_objective (the estimator's objective: SoftmaxLoss + L2Penalty + InterceptCentering):
value against an independent long-double
computation, derivatives by finite differences, and the Alg. 1 majorizer above the objective."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import approx_fprime

from zbound.models.base import Model
from zbound.models.multinomial import logistic_objective as PenalizedLogistic

pytestmark = pytest.mark.filterwarnings("error")

LD = np.longdouble


def objective_ld(X, y, n_classes, pen, sw, center, theta):
    """sum_j s_j log-loss_j + 1/2 sum pen theta^2 + center/2 (sum of intercepts)^2."""
    X = X.toarray() if sp.issparse(X) else X
    d = X.shape[1]
    k = 1 if n_classes == 2 else n_classes
    W = np.asarray(theta, dtype=LD).reshape(k, d)
    S = X.astype(LD) @ W.T
    if n_classes == 2:
        S = np.hstack([np.zeros((S.shape[0], 1), dtype=LD), S])
    m = S.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(S - m).sum(axis=1))
    loss = (sw.astype(LD) * (lse - S[np.arange(len(y)), y])).sum()
    th = np.asarray(theta, dtype=LD)
    icpt = W[:, -1].sum()
    return float(loss + (pen.astype(LD) * th * th).sum() / 2 + LD(center) / 2 * icpt * icpt)


@st.composite
def problems(draw):
    t = draw(st.integers(1, 9))
    d = draw(st.integers(1, 4))
    n = draw(st.integers(2, 4))
    X = draw(hnp.arrays(np.float64, (t, d), elements=st.floats(-3, 3)))
    X[:, -1] = 1.0                                   # intercept column, as the estimator adds
    y = np.asarray(draw(hnp.arrays(np.int64, t, elements=st.integers(0, n - 1))))
    k = 1 if n == 2 else n
    pen = draw(st.sampled_from([0.0, 1e-2, 1.0])) * np.ones((k, d))
    pen[:, -1] = 0.0
    sw = draw(hnp.arrays(np.float64, t, elements=st.sampled_from([0.0, 0.5, 1.0, 3.0])))
    center = draw(st.sampled_from([0.0, 0.7]))
    theta = draw(hnp.arrays(np.float64, k * d, elements=st.floats(-3, 3)))
    step = draw(hnp.arrays(np.float64, (8, k * d), elements=st.floats(-4, 4)))
    scale = draw(st.sampled_from([1e-6, 0.1, 1.0, 3.0]))
    return X, y, n, pen.ravel(), sw, center, theta, theta + scale * step, draw(st.booleans())


@settings(max_examples=300)
@given(problems())
def test_value_and_majorizer(problem):
    X, y, n, pen, sw, center, theta, others, sparse = problem
    Xm = sp.csr_matrix(X) if sparse else X
    model = PenalizedLogistic(Xm, y, n, pen, sw, center)
    assert isinstance(model, Model)
    f = model.value(theta)
    assert f == pytest.approx(objective_ld(X, y, n, pen, sw, center, theta), rel=1e-12,
                              abs=1e-12)
    f2, g = model.value_and_grad(theta)
    assert f2 == f
    maj = model.majorizer(theta)
    assert maj.value == pytest.approx(f, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(maj.grad, g, rtol=1e-10, atol=1e-10)
    for th in others:
        delta = th - theta
        upper = maj.value + g @ delta + 0.5 * delta @ maj.curvature.matvec(delta)
        assert model.value(th) <= upper + 1e-9 * max(1.0, abs(upper))


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("sparse", [False, True])
def test_derivatives_by_finite_differences(n, sparse):
    rng = np.random.default_rng(n)
    t, d = 30, 4
    X = np.hstack([rng.normal(size=(t, d - 1)), np.ones((t, 1))])
    y = rng.integers(0, n, t)
    k = 1 if n == 2 else n
    pen = np.full((k, d), 0.3)
    pen[:, -1] = 0.0
    sw = rng.random(t) * 2
    model = PenalizedLogistic(sp.csr_matrix(X) if sparse else X, y, n, pen.ravel(), sw, 0.4)
    theta = rng.normal(size=k * d)
    f, g, H = model.value_grad_hessian(theta)
    np.testing.assert_allclose(g, approx_fprime(theta, model.value, 1e-7), rtol=1e-5,
                               atol=1e-5)
    Hfd = np.column_stack([(model.value_and_grad(theta + 1e-6 * e)[1]
                            - model.value_and_grad(theta - 1e-6 * e)[1]) / 2e-6
                           for e in np.eye(k * d)])
    Hd = H.to_dense()
    np.testing.assert_allclose(Hd, Hfd, rtol=1e-5, atol=1e-5)
    v = rng.normal(size=k * d)
    np.testing.assert_allclose(H.matvec(v), Hd @ v, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(H.diagonal(), np.diag(Hd), rtol=1e-10, atol=1e-10)
    if not sparse:
        blocks = H.diagonal_blocks()
        for a in range(k):
            np.testing.assert_allclose(blocks[a], Hd[a * d:(a + 1) * d, a * d:(a + 1) * d],
                                       rtol=1e-10, atol=1e-10)
    # the bound curvature dominates the Hessian (Alg. 1 is an upper bound on log Z)
    C = model.majorizer(theta).curvature.to_dense()
    assert np.linalg.eigvalsh(C - Hd).min() >= -1e-8
