"""Linear algebra behind every curvature solve:
 dense Kronecker assembly, Cholesky, (truncated) PCG."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.bounds.curvature import DenseCurvature, KroneckerCurvature
from zbound.utils.linalg import cholesky_solve, jacobi, pcg

pytestmark = pytest.mark.numerics


def _kron(seed, t=40, n=3, d=5, reg=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    A = rng.standard_normal((t, n, n))
    return KroneckerCurvature(X, A @ A.transpose(0, 2, 1), reg)


def _explicit(K):
    out = K.reg * np.eye(K.shape[0])
    for j in range(K.X.shape[0]):
        out += np.kron(K.B[j], np.outer(K.X[j], K.X[j]))
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("complete", [False, True])
def test_kronecker_dense_matches_the_operator(seed, complete):
    """Pair-block assembly equals the explicit Kronecker sum, both for general B_j and for
    B_j 1 = 0 (the diagonal blocks then come from the off-diagonal ones, as for the bound)."""
    K = _kron(seed)
    if complete:
        A = np.random.default_rng(seed).standard_normal((K.X.shape[0], K.n, K.n))
        A -= A.mean(axis=1, keepdims=True)            # columns sum to zero: 1^T A = 0
        K = KroneckerCurvature(K.X, A @ A.transpose(0, 2, 1), K.reg)
        assert np.abs(K.B.sum(axis=2)).max() < 1e-12
    M = K.to_dense()
    np.testing.assert_allclose(M, _explicit(K), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(M, M.T)
    v = np.random.default_rng(seed).standard_normal(M.shape[0])
    np.testing.assert_allclose(M @ v, K.matvec(v), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(DenseCurvature(np.eye(3), 2.0).to_dense(), 3.0 * np.eye(3))


def test_cholesky_solve_detects_indefinite_matrices():
    K = _kron(3)
    M = K.to_dense()
    g = np.arange(M.shape[0], dtype=float)
    np.testing.assert_allclose(M @ cholesky_solve(M, g), g, atol=1e-9)
    assert cholesky_solve(-M, g) is None


@pytest.mark.parametrize("precond", ["none", "jacobi", "block"])
def test_pcg_iterates_decrease_the_quadratic_and_converge(precond):
    K = _kron(4, t=60, n=4, d=6, reg=1e-3)
    M = K.to_dense()
    rhs = np.random.default_rng(4).standard_normal(M.shape[0])
    P = {"none": None, "jacobi": jacobi(K.diagonal()), "block": K.preconditioner()}[precond]
    q = lambda x: 0.5 * x @ M @ x - rhs @ x
    values = [q(pcg(K.matvec, rhs, P, 0.0, k)[0]) for k in range(1, 12)]
    assert values[0] < 0.0  # any truncated solve from 0 decreases the quadratic (majorizer)
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))
    x, k = pcg(K.matvec, rhs, P, 1e-12, 500)
    np.testing.assert_allclose(M @ x, rhs, atol=1e-8 * np.linalg.norm(rhs))
    np.testing.assert_allclose(K.solve(rhs, "cg", rtol=1e-12), x, atol=1e-6)
    np.testing.assert_allclose(K.solve(rhs, "cholesky"), x, atol=1e-6)


def test_block_jacobi_inverts_the_class_diagonal_blocks():
    K = _kron(5)
    M = K.to_dense()
    n, d = K.n, K.d
    blocks = np.zeros_like(M)
    for a in range(n):
        sl = slice(a * d, (a + 1) * d)
        blocks[sl, sl] = M[sl, sl]
    v = np.random.default_rng(5).standard_normal(n * d)
    np.testing.assert_allclose(K.preconditioner()(v), np.linalg.solve(blocks, v), rtol=1e-9)


def test_gram_block_jacobi_is_exact_for_constant_weights():
    from zbound.bounds.preconditioners import factor_gram, gram_block_jacobi

    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 4))
    C = np.tile([0.2, 0.5, 0.1], (50, 1))             # constant over rows
    extra = rng.uniform(0.5, 1.0, (3, 5))
    fac = [(X[:20], C[:20], True), (X[20:], C[20:], True)]
    G = factor_gram(fac)
    Xa = np.hstack([X, np.ones((50, 1))])
    np.testing.assert_allclose(G, Xa.T @ Xa, atol=1e-12)
    pre = gram_block_jacobi(G, fac, extra)
    v = rng.standard_normal(15)
    blocks = [C[0, a] * Xa.T @ Xa + np.diag(extra[a]) for a in range(3)]
    want = np.concatenate([np.linalg.solve(B, v[5 * a:5 * a + 5]) for a, B in enumerate(blocks)])
    np.testing.assert_allclose(pre(v), want, rtol=1e-10)


def test_block_jacobi_in_place_inverts_and_rejects_indefinite_blocks():
    from zbound.utils.linalg import block_jacobi

    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 6, 6))
    blocks = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(6)
    want_blocks = blocks.copy()
    pre = block_jacobi(blocks)
    v = rng.standard_normal(24)
    want = np.concatenate([np.linalg.solve(B, v[6 * a:6 * a + 6])
                           for a, B in enumerate(want_blocks)])
    np.testing.assert_allclose(pre(v), want, rtol=1e-9, atol=1e-12)
    bad = want_blocks.copy()
    bad[2] = -bad[2]
    assert block_jacobi(bad) is None


@pytest.mark.parametrize("intercept", [False, True])
def test_eigen_preconditioner_is_exact_for_constant_weights(intercept):
    """Constant weights over rows and a scalar extra diagonal: the class blocks are
    w_a G + e_a I, diagonal in G's eigenbasis, so the preconditioner is their exact inverse;
    with varying weights it is still SPD."""
    from zbound.bounds.preconditioners import eigen_block_preconditioner, gram_eigenbasis

    rng = np.random.default_rng(4)
    X = rng.standard_normal((900, 7))          # > one chunk of rows of the data loop
    b = 7 + intercept
    Xa = np.hstack([X, np.ones((900, 1))]) if intercept else X
    w = np.array([0.2, 0.5, 1.5])
    C = np.tile(w, (900, 1))
    extra = np.array([[0.3], [1.0], [2.0]]) * np.ones((3, b))
    Q = gram_eigenbasis([(X[:500], C[:500], intercept), (X[500:], C[500:], intercept)])
    np.testing.assert_allclose(Q.T @ Q, np.eye(b), atol=1e-12)
    pre = eigen_block_preconditioner(Q, [(X, C, intercept)], extra)
    v = rng.standard_normal(3 * b)
    G = Xa.T @ Xa
    want = np.concatenate([np.linalg.solve(w[a] * G + extra[a, 0] * np.eye(b),
                                           v[b * a:b * a + b]) for a in range(3)])
    np.testing.assert_allclose(pre(v), want, rtol=1e-8)
    Cv = rng.random((900, 3))
    pre = eigen_block_preconditioner(Q, [(X, Cv, intercept)], extra)
    M = np.column_stack([pre(e) for e in np.eye(3 * b)])
    np.testing.assert_allclose(M, M.T, atol=1e-10)
    assert np.linalg.eigvalsh(M).min() > 0


@pytest.mark.parametrize("reference,intercept,weighted,n", [
    (True, True, False, 2), (False, True, True, 4), (False, False, True, 3),
    (True, False, False, 3)])
def test_factor_blocks_equal_the_operators_diagonal_blocks(reference, intercept, weighted, n):
    """The chunked syrk assembly (newton-bound's block-Jacobi builds) gives the very blocks of
    ``diagonal_blocks``, for the exact Hessian and the Alg. 1 bound, over several row chunks,
    with the implicit intercept column and zero sample weights."""
    from zbound.bounds.curvature import ScaledIdentity, SumCurvature
    from zbound.bounds.preconditioners import factor_blocks
    from zbound.models.loss import SoftmaxLoss

    rng = np.random.default_rng(7)
    X = rng.normal(size=(700, 9))
    y = rng.integers(0, n, 700)
    sw = None
    if weighted:
        sw = rng.uniform(0.0, 2.0, 700)
        sw[:20] = 0.0
    loss = SoftmaxLoss(X, y, n, sample_weight=sw, reference_class=reference,
                       fit_intercept=intercept, chunk_size=300)
    theta = rng.normal(size=loss.n_params)
    for H in (loss.hessian(theta), loss.majorizer(theta).curvature):
        H = SumCurvature(H, ScaledIdentity(H.shape[0], 0.3))
        blocks = factor_blocks(*H.block_factors())
        np.testing.assert_allclose(blocks, H.diagonal_blocks(), rtol=1e-12, atol=1e-10)


def test_factor_blocks_rejects_sparse_factors():
    import scipy.sparse as sp

    from zbound.bounds.preconditioners import factor_blocks

    X = sp.random(50, 4, density=0.5, format="csr", random_state=0)
    assert factor_blocks([(X, np.ones((50, 1)), False)], np.zeros((1, 4))) is None


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_weighted_ridge_solve_wide_form_is_the_minimizer(seed, free_intercept, tall):
    """More columns than rows go through (rows, rows) systems: the same minimizer as the
    normal equations (columns 1e-2 to 1e2 apart, zero weights, ridges 1e-4 to 1e2, an
    unpenalized intercept); as many rows as columns, the normal equations themselves."""
    from zbound.utils.linalg import weighted_ridge_solve

    rng = np.random.default_rng(seed)
    t = int(rng.integers(2, 25))
    p = int(rng.integers(2, t + 1)) if tall else int(rng.integers(t + 1, 50))
    X = rng.standard_normal((t, p)) * 10.0 ** rng.uniform(-2, 2, p)
    X[:, -1] = 1.0
    w = rng.uniform(0.0, 2.0, t) * (rng.random(t) > 0.2)
    y = rng.standard_normal(t)
    ridge = 10.0 ** rng.uniform(-4, 2, p)
    if free_intercept:
        ridge[-1] = 0.0
    c = weighted_ridge_solve(X, w, y, ridge)

    def f(c):
        return float(w @ (y - X @ c) ** 2 + ridge @ c**2)

    A = (X * w[:, None]).T @ X + np.diag(ridge)
    ref = np.linalg.lstsq(A, X.T @ (w * y), rcond=None)[0]
    assert f(c) <= f(ref) + 1e-10 * max(1.0, f(ref))


def test_weighted_ridge_solve_without_a_penalty_is_the_minimum_norm_fit():
    from zbound.utils.linalg import weighted_ridge_solve

    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 12))
    y = rng.standard_normal(5)
    c = weighted_ridge_solve(X, np.ones(5), y, 0.0)
    np.testing.assert_allclose(c, np.linalg.pinv(X) @ y, atol=1e-12)


def test_pcg_companion_accumulates_the_callers_map_at_the_solution():
    """``companion=True``: B x from the products CG already made equals B applied to the
    returned x, on a matrix-shaped right-hand side (inner products over all entries), with the
    same iterates and product count as the plain form; a zero right-hand side costs nothing."""
    from zbound.utils.linalg import pcg

    rng = np.random.default_rng(3)
    A = rng.standard_normal((12, 12))
    C = A @ A.T + 0.5 * np.eye(12)
    B = rng.standard_normal((5, 12))
    rhs = rng.standard_normal((4, 3))
    diag = np.diag(C).reshape(4, 3)

    def plain(p):
        return (C @ p.ravel()).reshape(4, 3)

    def both(p):
        return plain(p), B @ p.ravel()

    x, k = pcg(plain, rhs, lambda r: r / diag, 1e-10, 100)
    x2, bx, k2 = pcg(both, rhs, lambda r: r / diag, 1e-10, 100, companion=True)
    assert k == k2 and np.array_equal(x, x2)
    np.testing.assert_allclose(bx, B @ x.ravel(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(plain(x), rhs, atol=1e-8)
    z, kz = pcg(plain, np.zeros((4, 3)), None, 1e-10, 100)
    assert kz == 0 and not z.any()
