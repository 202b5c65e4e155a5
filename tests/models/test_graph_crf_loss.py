"""Pairwise CRF loss on graphs: the chain CRF's loss on chains, enumeration and central
differences on loopy graphs with edge features and sample weights, and clear errors."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.bounds.enumerate import quadratic_bound
from zbound.models.crf import ChainCRFLoss
from zbound.models.graph_crf import GraphCRFLoss, JunctionCurvature

pytestmark = pytest.mark.numerics


def random_graphs(rng, n_graphs=4, max_nodes=5, n_feat=4, m=3, K=2, density=0.6):
    n_nodes = rng.integers(1, max_nodes + 1, size=n_graphs)
    edges, feats = [], []
    for n in n_nodes:
        e = [p for p in itertools.combinations(range(int(n)), 2) if rng.random() < density]
        e = np.array([(v, u) if rng.random() < 0.5 else (u, v) for u, v in e],
                     dtype=np.int64).reshape(-1, 2)
        edges.append(e)
        feats.append(rng.normal(size=(e.shape[0], K)))
    N = int(n_nodes.sum())
    X = sp.random(N, n_feat, density=0.7, random_state=rng.integers(1 << 30),
                  data_rvs=lambda k: rng.normal(size=k), format="csr")
    y = rng.integers(0, m, size=N)
    return X, n_nodes, edges, feats, y


def brute_loss(loss, theta):
    """Weighted NLL by enumerating every labeling of every graph."""
    W, V = loss.split(theta)
    S = loss.X.toarray() @ W
    total = 0.0
    for j, n in enumerate(loss.n_nodes):
        Sj = S[loss.offsets[j]:loss.offsets[j + 1]]
        e, f = loss.edges[j], loss.edge_features[j]
        T = np.einsum("ek,kxy->exy", f, V)
        scores = []
        for ys in itertools.product(range(loss.m), repeat=int(n)):
            ys = np.array(ys)
            scores.append(Sj[np.arange(n), ys].sum() + sum(T[i][ys[u], ys[v]]
                                                          for i, (u, v) in enumerate(e)))
        scores = np.array(scores)
        gold = loss.y[loss.offsets[j]:loss.offsets[j + 1]]
        g = Sj[np.arange(n), gold].sum() + sum(T[i][gold[u], gold[v]]
                                               for i, (u, v) in enumerate(e))
        top = scores.max()
        w = 1.0 if loss.sample_weight is None else loss.sample_weight[j]
        total += w * (top + np.log(np.exp(scores - top).sum()) - g)
    return total


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 3), K=st.integers(1, 2),
       weighted=st.booleans(), scale=st.sampled_from([0.0, 1.0, 4.0]))
def test_value_and_gradient_are_exact(seed, m, K, weighted, scale):
    rng = np.random.default_rng(seed)
    X, n_nodes, edges, feats, y = random_graphs(rng, m=m, K=K)
    sw = rng.uniform(0, 2, size=n_nodes.size) if weighted else None
    loss = GraphCRFLoss(X, n_nodes, edges, y, m, edge_features=feats, sample_weight=sw)
    theta = scale * rng.normal(size=loss.n_params)
    f, g = loss.value_and_grad(theta)
    assert f == pytest.approx(brute_loss(loss, theta), rel=1e-10, abs=1e-10)
    assert loss.value(theta) == pytest.approx(f, rel=1e-13, abs=1e-13)
    h = 1e-6
    for i in rng.choice(loss.n_params, size=min(6, loss.n_params), replace=False):
        e = np.zeros(loss.n_params)
        e[i] = h
        fd = (loss.value(theta + e) - loss.value(theta - e)) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_on_chains_it_is_the_chain_crf():
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 7, size=9)
    N, m, d = int(lengths.sum()), 4, 6
    X = sp.random(N, d, density=0.5, random_state=4, format="csr")
    y = rng.integers(0, m, size=N)
    chain = ChainCRFLoss(X, lengths, y, m)
    edges = [np.column_stack([np.arange(L - 1), np.arange(1, L)]) for L in lengths]
    fast = GraphCRFLoss(X, lengths, edges, y, m)             # the chain kernels
    ones = [np.ones((L - 1, 1)) for L in lengths]
    trees = GraphCRFLoss(X, lengths, edges, y, m, edge_features=ones,
                         chain_kernels=False)                # junction trees
    assert fast.chain_graphs.size == lengths.size and fast.forest is None
    assert trees.chain_graphs.size == 0 and trees.forest is not None
    assert trees.n_params == fast.n_params == chain.n_params
    for scale in (0.0, 1.0, 10.0):
        theta = scale * rng.normal(size=chain.n_params)
        f1, g1 = chain.value_and_grad(theta)
        for graph in (fast, trees):
            f2, g2 = graph.value_and_grad(theta)
            assert f2 == pytest.approx(f1, rel=1e-11)
            np.testing.assert_allclose(g2, g1, rtol=1e-9, atol=1e-10)


def test_chains_and_loopy_graphs_together_are_the_sum_of_their_losses():
    """A corpus of chains (the chain kernels) and loopy graphs (junction trees) gives the
    junction trees' value and gradient for the whole corpus."""
    rng = np.random.default_rng(6)
    X, n_nodes, edges, _, y = random_graphs(rng, n_graphs=6, K=1)
    for j in (0, 2, 3):
        n = n_nodes[j]
        edges[j] = np.column_stack([np.arange(n - 1), np.arange(1, n)]).astype(np.int64)
    mixed = GraphCRFLoss(X, n_nodes, edges, y, 3)
    assert set(mixed.chain_graphs) >= {0, 2, 3}
    forced = GraphCRFLoss(X, n_nodes, edges, y, 3, chain_kernels=False)
    assert forced.chain_graphs.size == 0
    theta = rng.normal(size=mixed.n_params)
    f1, g1 = mixed.value_and_grad(theta)
    f2, g2 = forced.value_and_grad(theta)
    assert f1 == pytest.approx(f2, rel=1e-11)
    np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-10)
    assert mixed.value(theta) == pytest.approx(f1, rel=1e-13)


