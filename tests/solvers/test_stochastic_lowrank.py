"""LSPFB's blocked low-rank accumulation (:class:`BlockedLowRank`): with one term per block it is
the sequential "exact" rule; with any block it stays an upper bound on the Alg. 1 curvature
and the majorizer on the loss."""

from __future__ import annotations

import numpy as np
import pytest
from _solver_problems import logistic_problem
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.models.loss import SoftmaxLoss
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.solvers import minimize
from zbound.solvers.stochastic import (
    LSPFB,
    BlockedLowRank,
    batch_objective,
    blocked_lowrank_update,
    lowrank_majorizer_blocked,
)


def _model(seed, t=30, d=6, n=4, scale=1.0, weights=False, reference=False):
    rng = np.random.default_rng(seed)
    X = scale * rng.standard_normal((t, d))
    y = rng.integers(0, n, t)
    y[:n] = np.arange(n)
    sw = None
    if weights:
        sw = rng.uniform(0.0, 2.0, t)
        sw[::5] = 0.0                                  # zero weights
    loss = SoftmaxLoss(X, y, n, sample_weight=sw, reference_class=reference)
    return Objective(loss, L2Penalty(0.5))


def _min_gap(curv, exact) -> float:
    """lambda_min(C - exact) relative to ||exact||: >= -rounding for a dominating C."""
    A = curv.to_dense() - exact.to_dense()
    return float(np.linalg.eigvalsh(0.5 * (A + A.T)).min()) / max(
        1.0, float(np.abs(exact.to_dense()).max()))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rank", [1, 3, 10])
def test_one_term_blocks_are_the_sequential_exact_rule(seed, rank):
    model = batch_objective(_model(seed), np.arange(30))
    theta = np.random.default_rng(seed + 10).standard_normal(model.n_params)
    seq = model.lowrank_majorizer(theta, rank=rank, rule="exact")
    blk = lowrank_majorizer_blocked(model, theta, rank=rank, block=1)
    np.testing.assert_allclose(blk.curvature.to_dense(), seq.curvature.to_dense(),
                               rtol=1e-9, atol=1e-10)
    assert blk.value == pytest.approx(seq.value, rel=1e-12)
    np.testing.assert_allclose(blk.grad, seq.grad, rtol=1e-12, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), rank=st.integers(1, 12), block=st.integers(1, 40),
       scale=st.sampled_from([1e-3, 1.0, 5.0, 30.0]), theta_scale=st.sampled_from([0.0, 1.0, 20.0]),
       weights=st.booleans(), reference=st.booleans())
def test_blocked_curvature_dominates_the_alg1_curvature(seed, rank, block, scale, theta_scale,
                                                        weights, reference):
    n = 2 if reference else 4
    model = batch_objective(_model(seed, n=n, scale=scale, weights=weights,
                                   reference=reference), np.arange(30))
    rng = np.random.default_rng(seed)
    theta = theta_scale * rng.standard_normal(model.n_params)
    exact = model.majorizer(theta)
    blk = lowrank_majorizer_blocked(model, theta, rank=rank, block=block)
    assert _min_gap(blk.curvature, exact.curvature) >= -1e-9
    assert blk.value == pytest.approx(exact.value, rel=1e-12)
    # the quadratic majorizes the batch objective at random points
    for _ in range(5):
        t2 = theta + rng.standard_normal(model.n_params) * rng.choice([0.01, 1.0, 10.0])
        delta = t2 - theta
        q = blk.value + blk.grad @ delta + 0.5 * blk.curvature.quad(delta)
        assert model.value(t2) <= q + 1e-9 * max(1.0, abs(q))
    C = blk.curvature
    assert C.rank <= rank and np.isfinite(C.D).all() and (C.D >= 0).all()


def test_rank_deficient_and_repeated_blocks_stay_a_bound():
    """Terms in the span of V, exact duplicates and zero rows: still dominating."""
    rng = np.random.default_rng(3)
    p = 12
    base = rng.standard_normal((3, p))
    R = np.vstack([base, base, 2.0 * base[:1], np.zeros((2, p)),
                   rng.standard_normal((5, p)), base.sum(axis=0, keepdims=True)])
    for block in (1, 2, 4, 7, 20):
        acc = BlockedLowRank(p, rank=2, block=block)
        acc.add_rows(R)
        A = acc.curvature().to_dense() - R.T @ R
        assert np.linalg.eigvalsh(A).min() >= -1e-9 * np.abs(R.T @ R).max()
        V = acc.V
        np.testing.assert_allclose(V @ V.T, np.eye(V.shape[0]), atol=1e-8)


