"""Chain inference at extreme scores: token scores spanning up to 2 000 nats inside one row,
transitions on both sides of the 600-nat switch to log space, ties, against enumeration over
every label path and, on long chains, against a plain log-space forward-backward.

Tolerances (tests/_tolerance.py, rule 1): log Z and the gold score are sums of L scores of
magnitude up to s, so the NLL of a sequence carries an absolute rounding error of about
L s EPS; a marginal exp(a - log Z) inherits that error in its exponent, so its absolute error is
about the same (a marginal is at most 1).
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from _tolerance import rounding
from zbound.models.crf import ChainCRFLoss
from zbound.structured.chain import ChainLayout, Potentials, forward_backward, marginals

pytestmark = pytest.mark.numerics

SPANS = [0.0, 1.0, 50.0, 300.0, 700.0, 1000.0, 2000.0]
TRANSITION_SPANS = [0.0, 10.0, 300.0, 599.0, 700.0, 1200.0]


def _scores(rng, n, m, span, tspan, ties):
    S = span * (rng.random((n, m)) - 0.5)
    T = tspan * (rng.random((m, m)) - 0.5)
    if ties:                                      # repeated maxima in rows and transitions
        S[:, -1] = S[:, 0]
        T[-1] = T[0]
    return S, T


def _enumerate(S, T, lengths, y):
    """NLL, node marginals (n, m) and summed pairwise marginals (m, m), by every path."""
    m = S.shape[1]
    nll, P, pair, off = 0.0, np.zeros_like(S), np.zeros((m, m)), 0
    for L in lengths:
        paths = np.array(list(itertools.product(range(m), repeat=int(L))))
        s = S[off + np.arange(L), paths].sum(axis=1)
        if L > 1:
            s = s + T[paths[:, :-1], paths[:, 1:]].sum(axis=1)
        lz = logsumexp(s)
        p = np.exp(s - lz)
        gold = (paths == y[off:off + L]).all(axis=1)
        nll += lz - s[gold][0]
        for t in range(L):
            P[off + t] = np.bincount(paths[:, t], weights=p, minlength=m)
        for t in range(1, L):
            np.add.at(pair, (paths[:, t - 1], paths[:, t]), p)
        off += L
    return nll, P, pair


def _counts(y, lengths, m):
    obs_T, off = np.zeros((m, m)), 0
    for L in lengths:
        for t in range(1, L):
            obs_T[y[off + t - 1], y[off + t]] += 1
        off += L
    return obs_T


@settings(max_examples=600, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 3),
       lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       span=st.sampled_from(SPANS), tspan=st.sampled_from(TRANSITION_SPANS),
       ties=st.booleans(), chunk=st.sampled_from([1, 3, 8192]))
def test_nll_and_gradient_against_enumeration(seed, m, lengths, span, tspan, ties, chunk):
    rng = np.random.default_rng(seed)
    n = sum(lengths)
    S, T = _scores(rng, n, m, span, tspan, ties)
    y = rng.integers(0, m, size=n)
    loss = ChainCRFLoss(sp.identity(n, format="csr"), lengths, y, m, chunk_tokens=chunk)
    theta = np.r_[S.ravel(), T.ravel()]
    f, g = loss.value_and_grad(theta)
    nll, P, pair = _enumerate(S, T, lengths, y)
    scale = max(span, tspan, 1.0)
    tol = rounding(scale, ops=2 * n)
    assert np.isfinite(f) and np.all(np.isfinite(g))
    assert abs(f - nll) <= tol
    grad_S = P - np.eye(m)[y]
    grad_T = pair - _counts(y, lengths, m)
    np.testing.assert_allclose(g, np.r_[grad_S.ravel(), grad_T.ravel()], rtol=0, atol=tol)
    assert abs(loss.value(theta) - nll) <= tol


@settings(max_examples=600, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 3), L=st.integers(1, 6),
       span=st.sampled_from(SPANS), tspan=st.sampled_from(TRANSITION_SPANS), ties=st.booleans())
def test_marginals_against_enumeration(seed, m, L, span, tspan, ties):
    rng = np.random.default_rng(seed)
    S, T = _scores(rng, L, m, span, tspan, ties)
    lay, pot = ChainLayout([L]), Potentials(S, T)
    lz, A, B = forward_backward(lay, pot)
    P, pair = marginals(lay, pot, lz, A, B)
    _, P_ref, pair_ref = _enumerate(S, T, [L], np.zeros(L, dtype=int))
    tol = rounding(max(span, tspan, 1.0), ops=2 * L)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=tol)
    np.testing.assert_allclose(P, P_ref, rtol=0, atol=tol)
    np.testing.assert_allclose(pair, pair_ref, rtol=0, atol=tol * L)


def _logspace_reference(S, T):
    """log Z and node marginals of one chain by the textbook log-space recursion."""
    L = S.shape[0]
    a = np.empty_like(S)
    b = np.zeros_like(S)
    a[0] = S[0]
    for t in range(1, L):
        a[t] = S[t] + logsumexp(a[t - 1][:, None] + T, axis=0)
    for t in range(L - 2, -1, -1):
        b[t] = logsumexp(T + (S[t + 1] + b[t + 1])[None, :], axis=1)
    lz = logsumexp(a[-1])
    return lz, np.exp(a + b - lz)


@pytest.mark.parametrize("span,tspan", [(300.0, 200.0), (800.0, 500.0), (2000.0, 599.0),
                                        (2000.0, 1200.0), (1500.0, 50.0)])
def test_long_chains_against_logspace_reference(span, tspan):
    """150-token chains (several chunks of the scaled recursion) in the regimes that once gave
    marginals summing to 0 and NaN gradients."""
    rng = np.random.default_rng(int(span + tspan))
    m, lengths = 3, [150, 97, 1]
    n = sum(lengths)
    S, T = _scores(rng, n, m, span, tspan, ties=False)
    y = rng.integers(0, m, size=n)
    loss = ChainCRFLoss(sp.identity(n, format="csr"), lengths, y, m, chunk_tokens=64)
    f, g = loss.value_and_grad(np.r_[S.ravel(), T.ravel()])
    lay, pot = ChainLayout(lengths, chunk_tokens=64), Potentials(S, T)
    lz, A, B = forward_backward(lay, pot)
    P, _ = marginals(lay, pot, lz, A, B)
    ref_nll, off = 0.0, 0
    for L in lengths:
        lz_ref, P_ref = _logspace_reference(S[off:off + L], T)
        tol = rounding(max(span, tspan), ops=2 * L)
        assert abs(lz[lay.seq_of_token[off]] - lz_ref) <= tol * max(1.0, abs(lz_ref)) / span
        np.testing.assert_allclose(P[off:off + L], P_ref, rtol=0, atol=tol)
        gold = S[off + np.arange(L), y[off:off + L]].sum()
        gold += T[y[off:off + L - 1], y[off + 1:off + L]].sum()
        ref_nll += lz_ref - gold
        off += L
    assert np.isfinite(f) and np.all(np.isfinite(g))
    assert abs(f - ref_nll) <= rounding(max(span, tspan), ops=2 * n)
    np.testing.assert_allclose(g[:n * m].reshape(n, m), P - np.eye(m)[y], rtol=0,
                               atol=rounding(max(span, tspan), ops=2 * max(lengths)))


def test_the_reported_cases():
    """A chunk-wide shift that hid an underflowed entry (NLL -93 where it is 4e-41), and
    scaled marginals that summed to 0."""
    S = np.array([[-299., -153.], [3., 452.]])
    T = np.array([[79., 132.], [-116., -107.]])
    loss = ChainCRFLoss(sp.identity(2, format="csr"), [2], np.array([0, 1]), 2)
    f, g = loss.value_and_grad(np.r_[S.ravel(), T.ravel()])
    nll, P, pair = _enumerate(S, T, [2], np.array([0, 1]))
    assert abs(f - nll) <= rounding(452.0, ops=4)
    assert np.abs(g).max() <= rounding(452.0, ops=4)
    S = np.array([[-788., 330.], [-886., 535.], [389., 1267.]])
    T = np.array([[217., 285.], [135., -116.]])
    lay, pot = ChainLayout([3]), Potentials(S, T)
    lz, A, B = forward_backward(lay, pot)
    P = marginals(lay, pot, lz, A, B)[0]
    np.testing.assert_allclose(P, _enumerate(S, T, [3], np.zeros(3, dtype=int))[1],
                               atol=rounding(1267.0, ops=6))
