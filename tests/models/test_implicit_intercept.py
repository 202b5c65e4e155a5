"""SoftmaxLoss(fit_intercept=True) equals the loss on X with an explicit column of ones."""

import numpy as np
import pytest
import scipy.sparse as sp

from zbound.models.loss import SoftmaxLoss
from zbound.models.multinomial import logistic_objective


def _problem(seed, t, d, n, sparse):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(t, d))
    if sparse:
        X[rng.random((t, d)) < 0.6] = 0.0
    y = rng.integers(0, n, size=t)
    y[:n] = np.arange(n)
    sw = rng.uniform(0.2, 2.0, size=t)
    Xa = np.hstack([X, np.ones((t, 1))])
    if sparse:
        return sp.csr_matrix(X), sp.csr_matrix(Xa), y, sw
    return X, Xa, y, sw


CASES = [(seed, sparse, reference, weighted, chunk)
         for seed, sparse, reference, weighted, chunk in [
             (0, False, False, False, None), (1, True, False, True, None),
             (2, False, True, True, None), (3, True, True, False, None),
             (4, False, False, True, 7), (5, True, False, False, 9)]]


@pytest.mark.parametrize("seed,sparse,reference,weighted,chunk", CASES)
def test_implicit_intercept_matches_explicit_column(seed, sparse, reference, weighted, chunk):
    n = 2 if reference else 4
    X, Xa, y, sw = _problem(seed, 23, 5, n, sparse)
    sw = sw if weighted else None
    implicit = SoftmaxLoss(X, y, n, sw, reference, chunk, fit_intercept=True)
    explicit = SoftmaxLoss(Xa, y, n, sw, reference, chunk)
    assert implicit.n_params == explicit.n_params and implicit.d == explicit.d
    rng = np.random.default_rng(seed + 100)
    theta = rng.normal(size=explicit.n_params)
    v = rng.normal(size=explicit.n_params)
    np.testing.assert_allclose(implicit.value(theta), explicit.value(theta), rtol=1e-13)
    fi, gi, Hi = implicit.value_grad_hessian(theta)
    fe, ge, He = explicit.value_grad_hessian(theta)
    np.testing.assert_allclose(fi, fe, rtol=1e-13)
    np.testing.assert_allclose(gi, ge, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Hi.matvec(v), He.matvec(v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Hi.diagonal(), He.diagonal(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Hi.to_dense(), He.to_dense(), rtol=1e-12, atol=1e-12)
    for order in ("descending", "ascending"):
        mi, me = implicit.majorizer(theta, order), explicit.majorizer(theta, order)
        np.testing.assert_allclose(mi.value, me.value, rtol=1e-13)
        np.testing.assert_allclose(mi.grad, me.grad, rtol=1e-12, atol=1e-12)
        Ci, Ce = mi.curvature, me.curvature
        np.testing.assert_allclose(Ci.matvec(v), Ce.matvec(v), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Ci.diagonal(), Ce.diagonal(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Ci.to_dense(), Ce.to_dense(), rtol=1e-12, atol=1e-12)
    if not sparse and chunk is None:
        np.testing.assert_allclose(Hi.diagonal_blocks(), He.diagonal_blocks(), rtol=1e-12,
                                   atol=1e-12)
        Ci = implicit.majorizer(theta).curvature
        Ce = explicit.majorizer(theta).curvature
        np.testing.assert_allclose(Ci.diagonal_blocks(), Ce.diagonal_blocks(), rtol=1e-12,
                                   atol=1e-12)
    Xq = X[:3]
    np.testing.assert_allclose(implicit.predict_proba(theta, Xq),
                               explicit.predict_proba(theta, Xa[:3]), rtol=1e-12)
    rows = np.arange(0, 23, 2)
    np.testing.assert_allclose(implicit.subset(rows).value(theta),
                               explicit.subset(rows).value(theta), rtol=1e-13)


@pytest.mark.parametrize("sparse", [False, True])
def test_logistic_objective_implicit_intercept(sparse):
    X, Xa, y, sw = _problem(7, 30, 4, 3, sparse)
    pen = np.tile(np.r_[np.full(4, 0.5), 0.0], 3)
    a = logistic_objective(X, y, 3, pen, sw, 2.0, fit_intercept=True)
    b = logistic_objective(Xa, y, 3, pen, sw, 2.0)
    theta = np.random.default_rng(0).normal(size=15)
    v = np.random.default_rng(1).normal(size=15)
    fa, ga, Ha = a.value_grad_hessian(theta)
    fb, gb, Hb = b.value_grad_hessian(theta)
    np.testing.assert_allclose(fa, fb, rtol=1e-13)
    np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Ha.matvec(v), Hb.matvec(v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Ha.to_dense(), Hb.to_dense(), rtol=1e-12, atol=1e-12)
    # the preconditioners agree too (same class blocks, whatever form the shape picks)
    np.testing.assert_allclose(Ha.preconditioner()(v), Hb.preconditioner()(v), rtol=1e-9,
                               atol=1e-12)