@pytest.mark.parametrize("scale", [0.0, 1.0, 5.0])
def test_chains_with_a_common_edge_feature_vector_take_the_chain_kernels(scale):
    """Chains whose edges all carry one feature vector f0 (a chain edge [1, 0] beside skip
    edges [0, 1], say) run on the chain kernels with transitions sum_k f0_k V_k: value,
    gradient and majorizer in theta's coordinates, against every graph on its junction
    tree; the majorizer lies above the loss."""
    rng = np.random.default_rng(12)
    X, n_nodes, edges, _, y = random_graphs(rng, n_graphs=7, K=2, max_nodes=5)
    f0 = np.array([1.0, 0.0])
    feats = []
    for j, n in enumerate(n_nodes):
        if j in (0, 2, 3, 5):
            edges[j] = np.column_stack([np.arange(n - 1), np.arange(1, n)]).astype(np.int64)
            feats.append(np.tile(f0, (n - 1, 1)))
        else:
            feats.append(np.where(rng.random((len(edges[j]), 1)) < 0.5, f0, f0[::-1]))
    fast = GraphCRFLoss(X, n_nodes, edges, y, 3, edge_features=feats)
    ref = GraphCRFLoss(X, n_nodes, edges, y, 3, edge_features=feats, chain_kernels=False)
    assert set(fast.chain_graphs) >= {0, 2, 3, 5} and ref.chain_graphs.size == 0
    np.testing.assert_array_equal(fast.chain_feature, f0)
    theta = scale * rng.normal(size=fast.n_params)
    f1, g1 = fast.value_and_grad(theta)
    f2, g2 = ref.value_and_grad(theta)
    assert f1 == pytest.approx(f2, rel=1e-11) and fast.value(theta) == pytest.approx(f1)
    np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-10)
    maj = fast.majorizer(theta)
    assert maj.value == pytest.approx(f1, rel=1e-12)
    np.testing.assert_allclose(maj.grad, g1, rtol=1e-10, atol=1e-12)
    C = maj.curvature.to_dense()
    np.testing.assert_allclose(C, C.T, atol=1e-10 * np.abs(C).max())
    for step in (1e-2, 1.0, 10.0):
        for _ in range(5):
            delta = step * rng.normal(size=fast.n_params)
            assert fast.value(theta + delta) <= maj.evaluate(theta + delta) + 1e-9 * abs(f1)


def test_a_weight_of_two_is_the_graph_twice():
    rng = np.random.default_rng(8)
    X, n_nodes, edges, feats, y = random_graphs(rng, n_graphs=3)
    sw = np.array([2.0, 1.0, 0.0])
    a = GraphCRFLoss(X, n_nodes, edges, y, 3, edge_features=feats, sample_weight=sw)
    o = a.offsets
    rows = np.r_[o[0]:o[1], o[0]:o[1], o[1]:o[2]]
    b = GraphCRFLoss(X[rows], [n_nodes[0], n_nodes[0], n_nodes[1]],
                     [edges[0], edges[0], edges[1]], y[rows], 3,
                     edge_features=[feats[0], feats[0], feats[1]])
    theta = rng.normal(size=a.n_params)
    fa, ga = a.value_and_grad(theta)
    fb, gb = b.value_and_grad(theta)
    assert fa == pytest.approx(fb, rel=1e-12)
    np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-12)


