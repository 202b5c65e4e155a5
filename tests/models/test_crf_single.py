"""The chain CRF's float32 form (``ChainCRFLoss.single_precision``): the recursion in float32
against float64 on both kernel paths, the whole loss against the float64 loss, its
fall-back to float64 where float32 cannot hold the numbers, and mixed-precision fits whose
stops are float64's."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound import ChainCRF
from zbound.models.crf import ChainCRFLoss, SingleChainCRFLoss, chain_crf_objective
from zbound.solvers import minimize
from zbound.solvers.quasi_newton import LBFGSBound
from zbound.structured import compiled
from zbound.structured.chain import ChainLayout, chunk_value_grad

pytestmark = pytest.mark.numerics

try:
    import numba  # noqa: F401
    KERNELS = ["numpy", "auto"]
except ImportError:
    KERNELS = ["numpy"]


def _chunk(rng, lengths, m, scale, dtype, grad):
    lay = ChainLayout(np.asarray(sorted(lengths, reverse=True)), chunk_tokens=1 << 20)
    c = lay.chunks[0]
    S = scale * rng.normal(size=(c.tokens.size, m))
    T = scale * rng.normal(size=(m, m))
    return c, S, T


def _run(c, S, T, dtype, grad, row_shift):
    P = np.full(S.shape, np.nan, dtype) if grad else None
    out = chunk_value_grad(c, S.astype(dtype), np.exp(T - T.max()).astype(dtype),
                           float(T.max()), P, row_shift=row_shift)
    return out, P


@pytest.mark.parametrize("kernels", KERNELS)
@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 6),
       lengths=st.lists(st.integers(1, 9), min_size=1, max_size=12),
       scale=st.sampled_from([0.0, 0.1, 1.0, 10.0, 100.0, 1000.0]),
       row_shift=st.booleans(), grad=st.booleans())
def test_float32_chunk_matches_float64(kernels, seed, m, lengths, scale, row_shift, grad):
    """Random chunks, ties at scale 0 and scores up to 1e3 (beyond float32's floors): the
    float32 recursion gives None, or log Z, node and pairwise marginals within float32's
    rounding of the scores of the float64 ones (never a silent wrong value)."""
    rng = np.random.default_rng(seed)
    c, S, T = _chunk(rng, lengths, m, scale, np.float64, grad)
    with compiled.use(kernels):
        r64, P64 = _run(c, S, T, np.float64, grad, row_shift)
        r32, P32 = _run(c, S, T, np.float32, grad, row_shift)
    if r32 is None:
        return
    assert r64 is not None, "float32 passed a floor that float64 crossed"
    # each score rounds to float32 at ~6e-8 of its size; log Z moves by at most that
    err = 1e-6 * (np.abs(S).sum() + np.abs(T).max() * S.shape[0] + S.shape[0])
    assert abs(r32[0] - r64[0]) <= err
    if grad:
        assert P32.dtype == np.float32 and r32[1].dtype == np.float64
        tol = 1e-5 * max(1.0, scale)
        np.testing.assert_allclose(P32, P64, atol=tol)
        np.testing.assert_allclose(r32[1], r64[1], atol=tol * S.shape[0])


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("row_shift", [False, True])
def test_float32_floor_refuses_subnormal_messages(kernels, row_shift):
    """A state 95 nats below its row's maximum (its forward message subnormal in float32)
    carries the next position's mass through the only likely transition: float32 loses
    1e-4 of log Z there, so its recursion must decline (None) and float64 gives the value."""
    c = ChainLayout(np.array([3]), chunk_tokens=1 << 20).chunks[0]
    S = np.array([[0.0, -95.0], [0.0, 0.0], [0.0, 0.0]])
    T = np.array([[-100.0, -100.0], [0.0, 0.0]])
    with compiled.use(kernels):
        r64, _ = _run(c, S, T, np.float64, True, row_shift)
        r32, _ = _run(c, S, T, np.float32, True, row_shift)
    assert r64 is not None and r32 is None


def _problem(seed=0, n_seq=120, d=30, m=5, value=1.0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 20, size=n_seq)
    n = int(lengths.sum())
    X = sp.random(n, d, density=0.15, random_state=seed, format="csr") * value
    y = rng.integers(0, m, size=n)
    return X, lengths, y, m, rng


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("copy", [True, False])
def test_single_loss_matches_double(kernels, n_jobs, copy):
    """Value and gradient of the float32 form (several chunks, threads, with and without a
    float32 copy of X) within float32's rounding of the float64 loss's, at a random point
    and near a fit (where P - Y is small: the residual form keeps its precision)."""
    X, lengths, y, m, rng = _problem()
    loss = ChainCRFLoss(X, lengths, y, m, n_jobs=n_jobs, chunk_tokens=200)
    single = loss.single_precision(copy=copy)
    assert isinstance(single, SingleChainCRFLoss) and single.blocked is (not copy)
    theta = rng.normal(size=loss.n_params)
    col = np.asarray(abs(X).sum(axis=0)).ravel()
    scale_of_sums = np.concatenate([np.repeat(col, m), np.full(m * m, lengths.sum())])
    fit = minimize(chain_crf_objective(X, lengths, y, m, 0.01), np.zeros(loss.n_params),
                   method="lbfgs-bound", tol=1e-8, max_iter=300).x
    with compiled.use(kernels):
        for th in (theta, fit):
            f0, g0 = loss.value_and_grad(th)
            f1, g1 = single.value_and_grad(th)
            assert single.value(th) == pytest.approx(f1, rel=1e-7)
            assert f1 == pytest.approx(f0, rel=1e-6)
            assert g1.dtype == np.float64
            # each token adds its float32 rounding (~6e-8 of |x| per entry) to the sums
            assert np.all(np.abs(g1 - g0) <= 1e-6 * scale_of_sums)


def test_single_loss_falls_back_to_double():
    """Scores spanning beyond float32's floors (and float64's scaled recursion): the
    float32 form returns the float64 loss's values exactly; beyond 1e30 there is no float32
    form."""
    X, lengths, y, m, rng = _problem(value=1e3)
    loss = ChainCRFLoss(X, lengths, y, m, chunk_tokens=200)
    single = loss.single_precision()
    theta = rng.normal(size=loss.n_params)
    f0, g0 = loss.value_and_grad(theta)
    with np.errstate(over="raise", invalid="raise", divide="raise"):   # no warning on the way
        f1, g1 = single.value_and_grad(theta)
        assert single.value(theta) == f0
    assert np.isfinite(f0) and f1 == f0
    np.testing.assert_array_equal(g1, g0)
    X, lengths, y, m, _ = _problem(value=1e31)
    assert ChainCRFLoss(X, lengths, y, m).single_precision() is None


@pytest.mark.parametrize("evaluation", ["mixed", "mixed-lean"])
def test_mixed_fit_stops_in_float64(evaluation):
    """L-BFGS with float32 evaluations first: its stop, value and gradient are float64's
    and it reaches the float64 run's objective."""
    X, lengths, y, m, _ = _problem(seed=3, n_seq=200)
    obj = chain_crf_objective(X, lengths, y, m, 0.05)
    x0 = np.zeros(obj.n_params)
    ref = minimize(obj, x0, method=LBFGSBound, tol=1e-7, max_iter=500)
    res = minimize(obj, x0, method=LBFGSBound, tol=1e-7, max_iter=500, evaluation=evaluation)
    assert res.converged and res.info["single_iterations"] > 0
    f, g = obj.value_and_grad(res.x)
    assert res.fun == f
    np.testing.assert_array_equal(res.jac, g)
    assert res.fun == pytest.approx(ref.fun, rel=1e-9)
    h = np.asarray(res.trace.objective)[res.info["single_iterations"]:]
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))       # monotone in float64


