"""SoftmaxCurvature: the structured Hessian product equals the Kronecker sum it stands for."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.bounds.curvature import KroneckerCurvature, SoftmaxCurvature


def _explicit(X, P, reg, w=None):
    """sum_j w_j (diag p_j - p_j p_j^T) (x) x_j x_j^T + reg I with np.kron, no library code."""
    t, n = P.shape
    d = X.shape[1]
    out = reg * np.eye(n * d)
    for j in range(t):
        B = np.diag(P[j]) - np.outer(P[j], P[j])
        out += (1.0 if w is None else w[j]) * np.kron(B, np.outer(X[j], X[j]))
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


@settings(max_examples=300)
@given(t=st.integers(1, 12), n=st.integers(1, 5), d=st.integers(1, 5),
       scale=st.sampled_from([0.0, 1.0, 30.0, 800.0]), reg=st.sampled_from([0.0, 0.5, 1e3]),
       seed=st.integers(0, 2**31 - 1), weighted=st.booleans(), drop=st.booleans(),
       flag=st.sampled_from([None, True]))
def test_structured_dense_assembly(t, n, d, scale, reg, seed, weighted, drop, flag):
    """to_dense and diagonal_blocks from P equal the explicit sum: full softmax rows (the
    pair-only assembly, with or without the caller's ``complete`` flag), sub-blocks of columns
    (rows not summing to one: the direct diagonal blocks) and sample weights (zeros included)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(t, d))
    S = scale * rng.normal(size=(t, n + 1))
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    complete = flag
    if drop:            # free classes of a model with a reference class
        P = P[:, :n]
        complete = None
    w = rng.random(t) * (rng.random(t) < 0.8) if weighted else None
    ref = _explicit(X, P, reg, w)
    C = SoftmaxCurvature(X, P, reg, weights=w, complete=complete)
    tol = 1e-12 * (1 + np.abs(ref).max())
    dense = C.to_dense()
    np.testing.assert_allclose(dense, ref, rtol=0, atol=tol)
    np.testing.assert_array_equal(dense, dense.T)
    k = P.shape[1]
    blocks = C.diagonal_blocks()
    for a in range(k):
        np.testing.assert_allclose(blocks[a], ref[a * d:(a + 1) * d, a * d:(a + 1) * d],
                                   rtol=0, atol=tol)
    # a column-major (transposed) P, as the model passes it, gives the same matrix
    CT = SoftmaxCurvature(X, np.ascontiguousarray(P.T).T, reg, weights=w, complete=complete)
    np.testing.assert_allclose(CT.to_dense(), dense, rtol=0, atol=tol)