def test_bad_inputs_name_the_problem():
    X = sp.random(6, 3, density=0.5, random_state=0, format="csr")
    y = np.zeros(6, dtype=int)
    e = [np.array([[0, 1], [1, 2]]), np.array([[0, 1]]), np.empty((0, 2), dtype=int)]
    with pytest.raises(ValueError, match="X has 6 rows but the graphs have 7 nodes"):
        GraphCRFLoss(X, [3, 2, 2], e, y, 2)
    with pytest.raises(ValueError, match="one edge list per graph"):
        GraphCRFLoss(X, [3, 2, 1], e[:2], y, 2)
    with pytest.raises(ValueError, match=r"labels must lie in 0..1"):
        GraphCRFLoss(X, [3, 2, 1], e, np.full(6, 2), 2)
    with pytest.raises(ValueError, match=r"edge_features\[1\] must be \(1, 2\)"):
        GraphCRFLoss(X, [3, 2, 1], e, y, 2,
                     edge_features=[np.ones((2, 2)), np.ones((1, 3)), np.ones((0, 2))])
    clique = np.array(list(itertools.combinations(range(6), 2)))
    with pytest.raises(ValueError, match="graph 'sample 0' .* has treewidth at least 5"):
        GraphCRFLoss(X, [6], [clique], y, 2, max_treewidth=4)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.sampled_from([0.0, 1.0, 5.0, 100.0]),
       step=st.sampled_from([1e-3, 0.3, 3.0, 30.0]), weighted=st.booleans())
def test_majorizer_bounds_the_loss_everywhere(seed, scale, step, weighted):
    """The majorizer (chain bound on the chains, the junction-tree bound on the other
    graphs) lies above the loss at every step, small and large, and touches it at theta."""
    rng = np.random.default_rng(seed)
    X, n_nodes, edges, _, y = random_graphs(rng, n_graphs=5, K=1)
    n0 = n_nodes[0]
    edges[0] = np.column_stack([np.arange(n0 - 1), np.arange(1, n0)]).astype(np.int64)
    sw = rng.uniform(0, 2, size=5) if weighted else None
    loss = GraphCRFLoss(X, n_nodes, edges, y, 3, sample_weight=sw)
    theta = scale * rng.normal(size=loss.n_params)
    maj = loss.majorizer(theta)
    f, g = loss.value_and_grad(theta)
    assert maj.value == pytest.approx(f, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(maj.grad, g, rtol=1e-10, atol=1e-12)
    for _ in range(4):
        delta = step * rng.normal(size=loss.n_params)
        assert loss.value(theta + delta) <= maj.evaluate(theta + delta) + 1e-9 * max(1, abs(f))


def junction_curvature(loss, theta):
    maj = loss.majorizer(theta)
    assert isinstance(maj.curvature, JunctionCurvature)
    return maj.curvature.to_dense()


@pytest.mark.parametrize("scale", [0.0, 1.0, 4.0])
def test_junction_curvature_dominates_the_hessian(scale):
    """C - H is positive semi-definite (H by central differences of the gradient) on loopy
    graphs with edge features and sample weights (one of them zero), and C is symmetric."""
    rng = np.random.default_rng(11)
    X, n_nodes, edges, feats, y = random_graphs(rng, n_graphs=4, max_nodes=4, n_feat=3, m=2,
                                                K=2)
    loss = GraphCRFLoss(X, n_nodes, edges, y, 2, edge_features=feats,
                        sample_weight=[1.5, 0.0, 0.5, 1.0])
    p, h = loss.n_params, 1e-5
    theta = scale * rng.normal(size=p)
    C = junction_curvature(loss, theta)
    np.testing.assert_allclose(C, C.T, atol=1e-12 * max(1.0, np.abs(C).max()))
    H = np.column_stack([(loss.value_and_grad(theta + h * e)[1]
                          - loss.value_and_grad(theta - h * e)[1]) / (2 * h)
                         for e in np.eye(p)])
    H = (H + H.T) / 2
    assert np.linalg.eigvalsh(C - H).min() >= -1e-6 * np.abs(C).max()


def clique_features(loss, j):
    """f(y) in parameter space for every labeling of graph j (C order over its nodes)."""
    X = loss.X.toarray()[loss.offsets[j]:loss.offsets[j + 1]]
    n, m, K = int(loss.n_nodes[j]), loss.m, loss.K
    out = []
    for ys in itertools.product(range(m), repeat=n):
        fW = np.zeros((loss.n_features, m))
        fV = np.zeros((K, m, m))
        for i, yi in enumerate(ys):
            fW[:, yi] += X[i]
        for (u, v), fe in zip(loss.edges[j], loss.edge_features[j]):
            fV[:, ys[u], ys[v]] += fe
        out.append(np.concatenate([fW.ravel(), fV.ravel()]))
    return np.array(out)


@pytest.mark.parametrize("scale", [0.0, 1.0, 30.0])
def test_junction_curvature_of_one_clique_is_alg1_over_every_labeling(scale):
    """A complete graph is one clique, the root: the bound is Alg. 1 over its labelings,
    largest first (ties, at scale 0, in C order), which enumeration gives exactly."""
    rng = np.random.default_rng(5)
    X = sp.csr_matrix(rng.normal(size=(3, 2)))
    edges = [np.array([[0, 1], [2, 1], [0, 2]])]
    feats = [rng.normal(size=(3, 2))]
    loss = GraphCRFLoss(X, [3], edges, np.array([0, 2, 1]), 3, edge_features=feats)
    theta = scale * rng.normal(size=loss.n_params)
    bound = quadratic_bound(clique_features(loss, 0), theta, order="descending")
    C = junction_curvature(loss, theta)
    np.testing.assert_allclose(C, bound.curvature, rtol=1e-10,
                               atol=1e-12 * np.abs(bound.curvature).max())