def test_chain_crf_precision():
    """ChainCRF's precision: "mixed" and "double" reach the same objective, "auto" takes
    float64 on a small corpus, float32 precisions need lbfgs-bound."""
    X, lengths, y, m, _ = _problem(seed=4, n_seq=150)
    seqs = np.split(X.toarray(), np.cumsum(lengths)[:-1])
    labels = np.split(y, np.cumsum(lengths)[:-1])
    fits = {p: ChainCRF(c2=0.05, tol=1e-8, max_iter=500, precision=p).fit(seqs, labels)
            for p in ("double", "mixed", "mixed-lean", "auto")}
    assert fits["double"].solver_result_.info.get("single_iterations", 0) == 0
    assert fits["auto"].solver_result_.info.get("single_iterations", 0) == 0
    for p in ("mixed", "mixed-lean"):
        assert fits[p].solver_result_.info["single_iterations"] > 0
        assert fits[p].objective_ == pytest.approx(fits["double"].objective_, rel=1e-9)
    with pytest.raises(ValueError, match="precision='mixed' needs solver='lbfgs-bound'"):
        ChainCRF(solver="bound", precision="mixed").fit(seqs, labels)
    with pytest.raises(ValueError, match="precision"):
        ChainCRF(precision="float16").fit(seqs, labels)
