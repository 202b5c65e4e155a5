"""Alg. 3 (junction-tree bound): exact log Z and mean, validity, tightness on chains."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.bounds.junction import (
    JunctionTree,
    _alg1_groups,
    alg1_gershgorin,
    chain_bound,
    common_upper_bound,
    junction_bound,
)


def brute(tree, theta):
    """Every joint configuration: features F (N, d), log priors (N,)."""
    card = tree.cardinality
    F, H = [], []
    for Y in itertools.product(*[range(k) for k in card]):
        f = np.zeros(tree.n_features)
        h = 0.0
        for c, cl in enumerate(tree.cliques):
            w = np.ravel_multi_index(tuple(Y[v] for v in cl), tuple(card[v] for v in cl))
            f += tree.features[c][w]
            h += tree.log_prior[c][w]
        F.append(f)
        H.append(h)
    return np.array(F), np.array(H)


def exact(F, H, theta):
    s = H + F @ theta
    mx = s.max()
    lz = mx + np.log(np.exp(s - mx).sum())
    p = np.exp(s - lz)
    mean = p @ F
    cov = (F - mean).T @ ((F - mean) * p[:, None])
    return lz, mean, cov


def random_tree(rng, n_cliques, d, card_max=3, scale=1.0, zero_prior=False):
    """Random junction tree: each new clique shares a random subset of a random earlier one."""
    cliques, parent, n_vars, card = [], [], 0, []
    for c in range(n_cliques):
        if c == 0:
            k = int(rng.integers(1, 3))
            cl = list(range(k))
            n_vars = k
            parent.append(-1)
        else:
            p = int(rng.integers(0, c))
            keep = [v for v in cliques[p] if rng.random() < 0.6]
            new = int(rng.integers(1, 3)) if len(keep) < 2 else int(rng.integers(0, 2))
            cl = keep + list(range(n_vars, n_vars + new))
            if not cl:
                cl = [n_vars]
                new = 1
            n_vars += new
            parent.append(p)
        cliques.append(cl)
    card = rng.integers(2, card_max + 1, size=n_vars)
    feats, priors = [], []
    for cl in cliques:
        size = int(np.prod(card[cl]))
        feats.append(scale * rng.normal(size=(size, d)))
        lp = np.zeros(size)
        if zero_prior and size > 1:
            lp[rng.integers(0, size)] = -np.inf
        priors.append(lp)
    return JunctionTree(cliques, card, parent, feats, priors)


def check_valid(bound, F, H, rng, n_dirs=30, scales=(0.1, 1.0, 5.0)):
    for s in scales:
        for _ in range(n_dirs):
            th = bound.theta + s * rng.normal(size=bound.theta.shape)
            lz = exact(F, H, th)[0]
            assert bound.evaluate(th) >= lz - 1e-9 * max(1.0, abs(lz))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n_cliques=st.integers(1, 5), d=st.integers(1, 4),
       scale=st.sampled_from([0.0, 0.3, 1.0, 3.0]), zero_prior=st.booleans(),
       rule=st.sampled_from(["tight", "literal"]),
       curvature=st.sampled_from(["dense", "diagonal"]))
def test_tree_exact_and_valid(seed, n_cliques, d, scale, zero_prior, rule, curvature):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_cliques, d, scale=scale, zero_prior=zero_prior)
    if np.prod(tree.cardinality) > 3**8:
        return
    theta = rng.normal(size=d)
    F, H = brute(tree, theta)
    lz, mean, cov = exact(F, H, theta)
    b = junction_bound(tree, theta, rule=rule, curvature=curvature)
    assert b.log_z == pytest.approx(lz, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(b.mean, mean, rtol=1e-8, atol=1e-9)
    C = b.curvature if b.curvature.ndim == 2 else np.diag(b.curvature)
    # dominates the Hessian (necessary) and bounds log Z (the claim)
    assert np.linalg.eigvalsh(C - cov).min() >= -1e-8 * (1 + np.abs(C).max())
    check_valid(b, F, H, rng)


def chain_arrays(rng, T, m, d, scale=1.0):
    g = scale * rng.normal(size=(T, m, d))
    e = scale * rng.normal(size=(T - 1, m, m, d))
    return g, e


def chain_brute(g, e, he=None):
    T, m, d = g.shape
    F, H = [], []
    for y in itertools.product(range(m), repeat=T):
        f = sum(g[t, y[t]] for t in range(T))
        h = 0.0
        for t in range(1, T):
            f = f + e[t - 1, y[t - 1], y[t]]
            if he is not None:
                h += he[t - 1, y[t - 1], y[t]]
        F.append(f)
        H.append(h)
    return np.array(F), np.array(H)


def chain_tree(g, e):
    """The chain as a JunctionTree: cliques (y_{t-1}, y_t), then a root {y_{T-1}}."""
    T, m, d = g.shape
    cliques, parent, feats = [], [], []
    for t in range(1, T):
        cliques.append([t - 1, t])
        f = e[t - 1] + g[t][None, :, :]
        if t == 1:
            f = f + g[0][:, None, :]
        feats.append(f.reshape(m * m, d))
        parent.append(t)
    cliques.append([T - 1])
    feats.append(g[0] if T == 1 else np.zeros((m, d)))
    parent.append(-1)
    parent[-2:] = [T - 1, -1] if T > 1 else [-1]
    return JunctionTree(cliques, np.full(T, m), parent[:len(cliques)], feats)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), T=st.integers(1, 6), m=st.integers(1, 3),
       d=st.integers(1, 4), scale=st.sampled_from([0.0, 0.5, 2.0, 30.0]),
       rule=st.sampled_from(["tight", "literal", "shared", "split"]),
       curvature=st.sampled_from(["dense", "diagonal"]))
def test_chain_exact_and_valid(seed, T, m, d, scale, rule, curvature):
    if rule == "split":
        curvature = "dense"
    rng = np.random.default_rng(seed)
    g, e = chain_arrays(rng, T, m, d, scale)
    theta = rng.normal(size=d)
    F, H = chain_brute(g, e)
    lz, mean, cov = exact(F, H, theta)
    b = chain_bound(g, e, theta, rule=rule, curvature=curvature)
    assert b.log_z == pytest.approx(lz, rel=1e-10, abs=1e-9)
    np.testing.assert_allclose(b.mean, mean, rtol=1e-7, atol=1e-8)
    check_valid(b, F, H, rng, n_dirs=15)
    if rule in ("tight", "literal") and curvature == "dense" and T > 1:
        jt = junction_bound(chain_tree(g, e), theta, rule=rule)
        assert jt.log_z == pytest.approx(lz, rel=1e-10, abs=1e-9)
        np.testing.assert_allclose(jt.mean, mean, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(jt.curvature, b.curvature, rtol=1e-7, atol=1e-9)


def test_chain_batch_matches_single():
    rng = np.random.default_rng(0)
    gs, es = zip(*[chain_arrays(rng, 4, 3, 2) for _ in range(3)])
    theta = rng.normal(size=2)
    bb = chain_bound(np.stack(gs), np.stack(es), theta)
    for i in range(3):
        b1 = chain_bound(gs[i], es[i], theta)
        assert bb.log_z[i] == pytest.approx(b1.log_z)
        np.testing.assert_allclose(bb.curvature[i], b1.curvature, atol=1e-12)


@pytest.mark.parametrize("rule", ["tight", "literal", "shared", "split"])
@pytest.mark.parametrize("seed,scale", [(1, 300.0), (7, 700.0)])
def test_chain_zero_prior_and_extreme_scores(rule, seed, scale):
    """Scores of hundreds of nats (near where exp overflows without the max shift) and
    -inf edge priors (forbidden transitions), every rule including the CRF's split rule."""
    rng = np.random.default_rng(seed)
    g, e = chain_arrays(rng, 5, 3, 2, scale=scale)
    he = np.zeros((4, 3, 3))
    he[:, 0, 1] = -np.inf
    he[1, 2, :2] = -np.inf
    theta = rng.normal(size=2)
    F, H = chain_brute(g, e, he)
    lz, mean, _ = exact(F, H, theta)
    b = chain_bound(g, e, theta, edge_log_prior=he, rule=rule)
    assert np.isfinite(b.log_z) and b.log_z == pytest.approx(lz, rel=1e-12)
    np.testing.assert_allclose(b.mean, mean, rtol=1e-6, atol=1e-6)
    assert np.all(np.isfinite(b.curvature))
    check_valid(b, F, H, rng, n_dirs=10, scales=(1e-3, 1e-2))


