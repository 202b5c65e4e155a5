"""The dense Hessian capability (``value_grad_dense_hessian``): the fused two-class kernel and
the operator's dense form against a brute force on random and extreme cases, the penalties
folded in, the evaluation counted, and newton-bound taking the same steps with it as with
the Hessian operator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _rows import sample_weights
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from zbound.models.base import DenseHessian, supports
from zbound.models.loss import SoftmaxLoss
from zbound.models.multinomial import logistic_objective
from zbound.solvers import CountedModel, minimize

pytestmark = pytest.mark.numerics


def _binary_brute(X, y, sw, fit_intercept, theta):
    """Value, gradient and Hessian of the binary logistic loss row by row (log(1 + e^s) or
    log(1 + e^-s) by logaddexp, p (1 - p) by expit of both signs)."""
    X = X.toarray() if sp.issparse(X) else X
    t = X.shape[0]
    Xa = np.hstack([X, np.ones((t, 1))]) if fit_intercept else X
    s = Xa @ theta
    w = np.ones(t) if sw is None else sw
    rows = np.where(y == 1, np.logaddexp(0.0, -s), np.logaddexp(0.0, s))
    p = expit(s)
    h = expit(s) * expit(-s)
    return float(w @ rows), Xa.T @ (w * (p - y)), (Xa * (w * h)[:, None]).T @ Xa


def _same_system(model, theta, atol=1e-12):
    """The dense system of ``model`` at theta equals value_grad_hessian's with its operator's
    dense form; returns the dense Hessian."""
    f, g, H = model.value_grad_dense_hessian(theta)
    f0, g0, H0 = model.value_grad_hessian(theta)
    assert abs(f - f0) <= 1e-12 * abs(f0)
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=atol)
    np.testing.assert_allclose(H, H0.to_dense(), rtol=1e-12, atol=atol)
    return H


@settings(max_examples=1500, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_classes=st.integers(2, 4),
       fit_intercept=st.booleans(), weights=st.sampled_from(["none", "random", "zeros"]),
       sparse=st.booleans(), log_scale=st.floats(-3.0, 5.0),
       chunk=st.sampled_from([None, 1, 7]), ties=st.booleans())
def test_dense_hessian_matches_the_operator_and_brute_force(seed, n_classes, fit_intercept,
                                                            weights, sparse, log_scale, chunk,
                                                            ties):
    """Every loss form, sample weights with zeros, CSR, chunks down to one row, tied scores
    (theta = 0) and parameters from 1e-3 to 1e5 (scores near 1e6: e^s overflows, the kernel
    must not): the value and gradient equal value_and_grad's, the matrix the operator's dense
    form, and for two classes a brute force."""
    rng = np.random.default_rng(seed)
    t, dx = int(rng.integers(1, 60)), int(rng.integers(1, 6))
    X = rng.standard_normal((t, dx))
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    y = rng.integers(0, n_classes, t)
    sw = sample_weights(rng, weights, t)
    loss = SoftmaxLoss(X, y, n_classes, sample_weight=sw, reference_class=n_classes == 2,
                       chunk_size=chunk, fit_intercept=fit_intercept)
    theta = np.zeros(loss.n_params) if ties else \
        rng.standard_normal(loss.n_params) * 10.0 ** log_scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            f, g, H = loss.value_grad_dense_hessian(theta)
    f0, g0, H0 = loss.value_grad_hessian(theta)
    assert isinstance(H, np.ndarray) and H.shape == (loss.n_params, loss.n_params)
    assert np.isfinite(f) and np.isfinite(g).all() and np.isfinite(H).all()
    scale = max(1.0, abs(f0))
    assert abs(f - f0) <= 1e-12 * scale
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(g0).max()))
    D = H0.to_dense()
    np.testing.assert_allclose(H, D, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(D).max()))
    np.testing.assert_array_equal(H, H.T)
    if n_classes == 2:
        fb, gb, Hb = _binary_brute(X, y, sw, fit_intercept, theta)
        assert abs(f - fb) <= 1e-9 * max(1.0, abs(fb))
        np.testing.assert_allclose(g, gb, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(gb).max()))
        np.testing.assert_allclose(H, Hb, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(Hb).max()))


def test_curvature_of_well_fitted_rows_keeps_its_digits():
    """Scores of +-30: p (1 - p) ~ 1e-13, which 1 - p computed as a difference would round
    to a few digits; the kernel's e / (1 + e)^2 keeps them."""
    X = np.array([[30.0], [-30.0], [35.0]])
    loss = SoftmaxLoss(X, np.array([1, 0, 1]), 2, reference_class=True)
    _, _, H = loss.value_grad_dense_hessian(np.ones(1))
    ref = sum(x * x * expit(x) * expit(-x) for x in (30.0, -30.0, 35.0))
    assert abs(H[0, 0] - ref) <= 1e-14 * ref


