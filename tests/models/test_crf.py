"""Chain CRF loss: exact value and gradient against enumeration; the matrix-free bound
operator against the dense chain bound; validity of the majorizer."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.bounds.junction import chain_bound
from zbound.models.crf import ChainCRFLoss, ScaledChainBound, ScaledChainHessian
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.structured import compiled
from zbound.structured.chain import chunk_value_grad

pytestmark = pytest.mark.numerics

try:
    import numba  # noqa: F401
    _NUMBA = True
except ImportError:
    _NUMBA = False

#: both paths of the chain recursions: the NumPy fallback and the compiled kernels
KERNELS = [pytest.param("numpy", id="numpy"),
           pytest.param("auto", id="compiled", marks=pytest.mark.skipif(
               not _NUMBA, reason="Numba (the fast extra) is not installed"))]


def random_problem(rng, n_seq=3, m=3, n_feat=4, max_len=4, density=0.6, scale=1.0):
    lengths = rng.integers(1, max_len + 1, size=n_seq)
    N = int(lengths.sum())
    X = sp.random(N, n_feat, density=density, random_state=rng.integers(1 << 30),
                  data_rvs=lambda k: scale * rng.normal(size=k), format="csr")
    y = rng.integers(0, m, size=N)
    return X, lengths, y


def features_of(X, lengths, m):
    """Per sequence the chain_bound arrays in theta space (d = n_feat * m + m * m)."""
    n_feat = X.shape[1]
    d = n_feat * m + m * m
    Xd = X.toarray()
    out, off = [], 0
    for L in lengths:
        g = np.zeros((L, m, d))
        e = np.zeros((max(L - 1, 0), m, m, d))
        for t in range(L):
            for y in range(m):
                g[t, y, np.arange(n_feat) * m + y] = Xd[off + t]
        for t in range(1, L):
            for a in range(m):
                for b in range(m):
                    e[t - 1, a, b, n_feat * m + a * m + b] = 1.0
        out.append((g, e))
        off += L
    return out


def path_features(g, e, m, L):
    """Every label path of a length-L sequence and its feature vector (one row per path)."""
    paths = list(itertools.product(range(m), repeat=L))
    F = []
    for path in paths:
        v = sum(g[t, path[t]] for t in range(L))
        for t in range(1, L):
            v = v + e[t - 1, path[t - 1], path[t]]
        F.append(v)
    return paths, np.array(F)


def brute_nll(X, lengths, y, m, theta):
    feats = features_of(X, lengths, m)
    f, grad, off = 0.0, np.zeros(theta.size), 0
    for (g, e), L in zip(feats, lengths):
        paths, F = path_features(g, e, m, int(L))
        s = F @ theta
        lz = s.max() + np.log(np.exp(s - s.max()).sum())
        p = np.exp(s - lz)
        gold = paths.index(tuple(y[off:off + L]))
        f += lz - s[gold]
        grad += p @ F - F[gold]
        off += L
    return f, grad


@pytest.mark.parametrize("kernels", KERNELS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 3), scale=st.sampled_from([0.0, 1.0, 5.0]))
def test_value_grad_exact(kernels, seed, m, scale):
    rng = np.random.default_rng(seed)
    X, lengths, y = random_problem(rng, m=m)
    loss = ChainCRFLoss(X, lengths, y, m, chunk_tokens=3)
    theta = scale * rng.normal(size=loss.n_params)
    with compiled.use(kernels):
        f, g = loss.value_and_grad(theta)
        assert loss.value(theta) == pytest.approx(f, rel=1e-12, abs=1e-12)
    fb, gb = brute_nll(X, lengths, y, m, theta)
    assert f == pytest.approx(fb, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(g, gb, rtol=1e-8, atol=1e-9)
    assert loss.value(theta) == pytest.approx(f, rel=1e-12)


def test_logspace_path_for_extreme_transitions():
    rng = np.random.default_rng(0)
    X, lengths, y = random_problem(rng, m=3)
    loss = ChainCRFLoss(X, lengths, y, 3)
    theta = rng.normal(size=loss.n_params)
    theta[-9:] = rng.normal(size=9) * 500          # transitions spanning > 600 nats
    f, g = loss.value_and_grad(theta)
    fb, gb = brute_nll(X, lengths, y, 3, theta)
    assert np.isfinite(f) and f == pytest.approx(fb, rel=1e-9)
    np.testing.assert_allclose(g, gb, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernels", KERNELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 3), scale=st.sampled_from([0.0, 1.0, 4.0]),
       n_jobs=st.sampled_from([1, 2]))
def test_operator_matches_dense_chain_bound(kernels, seed, m, scale, n_jobs):
    """The split bound's curvature (compiled on the scaled recursion's state, or in log
    space) against the dense chain bound; its Jacobi diagonal is the log-space one's."""
    rng = np.random.default_rng(seed)
    X, lengths, y = random_problem(rng, m=m)
    loss = ChainCRFLoss(X, lengths, y, m, chunk_tokens=4, n_jobs=n_jobs)
    theta = scale * rng.normal(size=loss.n_params)
    with compiled.use(kernels):
        maj = loss.majorizer(theta, eps=0.7)
        assert isinstance(maj.curvature, ScaledChainBound) == (kernels == "auto")
        C = maj.curvature.to_dense()
        with compiled.use("numpy"):
            log_curv = loss.majorizer(theta, eps=0.7).curvature
        np.testing.assert_allclose(maj.curvature.jacobi_diagonal(),
                                   log_curv.jacobi_diagonal(), rtol=1e-9, atol=1e-12)
    ref = sum(chain_bound(g, e, theta, rule="split", order="argmax-first", eps=0.7).curvature
              for g, e in features_of(X, lengths, m))
    np.testing.assert_allclose(C, ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(C, C.T, atol=1e-10)


@pytest.mark.parametrize("kernels", KERNELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), scale=st.sampled_from([0.0, 1.0, 3.0]))
def test_majorizer_is_a_bound(kernels, seed, scale):
    rng = np.random.default_rng(seed)
    X, lengths, y = random_problem(rng, m=3)
    obj = Objective(ChainCRFLoss(X, lengths, y, 3, n_jobs=2, chunk_tokens=3), L2Penalty(0.1))
    theta = scale * rng.normal(size=obj.n_params)
    with compiled.use(kernels):
        maj = obj.majorizer(theta)
    assert maj.value == pytest.approx(obj.value(theta))
    for s in (0.01, 0.3, 1.0, 5.0):
        for _ in range(10):
            t2 = theta + s * rng.normal(size=theta.size)
            assert maj.evaluate(t2) >= obj.value(t2) - 1e-9 * max(1.0, abs(obj.value(t2)))