@pytest.mark.parametrize("batch", [0, 1 << 30])
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("n", [2, 4])
def test_dense_assembly_paths_agree(monkeypatch, batch, drop, n):
    """The per-pair GEMM loop (large problems) and the batched product (small ones) build the
    same matrices: softmax Hessian, its diagonal blocks and a generic Kronecker sum."""
    import zbound.bounds.curvature as curvature

    monkeypatch.setattr(curvature, "_BATCH_ELEMS", batch)
    rng = np.random.default_rng(n + 10 * drop)
    X = rng.normal(size=(25, 3))
    S = 3 * rng.normal(size=(25, n + 1))
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    if drop:
        P = P[:, :n]
    w = rng.random(25)
    C = SoftmaxCurvature(X, P, 0.2, weights=w)
    ref = _explicit(X, P, 0.2, w)
    np.testing.assert_allclose(C.to_dense(), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    d = X.shape[1]
    blocks = C.diagonal_blocks()
    for a in range(P.shape[1]):
        sl = slice(a * d, (a + 1) * d)
        np.testing.assert_allclose(blocks[a], ref[sl, sl], rtol=0,
                                   atol=1e-12 * np.abs(ref).max())
    K = KroneckerCurvature(X, C.B, 0.2)
    np.testing.assert_allclose(K.to_dense(), ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def _blockdiag_inverse(blocks, v):
    m, b, _ = blocks.shape
    return np.concatenate([np.linalg.solve(blocks[a], v.reshape(m, b)[a]) for a in range(m)])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("chunks", [1, 2])
def test_woodbury_preconditioner_is_the_block_inverse(sparse, intercept, chunks):
    """Fewer rows than block columns: the Woodbury form applies the exact inverse of the class
    blocks (a per-coordinate penalty and a rank-one term's diagonal included), no (d, d)
    array; dense and CSR X, implicit intercept column, chunks stacked."""
    from zbound.bounds.curvature import DiagonalCurvature, RankOneCurvature
    rng = np.random.default_rng(3)
    t, d, n = 9, 25, 3
    X = rng.normal(size=(t, d))
    X[rng.random((t, d)) < 0.5] = 0.0
    P = rng.dirichlet(np.ones(n), size=t)
    w = rng.uniform(0.5, 2.0, t)
    rows = np.array_split(np.arange(t), chunks)
    parts = []
    for r in rows:
        Xr = sp.csr_matrix(X[r]) if sparse else X[r]
        H = SoftmaxCurvature(Xr, P[r], weights=w[r])
        parts.append(H.with_intercept() if intercept else H)
    b = d + intercept
    pen = rng.uniform(0.1, 1.0, n * b)                   # > 0 everywhere: exact
    u = np.zeros(n * b)
    u[b - 1:: b] = 1.0
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    total = total + DiagonalCurvature(pen) + RankOneCurvature(u, 0.7)
    dense = [SoftmaxCurvature(np.hstack([X[r], np.ones((len(r), 1))]) if intercept else X[r],
                              P[r], weights=w[r]) for r in rows]
    ref = dense[0]
    for part in dense[1:]:
        ref = ref + part
    ref = ref + DiagonalCurvature(pen) + RankOneCurvature(u, 0.7)
    blocks = ref.diagonal_blocks()
    v = rng.normal(size=n * b)
    np.testing.assert_allclose(total.preconditioner()(v), _blockdiag_inverse(blocks, v),
                               rtol=1e-9, atol=1e-12)
    # and CG with it converges on the full operator
    x = total.solve(v, "cg", rtol=1e-10)
    np.testing.assert_allclose(ref.matvec(x), v, rtol=1e-7, atol=1e-7)


def test_preconditioner_kind_by_shape():
    from zbound.bounds.preconditioners import MAX_BLOCK_ELEMS, block_preconditioner_kind
    assert block_preconditioner_kind(66, 2309, 4) == "woodbury"      # SRBCT
    assert block_preconditioner_kind(1797, 65, 10) == "dense"        # digits
    big = int(np.sqrt(MAX_BLOCK_ELEMS)) + 1
    assert block_preconditioner_kind(10 * big, big, 2) == "jacobi"
    # sparse rows wider than they are many: the Woodbury setup (rows^3 / 3 per block) would
    # cost thousands of products with 36 stored entries a row, far more than CG saves
    assert block_preconditioner_kind(1000, 10_001, 1, stored=36_000) == "jacobi"
    assert block_preconditioner_kind(1000, 10_001, 1) == "woodbury"           # dense rows
    assert block_preconditioner_kind(66, 2309, 4, stored=66 * 2308) == "woodbury"


def test_sparse_data_without_woodbury_gets_square_root_jacobi():
    """Wide sparse rows whose Woodbury setup costs too much: CG is preconditioned by the
    square root of the diagonal (SPARSE_JACOBI_POWER), dense data of the same kind by the
    diagonal itself; CG still solves the system with either."""
    from zbound.bounds.preconditioners import SPARSE_JACOBI_POWER

    rng = np.random.default_rng(5)
    t, d, n = 200, 3000, 2
    X = sp.random(t, d, density=0.01, random_state=5, format="csr",
                  data_rvs=lambda k: rng.random(k) + 0.1)
    S = rng.normal(size=(t, n))
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    C = SoftmaxCurvature(X, P, 0.5)
    v = rng.normal(size=n * d)
    diag = C.diagonal()
    assert SPARSE_JACOBI_POWER == 0.5
    np.testing.assert_allclose(C.preconditioner()(v), v / np.sqrt(diag), rtol=1e-12)
    x = C.solve(v, "cg", rtol=1e-10)
    np.testing.assert_allclose(C.matvec(x), v, rtol=1e-7, atol=1e-7)
    from zbound.utils.linalg import jacobi
    np.testing.assert_allclose(jacobi(diag)(v), v / diag, rtol=1e-12)
    np.testing.assert_allclose(jacobi(np.array([4.0, 0.0]), 0.5)(np.ones(2)), [0.5, 1.0])


def test_class_pair_grams_loop_equals_the_batched_product():
    """Above the batched product's size the Grams come from a loop of GEMMs over row chunks
    into one reused buffer: the same matrices."""
    from zbound.bounds import curvature as cv

    rng = np.random.default_rng(3)
    for t, d, m in ((5000, 40, 3), (300, 40, 10)):       # two row chunks; one
        X = rng.normal(size=(t, d))
        C = rng.normal(size=(t, m))
        K = KroneckerCurvature(X, np.zeros((t, 2, 2)))
        assert m * X.size > cv._BATCH_SMALL_ELEMS
        if t == 5000:
            assert t > cv._BATCH_ELEMS // 8 // d                   # more than one chunk
        G = K._grams(C)
        ref = np.einsum("tk,ti,tj->kij", C, X, X)
        np.testing.assert_allclose(G, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


def test_woodbury_preconditioner_floors_an_unpenalized_intercept():
    """Zero extra diagonal on the intercept (binary, no centering): still an SPD map, close to
    the block inverse (the floor is 1e-4 of the data diagonal)."""
    rng = np.random.default_rng(5)
    t, d = 8, 30
    X = rng.normal(size=(t, d))
    P = rng.uniform(0.2, 0.8, size=(t, 1))
    H = SoftmaxCurvature(X, P, reg=0.0).with_intercept()
    from zbound.bounds.curvature import DiagonalCurvature
    pen = np.r_[np.full(d, 1.0), 0.0]
    total = H + DiagonalCurvature(pen)
    pre = total.preconditioner()
    M = np.column_stack([pre(e) for e in np.eye(d + 1)])
    np.testing.assert_allclose(M, M.T, atol=1e-8)
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
    A = total.to_dense()
    # the preconditioned operator's spectrum stays near 1
    ev = np.linalg.eigvals(M @ A).real
    assert ev.min() > 0.5 and ev.max() < 2.0


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("t", [511, 512, 2049])
def test_one_weight_vector_product_by_row_blocks(monkeypatch, intercept, weighted, t):
    """One weight vector on dense X (binary with a reference class): the product runs over
    row blocks that stay in cache; it equals X^T diag(w p (1 - p)) X v + reg v, also for a
    ragged last block and, below two blocks, the unblocked path."""
    import zbound.bounds.curvature as cv

    monkeypatch.setattr(cv, "cache_block_rows", lambda d: 256)
    rng = np.random.default_rng(t)
    X = rng.normal(size=(t, 4))
    P = rng.random((t, 1))
    P[:5] = [[0.0], [1.0], [1e-300], [1.0 - 1e-16], [0.5]]
    w = rng.random(t) if weighted else None
    C = SoftmaxCurvature(X, P, 0.7, weights=w)
    Xa = np.hstack([X, np.ones((t, 1))]) if intercept else X
    if intercept:
        C = C.with_intercept()
    v = rng.normal(size=Xa.shape[1])
    wt = P[:, 0] * (1.0 - P[:, 0]) * (1.0 if w is None else w)
    want = Xa.T @ (wt * (Xa @ v)) + 0.7 * v
    np.testing.assert_allclose(C.matvec(v), want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


@settings(max_examples=300, deadline=None)
@given(t=st.integers(1, 10), n=st.integers(2, 5), d=st.integers(1, 30),
       scale=st.sampled_from([0.0, 1.0, 30.0, 800.0]), seed=st.integers(0, 2**31 - 1),
       intercept=st.booleans(), reference=st.booleans(), weighted=st.booleans(),
       pen=st.sampled_from([1e-6, 1e-2, 1.0, 1e4]))
def test_softmax_woodbury_is_the_exact_inverse(t, n, d, scale, seed, intercept, reference,
                                              weighted, pen):
    """softmax_woodbury applies H^{-1} for the whole softmax Hessian (class coupling
    included) plus a diagonal equal over classes: against a dense solve of the np.kron
    matrix, for probabilities of a full softmax or of the free classes beside a reference
    class (rows summing below 1), saturated scores, zero and unit weights, strong and weak
    penalties."""
    from zbound.bounds.preconditioners import softmax_woodbury
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(t, d))
    S = scale * rng.normal(size=(t, n + reference))
    E = np.exp(S - S.max(axis=1, keepdims=True))
    full = E / E.sum(axis=1, keepdims=True)
    P = full[:, reference:]
    w = rng.choice([0.0, 0.5, 1.0, 3.0], size=t) if weighted else None
    Xa = np.hstack([X, np.ones((t, 1))]) if intercept else X
    b = Xa.shape[1]
    e = pen * rng.uniform(0.5, 2.0, b)
    # the reference matrix with each diagonal p_a (1 - p_a) as p_a times the other classes'
    # probabilities (incl. a reference class): p_a - p_a^2 loses every digit near p_a = 1
    A = np.diag(np.tile(e, n))
    for j in range(t):
        B = -np.outer(P[j], P[j])
        for a in range(n):
            B[a, a] = P[j, a] * np.delete(full[j], reference + a).sum()
        A += (1.0 if w is None else w[j]) * np.kron(B, np.outer(Xa[j], Xa[j]))
    v = rng.normal(size=n * b)
    pre = softmax_woodbury(X, P, w, intercept, np.tile(e, (n, 1)))
    got = pre(v.copy())
    # backward error of the solve: A got = v up to rounding, which Woodbury amplifies by the
    # ratio of the data's curvature to the diagonal (its two terms are of size ||E^-1 v||
    # and cancel); a wrong formula, e.g. without the class coupling, misses by O(1)
    normA = np.linalg.norm(A, 2)
    amp = 1.0 + normA / e.min()
    norm = normA * np.linalg.norm(got) + np.linalg.norm(v)
    slack = 0.0
    if reference:   # P alone gives the reference class's mass 1 - sum(p) to n eps absolute:
        # H's data part is determined to n eps x ||x||^2 entrywise, no better
        wmax = 1.0 if w is None else max(float(w.max()), 1.0)
        slack = 100 * n * np.finfo(float).eps * wmax * float((Xa * Xa).sum()) * \
            np.linalg.norm(got)
    assert np.linalg.norm(A @ got - v) <= 1e-13 * amp * norm + slack
    if amp < 1e3 and not reference:     # well-scaled: also close to a dense solve
        want = np.linalg.solve(A, v)
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=1e-11 * np.linalg.cond(A) * np.abs(want).max())


def test_softmax_woodbury_refuses_what_it_cannot_invert():
    from zbound.bounds.preconditioners import SOFTMAX_WOODBURY_MAX, softmax_woodbury
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 8))
    P = rng.dirichlet(np.ones(3), size=6)
    e = np.ones((3, 8))
    assert softmax_woodbury(X, P, None, False, e) is not None
    assert softmax_woodbury(sp.csr_matrix(X), P, None, False, e) is None   # sparse X
    bad = e.copy()
    bad[1, 0] = 2.0
    assert softmax_woodbury(X, P, None, False, bad) is None              # classes differ
    bad = e.copy()
    bad[:, 0] = 0.0
    assert softmax_woodbury(X, P, None, False, bad) is None              # a zero penalty
    t = SOFTMAX_WOODBURY_MAX // 3 + 1
    big = rng.dirichlet(np.ones(3), size=t)
    assert softmax_woodbury(rng.normal(size=(t, 8)), big, None, False, e) is None


