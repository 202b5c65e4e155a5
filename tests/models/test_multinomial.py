"""MultinomialLogistic: objective, derivatives and the Alg. 1 majorizer.

The objective is recomputed independently (long-double log-sum-exp of the scores minus the
observed score, plus reg/2 ||theta||^2); derivatives are checked by finite differences; the
majorizer must lie above the objective everywhere and touch it at its expansion point.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import approx_fprime, check_grad

from zbound.bounds.curvature import Curvature
from zbound.models.base import Majorizer, Model
from zbound.models.multinomial import MultinomialLogistic

# Any RuntimeWarning (overflow, invalid value) from the library is a test failure.
pytestmark = pytest.mark.filterwarnings("error")

LD = np.longdouble
ORDERS = ["descending", "ascending", "given"]
RAISE = dict(over="raise", invalid="raise", divide="raise")


def objective_ld(X, y, n, reg, theta):
    X = X.toarray() if sp.issparse(X) else X
    W = np.asarray(theta, dtype=LD).reshape(n, X.shape[1])
    S = X.astype(LD) @ W.T
    m = S.max(axis=1, keepdims=True)
    lse = (m[:, 0] + np.log(np.exp(S - m).sum(axis=1)))
    return float(lse.sum() - S[np.arange(len(y)), y].sum() + LD(reg) / 2 * (W * W).sum())


@st.composite
def problems(draw):
    t = draw(st.integers(1, 8))
    d = draw(st.integers(1, 4))
    n = draw(st.integers(2, 4))
    X = draw(hnp.arrays(np.float64, (t, d), elements=st.floats(-3, 3)))
    X *= draw(st.sampled_from([1.0, 1.0, 1e-3, 30.0]))
    y = np.asarray(draw(hnp.arrays(np.int64, t, elements=st.integers(0, n - 1))))
    reg = draw(st.sampled_from([0.0, 1e-2, 1.0]))
    theta = draw(hnp.arrays(np.float64, n * d, elements=st.floats(-3, 3)))
    thetas = theta + draw(hnp.arrays(np.float64, (10, n * d), elements=st.floats(-4, 4))) * \
        draw(st.sampled_from([1e-6, 0.1, 1.0, 3.0]))
    return X, y, n, reg, theta, thetas, draw(st.booleans()), draw(st.sampled_from(ORDERS))


@settings(max_examples=300)
@given(problems())
def test_majorizer_is_above_objective_and_touches(problem):
    X, y, n, reg, theta, thetas, sparse, order = problem
    model = MultinomialLogistic(sp.csr_matrix(X) if sparse else X, y, n_classes=n, reg=reg)
    assert isinstance(model, Model)
    with np.errstate(**RAISE):
        maj = model.majorizer(theta, order=order)
        J, g = model.value_and_grad(theta)
    assert isinstance(maj, Majorizer) and isinstance(maj.curvature, Curvature)
    J_ref = objective_ld(X, y, n, reg, theta)
    assert J == pytest.approx(J_ref, rel=1e-12, abs=1e-12)
    assert maj.value == pytest.approx(J_ref, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(maj.grad, g, rtol=1e-12, atol=1e-12 * (1 + np.abs(X).sum()))
    assert maj.evaluate(theta) == maj.value
    C = maj.curvature.to_dense()
    for th in thetas:
        with np.errstate(**RAISE):
            bound = maj.evaluate(th)
        truth = objective_ld(X, y, n, reg, th)
        delta = np.abs(th - theta)
        scale = (1 + abs(truth) + abs(maj.value) + delta @ np.abs(maj.grad)
                 + delta @ np.abs(C) @ delta)
        assert bound >= truth - 1e-10 * scale, (bound, truth)
    # The majorizer curvature dominates the exact Hessian.
    H = model.hessian(theta).to_dense()
    assert np.linalg.eigvalsh(C - H).min() >= -1e-12 * (1 + np.abs(C).max())


@settings(max_examples=150)
@given(problems())
def test_derivatives_by_finite_differences(problem):
    X, y, n, reg, theta, _, sparse, _ = problem
    model = MultinomialLogistic(sp.csr_matrix(X) if sparse else X, y, n_classes=n, reg=reg)
    xs = 1 + np.abs(X).max()
    # Forward differences with h = 1e-7 * (natural scale): error ~ h * |Hessian| + eps/h.
    h = 1e-7 / xs

    def f(th):
        return model.value(th)

    def g(th):
        return model.value_and_grad(th)[1]

    err = check_grad(f, g, theta, epsilon=h)
    assert err <= 1e-4 * xs * len(y) * (1 + np.linalg.norm(g(theta)))
    Jv, gv, Hc = model.value_grad_hessian(theta)
    assert Jv == model.value(theta)
    np.testing.assert_array_equal(gv, g(theta))
    H = Hc.to_dense()
    np.testing.assert_allclose(H, H.T, atol=1e-12 * xs * xs * len(y))
    H_fd = approx_fprime(theta, g, h)
    np.testing.assert_allclose(H, 0.5 * (H_fd + H_fd.T), rtol=0,
                               atol=1e-4 * xs * xs * len(y))
    np.testing.assert_allclose(model.hessian(theta).to_dense(), H)


def test_hessian_matches_closed_form():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 4, size=30)
    model = MultinomialLogistic(X, y, n_classes=4, reg=0.5)
    theta = rng.normal(size=12)
    S = X @ theta.reshape(4, 3).T
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    H = sum(np.kron(np.diag(p) - np.outer(p, p), np.outer(x, x)) for p, x in zip(P, X))
    np.testing.assert_allclose(model.hessian(theta).to_dense(), H + 0.5 * np.eye(12), atol=1e-12)
    np.testing.assert_allclose(model.predict_proba(theta), P, atol=1e-14)
    np.testing.assert_allclose(model.predict_proba(theta, X[:5]), P[:5], atol=1e-14)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("sparse", [False, True])
def test_majorization_steps_decrease_objective(order, sparse):
    """MM: minimizing the majorizer never increases the objective (Alg. 2 monotonicity)."""
    rng = np.random.default_rng(ORDERS.index(order))
    X = rng.normal(size=(60, 4))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = rng.integers(0, 3, size=60)
    model = MultinomialLogistic(sp.csr_matrix(X) if sparse else X, y, reg=0.1)
    theta = rng.normal(scale=3, size=model.n_params)
    J = model.value(theta)
    for it in range(25):
        maj = model.majorizer(theta, order=order)
        method = "cg" if it % 2 else "cholesky"
        new = maj.minimizer(method=method)
        assert maj.evaluate(new) <= maj.value + 1e-12 * abs(maj.value)
        J_new = model.value(new)
        assert J_new <= maj.evaluate(new) + 1e-10 * abs(J_new)
        assert J_new <= J + 1e-10 * abs(J)
        theta, J = new, J_new


def test_majorizer_sweep_many_points():
    rng = np.random.default_rng(5)
    checks = 0
    for it in range(30):
        t, d, n = 40, int(rng.integers(1, 5)), int(rng.integers(2, 6))
        X = rng.normal(scale=rng.choice([0.1, 1.0, 10.0]), size=(t, d))
        y = rng.integers(0, n, size=t)
        model = MultinomialLogistic(X, y, n_classes=n, reg=float(rng.choice([0.0, 1.0])))
        theta = rng.normal(scale=2, size=n * d)
        maj = model.majorizer(theta, order=ORDERS[it % 3])
        C = maj.curvature.to_dense()
        D = rng.normal(scale=rng.choice([1e-3, 0.3, 2.0]), size=(100, n * d))
        bound = maj.value + D @ maj.grad + 0.5 * np.einsum("mi,ij,mj->m", D, C, D)
        truth = np.array([objective_ld(X, y, n, model.reg, theta + dd) for dd in D])
        assert np.all(bound >= truth - 1e-10 * (1 + np.abs(truth) + np.abs(bound)))
        checks += len(D)
    assert checks == 3000


@pytest.mark.parametrize("X, y, kwargs, exc", [
    (np.array([[np.nan, 1.0], [0.0, 1.0]]), np.array([0, 1]), {}, ValueError),
    (np.array([[np.inf, 1.0], [0.0, 1.0]]), np.array([0, 1]), {}, ValueError),
    (sp.csr_matrix(np.array([[np.nan, 1.0], [0.0, 1.0]])), np.array([0, 1]), {}, ValueError),
    (np.ones((2, 2)), np.array([0.0, 1.0]), {}, TypeError),           # non-integer y
    (np.ones((2, 2)), np.array([0.5, 1.0]), {}, TypeError),
    (np.ones((2, 2)), np.array(["a", "b"]), {}, TypeError),
    (np.ones((2, 2)), np.array([0, 2]), {"n_classes": 2}, ValueError),  # y out of range
    (np.ones((2, 2)), np.array([-1, 1]), {}, ValueError),
    (np.ones((2, 2)), np.array([0, 0]), {}, ValueError),               # single class
    (np.ones((2, 2)), np.array([0, 0]), {"n_classes": 1}, ValueError),
    (np.ones((2, 2)), np.array([0, 1, 1]), {}, ValueError),            # wrong length
    (np.ones((2, 2)), np.array([[0, 1]]), {}, ValueError),
    (np.ones(2), np.array([0, 1]), {}, ValueError),                    # 1-D X
    (np.ones((0, 2)), np.array([], dtype=int), {}, ValueError),        # empty
    (np.ones((2, 0)), np.array([0, 1]), {}, ValueError),
    (np.ones((2, 2)), np.array([0, 1]), {"reg": -1.0}, ValueError),
    (np.ones((2, 2)), np.array([0, 1]), {"reg": np.nan}, ValueError),
    (np.ones((2, 2)), np.array([0, 1]), {"reg": np.inf}, ValueError),
])
def test_bad_input(X, y, kwargs, exc):
    with pytest.raises(exc):
        MultinomialLogistic(X, y, **kwargs)


def test_bad_theta():
    model = MultinomialLogistic(np.ones((3, 2)), np.array([0, 1, 2]))
    with pytest.raises(ValueError):
        model.majorizer(np.zeros(5))
    with pytest.raises(ValueError):
        model.majorizer(np.array([np.nan] + [0.0] * 5))
    with pytest.raises(ValueError):
        model.majorizer(np.array([np.inf] + [0.0] * 5))
