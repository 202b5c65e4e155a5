"""SoftmaxCurvature: the structured Hessian product equals the Kronecker sum it stands for."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.bounds.curvature import KroneckerCurvature, SoftmaxCurvature


def _explicit(X, P, reg):
    """sum_j (diag p_j - p_j p_j^T) (x) x_j x_j^T + reg I with np.kron, no library code."""
    t, n = P.shape
    d = X.shape[1]
    out = reg * np.eye(n * d)
    for j in range(t):
        B = np.diag(P[j]) - np.outer(P[j], P[j])
        out += np.kron(B, np.outer(X[j], X[j]))
    return out


@settings(max_examples=200)
@given(t=st.integers(1, 12), n=st.integers(1, 5), d=st.integers(1, 5),
       scale=st.sampled_from([0.0, 1.0, 30.0, 800.0]), reg=st.sampled_from([0.0, 0.5, 1e3]),
       seed=st.integers(0, 2**31 - 1), sparse=st.booleans())
def test_products_match_the_explicit_matrix(t, n, d, scale, reg, seed, sparse):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(t, d))
    S = scale * rng.normal(size=(t, n))
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)              # includes near one-hot rows at scale 800
    ref = _explicit(X, P, reg)
    C = SoftmaxCurvature(sp.csr_matrix(X) if sparse else X, P, reg)
    v = rng.normal(size=n * d)
    tol = 1e-12 * (1 + np.abs(ref).max()) * (1 + np.abs(v).max())
    np.testing.assert_allclose(C.matvec(v), ref @ v, rtol=0, atol=tol)
    np.testing.assert_allclose(C.diagonal(), np.diag(ref), rtol=0, atol=tol)
    np.testing.assert_allclose(C.to_dense(), ref, rtol=0, atol=tol)
    # same operator as the generic Kronecker sum built from its B
    K = KroneckerCurvature(X, C.B, reg)
    np.testing.assert_allclose(K.matvec(v), C.matvec(v), rtol=0, atol=tol)


def test_rejects_mismatched_probabilities():
    with pytest.raises(ValueError, match="P must have shape"):
        SoftmaxCurvature(np.ones((3, 2)), np.ones((4, 2)) / 2)
