"""The compiled chain kernels against the NumPy recursions they replace: the same value,
marginals and pairwise counts to rounding, the same fallbacks where a floor is crossed, and
the switch between them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.models.crf import ChainCRFLoss
from zbound.structured import compiled
from zbound.structured.chain import ChainLayout, chunk_value_grad, scaled_split_factors

pytestmark = pytest.mark.numerics
numba = pytest.importorskip("numba", reason="Numba (the fast extra) is not installed")


def _chunk_problem(rng, lengths, m, scale):
    lay = ChainLayout(np.asarray(lengths), chunk_tokens=1 << 20)
    c = lay.chunks[0]
    S = scale * rng.normal(size=(c.tokens.size, m))
    T = scale * rng.normal(size=(m, m))
    return c, S, T


def _both(c, S, T, grad=True, row_shift=False):
    out = {}
    for k in ("numpy", "auto"):
        P = np.full(S.shape, np.nan) if grad else None
        with compiled.use(k):
            r = chunk_value_grad(c, S.copy(), np.exp(T - T.max()), float(T.max()), P,
                                 row_shift=row_shift)
        out[k] = (r, P)
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 6),
       lengths=st.lists(st.integers(1, 9), min_size=1, max_size=12),
       scale=st.sampled_from([0.0, 0.1, 1.0, 10.0, 100.0, 1000.0]),
       row_shift=st.booleans(), grad=st.booleans())
def test_compiled_chunk_matches_numpy(seed, m, lengths, scale, row_shift, grad):
    """Random chunks (sequences of 1 to 9 tokens, ties at scale 0, scores up to 1e3 where the
    floors are crossed): both paths give None together, or the same log Z, node marginals
    and pairwise marginals."""
    rng = np.random.default_rng(seed)
    c, S, T = _chunk_problem(rng, sorted(lengths, reverse=True), m, scale)
    out = _both(c, S, T, grad, row_shift)
    (a, Pa), (b, Pb) = out["numpy"], out["auto"]
    assert (a is None) == (b is None)
    if a is None:
        return
    assert b[0] == pytest.approx(a[0], rel=1e-12, abs=1e-9)
    if grad:
        np.testing.assert_allclose(Pb, Pa, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(b[1], a[1], rtol=1e-10, atol=1e-10)
        assert np.allclose(Pb.sum(axis=1), 1.0)
    else:
        assert a[1] is None and b[1] is None


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_compiled_loss_matches_numpy(n_jobs):
    """A whole loss (several interleaved chunks, threads): value and gradient agree."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=200)
    n = int(lengths.sum())
    import scipy.sparse as sp
    X = sp.random(n, 40, density=0.1, random_state=1, format="csr")
    y = rng.integers(0, 7, size=n)
    loss = ChainCRFLoss(X, lengths, y, 7, n_jobs=n_jobs, chunk_tokens=300)
    theta = rng.normal(size=loss.n_params)
    with compiled.use("numpy"):
        f0, g0 = loss.value_and_grad(theta)
    with compiled.use("auto"):
        assert compiled.available()
        f1, g1 = loss.value_and_grad(theta)
        assert loss.value(theta) == pytest.approx(f1, rel=1e-13)
    assert f1 == pytest.approx(f0, rel=1e-12)
    np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-10)


def test_switch():
    with compiled.use("numpy"):
        assert not compiled.available()
        assert compiled.kernels() is None
    with pytest.raises(ValueError, match="kernels must be one of"):
        with compiled.use("cython"):
            pass


def test_environment_variable(monkeypatch):
    monkeypatch.setitem(compiled._state, "choice", None)
    monkeypatch.setenv("ZBOUND_KERNELS", "numpy")
    assert not compiled.available()
    monkeypatch.setitem(compiled._state, "choice", None)
    monkeypatch.setenv("ZBOUND_KERNELS", "fortran")
    with pytest.raises(ValueError, match="ZBOUND_KERNELS must be one of"):
        compiled.available()
    monkeypatch.setitem(compiled._state, "choice", None)
    monkeypatch.delenv("ZBOUND_KERNELS")
    assert compiled.available()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 5),
       lengths=st.lists(st.integers(1, 6), min_size=1, max_size=10),
       ties=st.booleans(), chunk=st.integers(1, 20))