@pytest.mark.parametrize("n_classes", [2, 4])
def test_objective_folds_the_penalties_into_the_dense_hessian(n_classes):
    rng = np.random.default_rng(n_classes)
    X = rng.standard_normal((50, 4))
    y = rng.integers(0, n_classes, 50)
    k = 1 if n_classes == 2 else n_classes
    pen = rng.uniform(0.1, 2.0, k * 5)
    obj = logistic_objective(X, y, n_classes, pen, center=0.0 if k == 1 else 3.0,
                             fit_intercept=True)
    theta = rng.standard_normal(obj.n_params)
    _same_system(obj, theta)


def test_counted_model_counts_the_dense_hessian_as_an_evaluation():
    rng = np.random.default_rng(0)
    obj = logistic_objective(rng.standard_normal((30, 3)), rng.integers(0, 2, 30), 2,
                             np.ones(3))
    m = CountedModel(obj)
    assert supports(m, DenseHessian)
    m.value_grad_dense_hessian(np.zeros(3))
    assert m.counts["value_grad_hessian"] == 1 and m.n_evals == 1


class _OperatorOnly:
    """The objective without the dense capability: newton-bound's operator path."""

    def __init__(self, model):
        self.model = model
        self.n_params = model.n_params

    def value(self, x):
        return self.model.value(x)

    def value_and_grad(self, x):
        return self.model.value_and_grad(x)

    def value_grad_hessian(self, x):
        return self.model.value_grad_hessian(x)

    def hessian(self, x):
        return self.model.hessian(x)

    def majorizer(self, x, order="descending"):
        return self.model.majorizer(x, order)


@pytest.mark.parametrize("C", [1e-2, 1.0, 1e4])
def test_newton_bound_takes_the_same_steps_with_the_dense_hessian(C):
    """Nearly separable rows at weak regularization too: the same iterations, objective and
    point as through the operator, and a monotone objective."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 8))
    y = (X @ rng.standard_normal(8) + 0.3 * rng.standard_normal(300) > 0).astype(int)
    pen = np.full(9, 1.0 / C)
    pen[-1] = 0.0
    obj = logistic_objective(X, y, 2, pen, fit_intercept=True)
    assert supports(obj, DenseHessian)
    x0 = np.zeros(9)
    dense = minimize(obj, x0, method="newton-bound", tol=1e-10)
    plain = minimize(_OperatorOnly(obj), x0, method="newton-bound", tol=1e-10)
    assert dense.converged and plain.converged
    assert dense.nit == plain.nit
    assert abs(dense.fun - plain.fun) <= 1e-12 * abs(plain.fun)
    np.testing.assert_allclose(dense.x, plain.x, rtol=1e-8, atol=1e-8)
    f = dense.trace.objective
    assert np.all(np.diff(f) <= 1e-13 * np.abs(f[:-1]))


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_soft_labels_keep_their_own_value_and_gradient(fit_intercept):
    """A subclass that changes the value and gradient (the mixture's soft labels) gets its
    own with the dense Hessian, not the hard-label kernel's."""
    from zbound.moe.model import SoftLabelSoftmaxLoss

    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 3))
    R = rng.dirichlet(np.ones(2), 40)
    loss = SoftLabelSoftmaxLoss(X, R, rng.uniform(0.5, 2.0, 40), fit_intercept=fit_intercept)
    theta = rng.standard_normal(loss.n_params)
    _same_system(loss, theta)


@pytest.mark.parametrize("weights", ["none", "random"])
def test_rows_beyond_one_block_take_the_blocked_kernel(weights):
    """More rows than one block of the fused kernel (``_BINARY_BLOCK``): the blocked value
    and gradient with the Gram matrix, equal to the operator's dense form."""
    from zbound.models.loss import _BINARY_BLOCK

    rng = np.random.default_rng(7)
    t = _BINARY_BLOCK + 808
    X = rng.standard_normal((t, 4))
    y = (X[:, 0] + rng.standard_normal(t) > 0).astype(int)
    sw = sample_weights(rng, weights, t)
    loss = SoftmaxLoss(X, y, 2, sample_weight=sw, reference_class=True, fit_intercept=True)
    assert len(loss._chunks) == 1
    theta = rng.standard_normal(loss.n_params) * 3.0
    H = _same_system(loss, theta, atol=1e-9)
    Hb = _binary_brute(X, y, sw, True, theta)[2]
    np.testing.assert_allclose(H, Hb, rtol=1e-9)