@pytest.mark.parametrize("rule", ["tight", "literal", "shared", "split"])
def test_tie_and_zero_weights(rule):
    rng = np.random.default_rng(2)
    g = np.zeros((4, 3, 2))
    e = np.zeros((3, 3, 3, 2))
    b = chain_bound(g, e, np.zeros(2), rule=rule)
    assert b.log_z == pytest.approx(4 * np.log(3))
    assert np.all(b.curvature == 0)
    g, e = chain_arrays(rng, 4, 3, 2)
    b = chain_bound(g, e, np.zeros(2), rule=rule)
    F, H = chain_brute(g, e)
    check_valid(b, F, H, rng)
    # exact ties between labels (all scores equal at every position except one feature)
    g = np.zeros((4, 3, 2))
    g[:, :, 0] = 1.0
    e = np.zeros((3, 3, 3, 2))
    e[:, 0, 0, 1] = 1.0
    b = chain_bound(g, e, np.array([0.5, -0.3]), rule=rule)
    F, H = chain_brute(g, e)
    lz = exact(F, H, np.array([0.5, -0.3]))[0]
    assert b.log_z == pytest.approx(lz, rel=1e-12)
    check_valid(b, F, H, rng)


def trace_ratios(rule, lengths, m=3, d=4, seed=0, scale=0.5):
    rng = np.random.default_rng(seed)
    out = []
    for T in lengths:
        g, e = chain_arrays(rng, T, m, d, scale)
        theta = rng.normal(size=d)
        F, H = chain_brute(g, e)
        cov = exact(F, H, theta)[2]
        b = chain_bound(g, e, theta, rule=rule)
        out.append(np.trace(b.curvature) / np.trace(cov))
    return out