def test_block_update_function_and_its_checks():
    rng = np.random.default_rng(4)
    p = 8
    V = np.linalg.qr(rng.standard_normal((p, 2)))[0].T
    s = np.array([3.0, 1.0])
    D = np.zeros(p)
    R = rng.standard_normal((3, p))
    V2, s2 = blocked_lowrank_update(V, s, D, R, rank=2)
    exact = V.T @ np.diag(s) @ V + R.T @ R
    approx = V2.T @ np.diag(s2) @ V2 + np.diag(D)
    assert np.linalg.eigvalsh(approx - exact).min() >= -1e-10
    assert V2.shape == (2, p) and D.sum() > 0
    with pytest.raises(ValueError, match="at most"):
        BlockedLowRank(p, 2, 2).add_block(R)
    with pytest.raises(ValueError, match="rank"):
        blocked_lowrank_update(np.zeros((3, p)), np.ones(3), D, R, rank=2)


def test_lspfb_options_choose_the_accumulation():
    assert LSPFB().blocked() and not LSPFB(lowrank_rule="sgb").blocked()
    assert not LSPFB(accumulate="sequential").blocked()
    with pytest.raises(ValueError, match="exact"):
        LSPFB(accumulate="blocked", lowrank_rule="sgb")
    with pytest.raises(ValueError, match="accumulate"):
        LSPFB(accumulate="svd")
    with pytest.raises(ValueError, match="block"):
        LSPFB(block=0)


@pytest.mark.parametrize("block", [1, 5, 64])
def test_full_batch_blocked_lspfb_is_monotone(block):
    model = logistic_problem(5, t=40, reg=0.3)
    res = minimize(model, np.zeros(model.n_params), method="lspfb", lr=1.0,
                   schedule="constant", batch_size=1000, max_iter=12, tol=0.0, rank=3,
                   block=block)
    f = res.trace.objective
    assert np.all(np.diff(f) <= 1e-10 * np.abs(f[1:])), f


def test_blocked_and_sequential_lspfb_reach_the_same_objective():
    model = logistic_problem(6, t=200, reg=1.0)
    out = {}
    for acc in ("blocked", "sequential"):
        res = minimize(model, np.zeros(model.n_params), method="lspfb", lr=1.0, decay=5.0,
                       batch_size=50, max_iter=30, tol=0.0, rank=3, accumulate=acc)
        out[acc] = res.fun
    assert out["blocked"] == pytest.approx(out["sequential"], rel=1e-2)


# ------------------------------------------------------ the Kronecker curvature of spfb-avg
@pytest.mark.parametrize("rank", [None, 7, 3, 1])
def test_kronecker_solve_with_a_truncated_or_diagonal_gram(rank):
    """rank r: G replaced by its top r eigenpairs plus the mean of the rest on the complement;
    (g, None): the diagonal Gram factor diag(g). Both solved exactly."""
    from zbound.solvers.stochastic import KroneckerFactored

    rng = np.random.default_rng(7)
    n, d, lam = 3, 7, 0.1
    B = rng.standard_normal((n, n))
    B = B @ B.T
    Xd = rng.standard_normal((20, d))
    G = Xd.T @ Xd / 20
    eg, Ug = np.linalg.eigh(G)
    v = rng.standard_normal(n * d)
    if rank is not None and rank < d:
        top = Ug[:, -rank:]
        Gr = top @ np.diag(eg[-rank:]) @ top.T + eg[:-rank].mean() * (np.eye(d) - top @ top.T)
    else:
        Gr = G
    K = KroneckerFactored(B, (eg, Ug), lam, rank)
    np.testing.assert_allclose(K.solve(v), np.linalg.solve(np.kron(B, Gr) + lam * np.eye(n * d),
                                                           v), rtol=1e-9, atol=1e-12)
    K = KroneckerFactored(B, (np.diagonal(G).copy(), None), lam)
    np.testing.assert_allclose(K.solve(v), np.linalg.solve(
        np.kron(B, np.diag(np.diagonal(G))) + lam * np.eye(n * d), v), rtol=1e-9, atol=1e-12)


def test_averaged_kronecker_spfb_with_a_truncated_gram():
    """Above dense_max the averaged SPFB runs with a truncated Gram factor and gets close to
    the optimum; bad values are rejected."""
    from zbound.solvers.stochastic import SPFB

    model = logistic_problem(8, t=300, d=6, n=4, reg=1.0)
    ref = minimize(model, np.zeros(model.n_params), method="lbfgs", tol=1e-10).fun
    res = minimize(model, np.zeros(model.n_params), method="spfb", curvature="average",
                   dense_max=1, gram_updates=3, kron_rank=4, lr=1.0,
                   decay=6.0, batch_size=50, max_iter=40, tol=0.0)
    assert res.fun <= ref * 1.02
    with pytest.raises(ValueError, match="kron_rank"):
        SPFB(kron_rank=0)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_binary_dense_curvature_fast_path(fit_intercept):
    """One free class: the weighted Gram product equals the general dense assembly."""

    rng = np.random.default_rng(9)
    X = rng.standard_normal((50, 6))
    y = rng.integers(0, 2, 50)
    loss = SoftmaxLoss(X, y, 2, sample_weight=rng.uniform(0, 2, 50), reference_class=True,
                       fit_intercept=fit_intercept)
    C = loss.majorizer(rng.standard_normal(loss.n_params)).curvature
    np.testing.assert_allclose(C.assemble(), C.to_dense(), rtol=1e-12, atol=1e-12)
