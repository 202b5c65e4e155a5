"""Curvature operators against dense numpy built independently (np.kron of the blocks)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zbound.bounds.curvature import (
    Curvature,
    DenseCurvature,
    KroneckerCurvature,
    ScaledIdentity,
    SumCurvature,
)

# Any RuntimeWarning (overflow, invalid value) from the library is a test failure.
pytestmark = pytest.mark.filterwarnings("error")


def dense_kron(X, B, reg):
    X = X.toarray() if sp.issparse(X) else X
    n, d = B.shape[1], X.shape[1]
    C = sum(np.kron(B[j], np.outer(X[j], X[j])) for j in range(X.shape[0]))
    return C + reg * np.eye(n * d)


@st.composite
def kron_problems(draw):
    t = draw(st.integers(1, 6))
    n = draw(st.integers(1, 4))
    d = draw(st.integers(1, 4))
    X = draw(hnp.arrays(np.float64, (t, d), elements=st.floats(-3, 3)))
    if draw(st.booleans()):
        X[np.asarray(draw(hnp.arrays(np.bool_, (t, d))))] = 0.0
    A = draw(hnp.arrays(np.float64, (t, n, n), elements=st.floats(-2, 2)))
    B = A @ np.swapaxes(A, 1, 2)                     # symmetric PSD per sample
    reg = draw(st.sampled_from([0.0, 1e-3, 1.0, 10.0]))
    v = draw(hnp.arrays(np.float64, n * d, elements=st.floats(-5, 5)))
    return X, B, reg, v, draw(st.booleans())


@pytest.mark.slow
@settings(max_examples=400)
@given(kron_problems())
def test_kronecker_matches_dense(problem):
    X, B, reg, v, sparse = problem
    Xin = sp.csr_matrix(X) if sparse else X
    C = KroneckerCurvature(Xin, B, reg)
    D = dense_kron(X, B, reg)
    scale = 1.0 + np.max(np.abs(D))
    assert C.shape == D.shape
    np.testing.assert_allclose(C.to_dense(), D, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(C.diagonal(), np.diag(D), rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(C.matvec(v), D @ v, rtol=0,
                               atol=1e-13 * scale * (1 + np.abs(v).sum()))
    assert C.quad(v) == pytest.approx(v @ D @ v, rel=1e-12, abs=1e-12 * scale * (1 + v @ v))
    lo = C.as_linear_operator()
    np.testing.assert_allclose(lo.matvec(v), D @ v, rtol=0,
                               atol=1e-13 * scale * (1 + np.abs(v).sum()))


@pytest.mark.slow
@settings(max_examples=200)
@given(kron_problems().filter(lambda p: p[2] > 0))
def test_kronecker_solves(problem):
    X, B, reg, v, sparse = problem
    Xin = sp.csr_matrix(X) if sparse else X
    C = KroneckerCurvature(Xin, B, reg)
    D = dense_kron(X, B, reg)
    want = np.linalg.solve(D, v)
    cond = np.linalg.cond(D)
    x = C.solve(v, method="cholesky")
    np.testing.assert_allclose(x, want, rtol=0, atol=1e-12 * cond * (1 + np.abs(want).max()))
    x = C.solve(v, method="cg", rtol=1e-12)
    # CG stops on the relative residual; check the residual, which is what it promises.
    assert np.linalg.norm(D @ x - v) <= 1e-9 * (1 + np.linalg.norm(v)) * max(1.0, cond) ** 0.5


def test_kronecker_cg_partial_solve_decreases_majorizer_and_x0():
    """Any partial CG solve from 0 decreases q(x) = x^T C x / 2 - g^T x."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    A = rng.normal(size=(40, 4, 4))
    C = KroneckerCurvature(X, A @ np.swapaxes(A, 1, 2), 0.01)
    D = C.to_dense()
    g = rng.normal(size=24)
    q = [0.0]
    for it in range(1, 30):
        x = C.solve(g, method="cg", maxiter=it)
        q.append(0.5 * x @ D @ x - g @ x)
    assert np.all(np.diff(q) <= 1e-10 * np.abs(q[-1]))
    exact = np.linalg.solve(D, g)
    x = C.solve(g, method="cg", x0=exact)
    np.testing.assert_allclose(x, exact, rtol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
def test_kronecker_diagonal_squares_x_block_by_block(monkeypatch, sparse):
    """The diagonal squares X a block of rows at a time: with blocks of a few rows, sparse and
    dense, it is still the diagonal of the assembled curvature."""
    import zbound.bounds.curvature as curvature

    monkeypatch.setattr(curvature, "_SQUARE_BLOCK_ELEMS", 16)
    rng = np.random.default_rng(4)
    X = sp.random(203, 12, density=0.3, random_state=5, format="csr")
    A = rng.normal(size=(203, 3, 3))
    C = KroneckerCurvature(X if sparse else X.toarray(), A @ np.swapaxes(A, 1, 2), 0.5)
    np.testing.assert_allclose(C.diagonal(), np.diagonal(C.to_dense()), rtol=1e-12)


def test_kronecker_sparse_equals_dense_large():
    rng = np.random.default_rng(2)
    X = sp.random(300, 50, density=0.05, random_state=3, format="csr")
    A = rng.normal(size=(300, 5, 5))
    B = A @ np.swapaxes(A, 1, 2)
    Cs = KroneckerCurvature(X, B, 0.5)
    Cd = KroneckerCurvature(X.toarray(), B, 0.5)
    v = rng.normal(size=250)
    np.testing.assert_allclose(Cs.matvec(v), Cd.matvec(v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Cs.diagonal(), Cd.diagonal(), rtol=1e-12)
    np.testing.assert_allclose(Cs.to_dense(), Cd.to_dense(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Cs.solve(v, "cg"), Cd.solve(v, "cholesky"), rtol=1e-6,
                               atol=1e-8)


def test_kronecker_rejects_bad_B():
    with pytest.raises(ValueError):
        KroneckerCurvature(np.ones((3, 2)), np.ones((2, 2, 2)))
    with pytest.raises(ValueError):
        KroneckerCurvature(np.ones((3, 2)), np.ones((3, 2, 3)))


def test_dense_identity_and_sum():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 5))
    M = A @ A.T
    v = rng.normal(size=5)
    Dc = DenseCurvature(M, reg=0.3)
    np.testing.assert_allclose(Dc.to_dense(), M + 0.3 * np.eye(5))
    np.testing.assert_allclose(Dc.matvec(v), (M + 0.3 * np.eye(5)) @ v)
    np.testing.assert_allclose(Dc.diagonal(), np.diag(M) + 0.3)
    np.testing.assert_allclose(Dc.solve(v), np.linalg.solve(M + 0.3 * np.eye(5), v), rtol=1e-10)
    np.testing.assert_allclose(Dc.solve(v, "cg"), np.linalg.solve(M + 0.3 * np.eye(5), v),
                               rtol=1e-7)
    # to_dense returns a copy, not a view of internal state
    Dc.to_dense()[0, 0] = 1e9
    assert Dc.matrix[0, 0] == M[0, 0]
    S = ScaledIdentity(5, 2.0)
    np.testing.assert_allclose(S.to_dense(), 2 * np.eye(5))
    np.testing.assert_allclose(S.solve(v), v / 2)
    np.testing.assert_allclose(S.diagonal(), 2.0)
    total = Dc + S
    assert isinstance(total, SumCurvature)
    np.testing.assert_allclose(total.to_dense(), M + 2.3 * np.eye(5))
    np.testing.assert_allclose(total.matvec(v), (M + 2.3 * np.eye(5)) @ v)
    np.testing.assert_allclose(total.diagonal(), np.diag(M) + 2.3)
    np.testing.assert_allclose(total.solve(v), np.linalg.solve(M + 2.3 * np.eye(5), v),
                               rtol=1e-10)
    assert (0 + Dc) is Dc and (Dc + 0) is Dc
    assert sum([Dc, S]).shape == (5, 5)
    with pytest.raises(ValueError):
        Dc + ScaledIdentity(4, 1.0)
    with pytest.raises(ValueError):
        DenseCurvature(np.ones((2, 3)))
    with pytest.raises(ValueError, match="method"):
        Dc.solve(v, method="lu")


@pytest.mark.numerics
def test_singular_cholesky_falls_back_to_least_squares():
    u = np.array([1.0, 2.0, -1.0])
    C = DenseCurvature(np.outer(u, u))             # rank one, no regularization
    rhs = 3.0 * u                                  # in the range
    x = C.solve(rhs)
    np.testing.assert_allclose(C.matvec(x), rhs, rtol=1e-10)
    np.testing.assert_allclose(x, u / (u @ u) * 3.0, rtol=1e-10)   # minimum-norm solution


def test_base_class_is_abstract():
    c = Curvature()
    with pytest.raises(NotImplementedError):
        c.matvec(np.zeros(1))
    with pytest.raises(NotImplementedError):
        c.diagonal()
    with pytest.raises(NotImplementedError):
        c.to_dense()