def test_predict_viterbi_is_argmax():
    rng = np.random.default_rng(3)
    X, lengths, y = random_problem(rng, n_seq=4, m=3, max_len=4)
    loss = ChainCRFLoss(X, lengths, y, 3, chunk_tokens=5)
    theta = 2 * rng.normal(size=loss.n_params)
    pred = loss.predict(theta, X, lengths)
    feats = features_of(X, lengths, 3)
    off = 0
    for (g, e), L in zip(feats, lengths):
        best = max(itertools.product(range(3), repeat=int(L)),
                   key=lambda p: (sum(g[t, p[t]] for t in range(L))
                                  + sum(e[t - 1, p[t - 1], p[t]] for t in range(1, L))) @ theta)
        assert tuple(pred[off:off + L]) == best
        off += L


def test_bad_input():
    X = sp.csr_matrix(np.ones((3, 2)))
    with pytest.raises(ValueError, match="rows"):
        ChainCRFLoss(X, [2], [0, 0, 0], 2)
    with pytest.raises(ValueError, match="labels"):
        ChainCRFLoss(X, [3], [0, 5, 0], 2)
    with pytest.raises(ValueError, match="at least one token"):
        ChainCRFLoss(X, [3, 0], [0, 1, 0], 2)
    with pytest.raises(ValueError, match="NaN"):
        ChainCRFLoss(sp.csr_matrix(np.array([[np.nan, 1.0]])), [1], [0], 2)


def brute_hessian(X, lengths, m, theta):
    H, out = np.zeros((theta.size, theta.size)), 0
    for g, e in features_of(X, lengths, m):
        F = path_features(g, e, m, g.shape[0])[1]
        s = F @ theta
        p = np.exp(s - s.max())
        p /= p.sum()
        mean = p @ F
        H += (F - mean).T @ ((F - mean) * p[:, None])
        out += 1
    return H