def test_compiled_viterbi_matches_numpy(seed, m, lengths, ties, chunk):
    """The same labeling as the NumPy recursion, ties included (integer scores in {-1, 0, 1}:
    both take the first best label), and the best score of every sequence by enumeration."""
    import itertools

    from zbound.structured.chain import Potentials, viterbi
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    lay = ChainLayout(lengths, chunk_tokens=chunk)
    n = int(lengths.sum())
    if ties:
        S, T = rng.integers(-1, 2, size=(n, m)) * 1.0, rng.integers(-1, 2, size=(m, m)) * 1.0
    else:
        S, T = rng.normal(size=(n, m)), rng.normal(size=(m, m))
    pot = Potentials(S, T)
    with compiled.use("numpy"):
        y0 = viterbi(lay, pot)
    with compiled.use("auto"):
        y1 = viterbi(lay, pot)
    np.testing.assert_array_equal(y1, y0)

    def score(seq, off):
        return S[off + np.arange(len(seq)), seq].sum() + \
            sum(T[a, b] for a, b in zip(seq[:-1], seq[1:]))

    for off, L in zip(lay.offsets, lengths):
        if m ** L > 4096:
            continue
        best = max(score(np.array(p), off) for p in itertools.product(range(m), repeat=L))
        assert score(y1[off:off + L], off) == pytest.approx(best, abs=1e-12)


def test_without_numba_the_numpy_path_runs(monkeypatch):
    """Numba missing (its kernels module cannot be imported): no compiled kernels, and a loss
    still evaluates, by the NumPy recursions."""
    import sys

    import zbound.structured
    monkeypatch.setitem(sys.modules, "zbound.structured._numba_kernels", None)
    monkeypatch.delattr(zbound.structured, "_numba_kernels", raising=False)
    monkeypatch.setitem(compiled._state, "kernels", None)
    monkeypatch.setitem(compiled._state, "choice", "auto")
    assert not compiled.available()
    rng = np.random.default_rng(1)
    import scipy.sparse as sp
    X = sp.random(12, 5, density=0.5, random_state=2, format="csr")
    loss = ChainCRFLoss(X, [5, 4, 3], rng.integers(0, 3, size=12), 3)
    f, g = loss.value_and_grad(rng.normal(size=loss.n_params))
    assert np.isfinite(f) and np.all(np.isfinite(g))


def test_chain_passes_run_blas_on_one_thread():
    """Inside the chunk passes (and a fit with chunk threads) BLAS runs on one thread, and
    the caller's setting comes back afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from zbound.structured.chain import chain_fit_threads, map_chunks

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    with threadpool_limits(2, user_api="blas"):
        before = blas_threads()          # {2}, or {1, 2} with a single-threaded build loaded
        seen = map_chunks(lambda c: blas_threads(), [0, 1, 2], n_jobs=2)
        assert seen == [{1}] * 3
        assert blas_threads() == before
        with chain_fit_threads(2):
            assert blas_threads() == {1}
        assert blas_threads() == before
        with chain_fit_threads(1):
            assert blas_threads() == before


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 7),
       lengths=st.lists(st.integers(1, 9), min_size=1, max_size=12),
       scale=st.sampled_from([0.0, 0.1, 1.0, 10.0, 100.0, 300.0]))
def test_compiled_split_factors_match_numpy(seed, m, lengths, scale):
    """The split bound's factors from the scaled forward messages: the compiled kernel
    (weights as products, one logarithm each, log space where a product would underflow)
    against Alg. 1's Gershgorin diagonals on log al + T, with ties (scale 0), weights
    spanning hundreds of nats down to the recursion's floor, and single labels. (A weight
    that underflowed to 0 would change its term's curvature by 1 / log(1 / w), not by w.)"""
    rng = np.random.default_rng(seed)
    lay = ChainLayout(np.asarray(sorted(lengths, reverse=True)), chunk_tokens=1 << 20)
    c = lay.chunks[0]
    x = scale * rng.normal(size=(c.tokens.size, m))
    al = np.exp(x - x.max(axis=1, keepdims=True))
    al = np.maximum(al / al.sum(axis=1, keepdims=True), 1e-290)   # above the floor
    T = scale * rng.normal(size=(m, m))
    if np.ptp(T) > 599:                                        # the scaled path's range
        T *= 599 / np.ptp(T)
    out = {}
    for k in ("numpy", "auto"):
        with compiled.use(k):
            out[k] = scaled_split_factors(c, al, T)
    (D0, K0), (D1, K1) = out["numpy"], out["auto"]
    np.testing.assert_allclose(D1, D0, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(K1, K0, rtol=1e-12, atol=1e-300)