@pytest.mark.slow
def test_default_trace_ratio_stays_small():
    lengths = list(range(2, 11))
    tight = trace_ratios("tight", lengths)
    literal = trace_ratios("literal", lengths)
    shared = trace_ratios("shared", lengths)
    print("\nT      " + " ".join(f"{T:7d}" for T in lengths))
    for name, r in (("tight", tight), ("literal", literal), ("shared", shared)):
        print(f"{name:7s}" + " ".join(f"{x:7.1f}" for x in r))
    assert max(tight) < 10
    assert literal[-1] > 10 * tight[-1]          # the child sum grows with length


def test_common_upper_bound_dominates():
    rng = np.random.default_rng(3)
    A = np.stack([(lambda M: M @ M.T)(rng.normal(size=(4, 2))) for _ in range(5)])
    C = common_upper_bound(A)
    for a in A:
        assert np.linalg.eigvalsh(C - a).min() >= -1e-10
    D = rng.random((5, 4))
    assert np.all(common_upper_bound(D) >= D)


def test_bad_trees():
    f = [np.zeros((2, 1)), np.zeros((2, 1))]
    with pytest.raises(ValueError, match="exactly one root"):
        JunctionTree([[0], [1]], [2, 2], [-1, -1], f)
    with pytest.raises(ValueError, match="running intersection"):
        JunctionTree([[0, 1], [1, 2], [0, 3]], [2, 2, 2, 2], [-1, 0, 1],
                     [np.zeros((4, 1))] * 3)
    with pytest.raises(ValueError, match="shape"):
        JunctionTree([[0]], [2], [-1], [np.zeros((3, 1))])
    with pytest.raises(ValueError, match="NaN"):
        JunctionTree([[0]], [2], [-1], [np.array([[np.nan], [0.0]])])
    tree = JunctionTree([[0]], [2], [-1], [np.zeros((2, 1))])
    with pytest.raises(ValueError, match="rule"):
        junction_bound(tree, np.zeros(1), rule="nope")
    with pytest.raises(ValueError, match="theta"):
        junction_bound(tree, np.zeros(2))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 7),
       scale=st.sampled_from([0.0, 1.0, 5.0, 50.0, 700.0]), ties=st.booleans())
def test_alg1_gershgorin_dominates_label_space_curvature(seed, k, scale, ties):
    rng = np.random.default_rng(seed)
    logw = scale * rng.normal(size=(3, k))
    if ties:
        logw[:, :2] = logw[:, :1].max()
    if k > 2:
        logw[0, -1] = -np.inf                  # a zero weight
    D = alg1_gershgorin(logw)
    _, _, B = _alg1_groups(logw, np.broadcast_to(np.eye(k), (3, k, k)), "dense", "argmax-first")
    assert np.all(np.isfinite(D)) and np.all(D >= 0)
    for i in range(3):
        assert np.linalg.eigvalsh(np.diag(D[i]) - B[i]).min() >= -1e-12


def test_split_rule_bad_input():
    rng = np.random.default_rng(0)
    g, e = chain_arrays(rng, 3, 2, 2)
    with pytest.raises(ValueError, match="dense"):
        chain_bound(g, e, np.zeros(2), rule="split", curvature="diagonal")
    with pytest.raises(ValueError, match="eps"):
        chain_bound(g, e, np.zeros(2), rule="split", eps=0.0)