@pytest.mark.parametrize("kernels", KERNELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 3), scale=st.sampled_from([0.0, 1.0, 4.0]))
def test_hessian_operator_exact(kernels, seed, m, scale):
    """The exact Hessian (compiled on the scaled recursion's state, or in log space without
    Numba) against enumeration; its value and gradient are value_and_grad's; its Jacobi
    diagonal is the log-space operator's."""
    rng = np.random.default_rng(seed)
    X, lengths, y = random_problem(rng, m=m)
    loss = ChainCRFLoss(X, lengths, y, m, chunk_tokens=4, n_jobs=2)
    theta = scale * rng.normal(size=loss.n_params)
    with compiled.use(kernels):
        f, g, H = loss.value_grad_hessian(theta)
        assert isinstance(H, ScaledChainHessian) == (kernels == "auto")
        f0, g0 = loss.value_and_grad(theta)
        assert f == pytest.approx(f0, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(g, g0, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(H.to_dense(), brute_hessian(X, lengths, m, theta),
                                   rtol=1e-7, atol=1e-9)
        v = rng.normal(size=loss.n_params)
        np.testing.assert_allclose((2.0 * H.with_ridge(0.5)).matvec(v),
                                   2.0 * (H.matvec(v) + 0.5 * v), rtol=1e-12)
        with compiled.use("numpy"):
            H_log = loss.hessian(theta)
        np.testing.assert_allclose(H.jacobi_diagonal(), H_log.jacobi_diagonal(), rtol=1e-10,
                                   atol=1e-12)


def test_hessian_and_bound_logspace_path():
    rng = np.random.default_rng(4)
    X, lengths, y = random_problem(rng, m=3)
    loss = ChainCRFLoss(X, lengths, y, 3, chunk_tokens=4)
    theta = rng.normal(size=loss.n_params)
    theta[-9:] = rng.normal(size=9) * 400          # transitions spanning > 600 nats
    H = loss.hessian(theta)
    assert H.pot.logspace
    np.testing.assert_allclose(H.to_dense(), brute_hessian(X, lengths, 3, theta),
                               rtol=1e-6, atol=1e-8)
    C = loss.majorizer(theta).curvature.to_dense()
    ref = sum(chain_bound(g, e, theta, rule="split").curvature
              for g, e in features_of(X, lengths, 3))
    np.testing.assert_allclose(C, ref, rtol=1e-7, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 5), n_jobs=st.sampled_from([1, 2, 3]),
       chunk=st.sampled_from([1, 7, 64, 16384]), scale=st.sampled_from([0.0, 1.0, 30.0, 300.0]))
def test_scaled_path_matches_logspace_path(seed, m, n_jobs, chunk, scale):
    """The scaled recursion on position-major chunks (value_and_grad, value) against the
    log-space forward-backward (_value_grad) on many sequences of mixed lengths, interleaved
    chunks and threads, including scores near where a shared shift would underflow (the
    scaled path then falls back) and length-one sequences."""
    rng = np.random.default_rng(seed)
    X, lengths, y = random_problem(rng, n_seq=int(rng.integers(1, 12)), m=m, n_feat=5,
                                   max_len=9)
    loss = ChainCRFLoss(X, lengths, y, m, n_jobs=n_jobs, chunk_tokens=chunk)
    theta = scale * rng.normal(size=loss.n_params)
    f, g = loss.value_and_grad(theta)
    fr, gr, _ = loss._value_grad(theta)
    assert np.isfinite(f) and np.all(np.isfinite(g))
    assert f == pytest.approx(fr, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(g, gr, rtol=1e-7, atol=1e-7 * max(1.0, scale))
    assert loss.value(theta) == pytest.approx(f, rel=1e-10, abs=1e-9)


@pytest.mark.parametrize("kernels", KERNELS)
def test_scaled_path_when_rows_span_too_far(kernels):
    """One token whose scores are 900 nats above the others (its own row spans about 300):
    the chunk's shared shift underflows every other row, the chunk is redone with row-by-row
    shifts (exact), and with transitions spanning > 600 nats as well the log-space path
    answers."""
    with compiled.use(kernels):
        rng = np.random.default_rng(5)
        X, lengths, y = random_problem(rng, n_seq=3, m=3, max_len=3)
        X = X.tolil()
        X[0, 0] = 1.0
        X = X.tocsr()
        loss = ChainCRFLoss(X, lengths, y, 3)
        theta = rng.normal(size=loss.n_params)
        theta[:3] = [900.0, 600.0, 595.0]
        fb, gb = brute_nll(X, lengths, y, 3, theta)
        c = loss.layout.chunks[0]
        S = loss._Xc[0] @ loss.split(theta)[0]
        W, T = loss.split(theta)
        expT = np.exp(T - T.max())
        assert chunk_value_grad(c, S.copy(), expT, T.max(), np.empty_like(S)) is None
        out = loss._fast(theta, grad=True)
        assert out is not None
        assert out[0] == pytest.approx(fb, rel=1e-9)
        np.testing.assert_allclose(out[1], gb, rtol=1e-6, atol=1e-6)
        theta[-9:] = rng.normal(size=9) * 500          # transitions spanning > 600 nats
        assert loss._fast(theta, grad=True) is None
        f, g = loss.value_and_grad(theta)
        fb, gb = brute_nll(X, lengths, y, 3, theta)
        assert f == pytest.approx(fb, rel=1e-9)
        np.testing.assert_allclose(g, gb, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("k,chunk", [(1, 5), (2, 5), (3, 1000), (4, 2)])
def test_layout_interleaved_chunks_partition_the_tokens(k, chunk):
    from zbound.structured.chain import ChainLayout
    lengths = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
    lay = ChainLayout(lengths, chunk, interleave=k)
    assert np.array_equal(np.sort(lay.perm), np.arange(lengths.sum()))
    seqs = np.concatenate([c.seqs for c in lay.chunks])
    assert np.array_equal(np.sort(seqs), np.arange(lengths.size))
    for c in lay.chunks:
        assert np.all(np.diff(c.lengths) <= 0)            # sorted, longest first
        # position-major rows: row off[t] + j is position t of the chunk's j-th sequence
        for t in range(1, c.T):
            rows = c.off[t] + np.arange(c.counts[t])
            assert np.array_equal(c.tokens[rows] - 1, c.tokens[c.prev_row[rows - c.off[1]]])


def test_gradient_blocks_share_the_stored_entries_evenly():
    """X^T P runs in blocks of token rows, one per thread, holding equal shares of the stored
    entries, and sums to the product with the whole matrix (no transposed copy is kept)."""
    rng = np.random.default_rng(0)
    n_tokens, n_feat = 3000, 400
    p = 1.0 / np.arange(1, n_feat + 1)                      # Zipf: the first features frequent
    per_row = rng.integers(1, 9, n_tokens)                  # rows of unequal weight
    cols = rng.choice(n_feat, size=per_row.sum(), p=p / p.sum())
    X = sp.csr_matrix((np.ones(cols.size), (np.repeat(np.arange(n_tokens), per_row), cols)),
                      shape=(n_tokens, n_feat))
    X.sum_duplicates()
    lengths = np.full(n_tokens // 10, 10)
    y = rng.integers(0, 3, n_tokens)
    loss = ChainCRFLoss(X, lengths, y, 3, n_jobs=2)
    assert not hasattr(loss, "XpT")
    blocks = loss._XTb
    assert blocks[0][0] == 0 and blocks[-1][1] == n_tokens
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))      # contiguous, no gap
    shares = np.array([blk.nnz for _, _, blk in blocks]) / X.nnz
    assert len(blocks) == 2 and np.all(np.abs(shares - 0.5) < 0.05), shares
    one = ChainCRFLoss(X, lengths, y, 3, n_jobs=1)
    assert len(one._XTb) == 1
    theta = 0.1 * rng.standard_normal(one.n_params)
    f1, g1 = one.value_and_grad(theta)
    f2, g2 = loss.value_and_grad(theta)
    assert f1 == pytest.approx(f2, rel=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-10)
    R = rng.standard_normal((n_tokens, 3))
    np.testing.assert_allclose(loss.XT_dot(R), X.T @ R, rtol=1e-12, atol=1e-12)