@settings(max_examples=60)
@given(st.integers(2, 40), st.integers(1, 7), st.sampled_from([1e-8, 1e-3, 1.0, 1e4]),
       st.sampled_from([0.0, 5.0, 30.0]), st.booleans(), st.integers(0, 2**31 - 1))
def test_two_class_solve_is_the_dense_solve_in_half_the_dimension(t, d, reg, scale, weighted,
                                                                 seed):
    """The full two-class softmax curvature [[A, -A], [-A, A]] + reg I solved in d dimensions
    equals the dense solve, at tiny and large ridges, confident rows (scores up to 30: p_0 p_1
    near 1e-13), zero and unequal weights; C x = rhs holds to the system's conditioning."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((t, d))
    S = scale * rng.standard_normal((t, 2))
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    w = rng.random(t) * (rng.random(t) > 0.3) if weighted else None
    C = SoftmaxCurvature(X, P, reg=reg, weights=w, complete=True)
    rhs = rng.standard_normal(2 * d)
    x = C.two_class_solve(rhs)
    dense = C.to_dense()
    cond = np.linalg.cond(dense)
    if x is None:                   # refused only where the d x d system is near singular
        assert cond * np.finfo(float).eps > 1e-10
        return
    ref = np.linalg.solve(dense, rhs)
    tol = 1e3 * cond * np.finfo(float).eps
    assert np.linalg.norm(x - ref) <= tol * max(1.0, np.linalg.norm(ref))
    assert np.linalg.norm(dense @ x - rhs) <= tol * np.linalg.norm(dense, 2) * max(
        1.0, np.linalg.norm(x))


def test_two_class_solve_refuses_what_it_does_not_cover():
    """Three classes, a free class of a reference-class model (rows not summing to one), no
    ridge, sparse rows: None, and the dense route is taken."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 3))
    P3 = rng.dirichlet(np.ones(3), size=20)
    P2 = P3[:, :2] / P3[:, :2].sum(axis=1, keepdims=True)
    assert SoftmaxCurvature(X, P3, reg=1.0, complete=True).two_class_solve(np.ones(9)) is None
    assert SoftmaxCurvature(X, P3[:, :2], reg=1.0).two_class_solve(np.ones(6)) is None
    assert SoftmaxCurvature(X, P2, reg=0.0).two_class_solve(np.ones(6)) is None
    assert SoftmaxCurvature(sp.csr_matrix(X), P2, reg=1.0).two_class_solve(np.ones(6)) is None
    assert SoftmaxCurvature(X, P2, reg=1.0).two_class_solve(np.ones(6)) is not None


def test_newton_bound_on_two_classes_takes_the_same_steps_either_way(monkeypatch):
    """newton-bound on a two-class softmax: the d-dimensional solve and the dense one give the
    same iterates (to rounding) and the same iteration count."""
    from zbound.models.multinomial import MultinomialLogistic
    from zbound.solvers import minimize

    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 5))
    y = (X[:, 0] + 0.5 * rng.standard_normal(200) > 0).astype(int)
    model = MultinomialLogistic(np.hstack([X, np.ones((200, 1))]), y, 2, reg=0.5)
    fast = minimize(model, np.zeros(model.n_params), method="newton-bound", tol=1e-10)
    monkeypatch.setattr(SoftmaxCurvature, "two_class_solve", lambda self, rhs: None)
    dense = minimize(model, np.zeros(model.n_params), method="newton-bound", tol=1e-10)
    assert fast.nit == dense.nit and fast.converged and dense.converged
    np.testing.assert_allclose(fast.x, dense.x, rtol=1e-9, atol=1e-12)
