"""Junction trees built by elimination, and exact sum-product / max-product on them, against
enumeration of every labeling."""

import itertools
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.structured.graph import (
    JunctionForest,
    check_edges,
    junction_tree,
    tree_max_product,
    tree_sum_product,
)


def enumerate_model(n, m, edges, S, T):
    """log Z, node and edge marginals, and every labeling's score, by enumeration."""
    ys = np.array(list(itertools.product(range(m), repeat=n)))
    score = S[np.arange(n)[None, :], ys].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        score += T[e][ys[:, u], ys[:, v]]
    top = score.max()
    w = np.exp(score - top)
    log_z = top + np.log(w.sum())
    p = w / w.sum()
    node = np.zeros((n, m))
    for i in range(n):
        np.add.at(node[i], ys[:, i], p)
    edge = np.zeros((len(edges), m, m))
    for e, (u, v) in enumerate(edges):
        np.add.at(edge[e], (ys[:, u], ys[:, v]), p)
    return log_z, node, edge, ys, score


def grid(r, c):
    idx = np.arange(r * c).reshape(r, c)
    return ([(idx[i, j], idx[i, j + 1]) for i in range(r) for j in range(c - 1)]
            + [(idx[i, j], idx[i + 1, j]) for i in range(r - 1) for j in range(c)])


GRAPHS = {
    "chain": (5, [(0, 1), (1, 2), (2, 3), (3, 4)]),
    "star": (5, [(0, 1), (0, 2), (0, 3), (0, 4)]),
    "tree": (6, [(0, 1), (1, 2), (1, 3), (3, 4), (3, 5)]),
    "cycle": (5, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]),
    "grid": (6, grid(2, 3)),
    "grid3": (9, grid(3, 3)),
    "clique4": (4, list(itertools.combinations(range(4), 2))),
    "forest": (6, [(0, 1), (2, 3), (3, 4)]),          # node 5 isolated
    "reversed": (4, [(1, 0), (3, 2), (2, 1), (3, 0)]),  # edges given high to low
    "single": (1, []),
}


def check_running_intersection(tree):
    """Every node's cliques form a connected subtree: one of them has no holder as parent."""
    for v in range(tree.n_nodes):
        holders = [c for c in range(tree.n_cliques) if v in tree.cliques[c]]
        tops = [c for c in holders if tree.parent[c] < 0 or v not in tree.cliques[tree.parent[c]]]
        assert len(tops) == 1, (v, holders)
    for e, (u, v) in enumerate(tree.edges):
        c = tree.cliques[tree.edge_clique[e]]
        assert u in c and v in c
    for i in range(tree.n_nodes):
        assert i in tree.cliques[tree.node_clique[i]]


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("heuristic", ["min-fill", "min-degree"])
@pytest.mark.parametrize("m", [2, 3])
def test_sum_and_max_product_match_enumeration(name, heuristic, m):
    n, edges = GRAPHS[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}/{heuristic}/{m}".encode()))  # reproducible
    tree = junction_tree(n, edges, heuristic=heuristic)
    check_running_intersection(tree)
    S = rng.normal(scale=2.0, size=(n, m))
    T = rng.normal(scale=2.0, size=(len(edges), m, m))
    log_z, node, edge, ys, score = enumerate_model(n, m, edges, S, T)
    out = tree_sum_product(tree, S, T)
    assert out.log_z == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(out.node, node, atol=1e-12)
    np.testing.assert_allclose(out.edge.reshape(len(edges), m, m), edge, atol=1e-12)
    labels, best = tree_max_product(tree, S, T)
    assert best == pytest.approx(score.max(), rel=1e-12, abs=1e-12)
    assert labels.shape == (n,)
    np.testing.assert_array_equal(labels, ys[np.argmax(score)])   # random scores: no ties


def test_treewidth_of_known_graphs():
    assert junction_tree(*GRAPHS["chain"]).treewidth == 1
    assert junction_tree(*GRAPHS["tree"]).treewidth == 1
    assert junction_tree(*GRAPHS["cycle"]).treewidth == 2
    assert junction_tree(*GRAPHS["grid3"]).treewidth == 3
    assert junction_tree(*GRAPHS["clique4"]).treewidth == 3
    assert junction_tree(*GRAPHS["single"]).treewidth == 0
    tree = junction_tree(*GRAPHS["tree"])       # a tree's cliques are its edges
    assert sorted(tuple(c) for c in tree.cliques) == sorted(
        tuple(sorted(e)) for e in GRAPHS["tree"][1])


def test_batch_of_graphs_is_the_graphs_one_by_one():
    n, edges = GRAPHS["grid"]
    m, B = 3, 4
    rng = np.random.default_rng(5)
    S = rng.normal(size=(B, n, m))
    T = rng.normal(size=(B, len(edges), m, m))
    tree = junction_tree(n, edges)
    out = tree_sum_product(tree, S, T)
    labels, best = tree_max_product(tree, S, T)
    for b in range(B):
        one = tree_sum_product(tree, S[b], T[b])
        assert out.log_z[b] == pytest.approx(one.log_z, rel=1e-14)
        np.testing.assert_allclose(out.node[b], one.node, atol=1e-15)
        np.testing.assert_allclose(out.edge[b], one.edge, atol=1e-15)
        lab1, best1 = tree_max_product(tree, S[b], T[b])
        np.testing.assert_array_equal(labels[b], lab1)
        assert best[b] == pytest.approx(best1, rel=1e-14)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 7), m=st.integers(1, 3),
       density=st.floats(0.0, 1.0), scale=st.sampled_from([0.0, 1.0, 50.0, 1e3]))
def test_random_graphs_against_enumeration(seed, n, m, density, scale):
    """Random graphs of up to 7 nodes (any density, ties at scale 0, extreme scores at 1e3):
    log Z and marginals exact, the MAP labeling attains the largest score."""
    rng = np.random.default_rng(seed)
    edges = [e for e in itertools.combinations(range(n), 2) if rng.random() < density]
    edges = [(v, u) if rng.random() < 0.5 else (u, v) for u, v in edges]
    S = rng.normal(scale=scale, size=(n, m)) if scale else np.zeros((n, m))
    T = rng.normal(scale=scale, size=(len(edges), m, m)) if scale else np.zeros((len(edges), m, m))
    tree = junction_tree(n, np.array(edges, dtype=np.int64).reshape(-1, 2))
    check_running_intersection(tree)
    log_z, node, edge, ys, score = enumerate_model(n, m, edges, S, T)
    out = tree_sum_product(tree, S, T)
    assert abs(out.log_z - log_z) <= 1e-9 * max(1.0, abs(log_z))
    np.testing.assert_allclose(out.node, node, atol=1e-9)
    if edges:
        np.testing.assert_allclose(out.edge, edge, atol=1e-9)
    labels, best = tree_max_product(tree, S, T)
    own = S[np.arange(n), labels].sum() + sum(T[e][labels[u], labels[v]]
                                              for e, (u, v) in enumerate(edges))
    assert abs(best - score.max()) <= 1e-9 * max(1.0, abs(score.max()))
    assert abs(own - best) <= 1e-9 * max(1.0, abs(best))


def test_treewidth_budget_names_the_graph():
    with pytest.raises(ValueError, match=r"graph 'grid3' \(9 nodes, 12 edges\) has (treewidth "
                       r"at least 3|no elimination order of width <= 2).*max_treewidth=2"):
        junction_tree(*GRAPHS["grid3"], max_treewidth=2, name="grid3")
    assert junction_tree(*GRAPHS["grid3"], max_treewidth=3).treewidth == 3


@pytest.mark.parametrize("edges, err, match", [
    ([(0, 0)], ValueError, "joins node 0 to itself"),
    ([(0, 1), (1, 0)], ValueError, r"edge \(0, 1\) appears more than once"),
    ([(0, 5)], ValueError, r"endpoints must lie in 0..3"),
    ([(0, 1, 2)], ValueError, r"\(E, 2\) array"),
    ([(0.5, 1)], TypeError, "integer node indices"),
])
def test_bad_edges(edges, err, match):
    with pytest.raises(err, match=match):
        check_edges(4, edges)


def test_bad_scores():
    tree = junction_tree(3, [(0, 1), (1, 2)])
    with pytest.raises(ValueError, match="node_scores must be"):
        tree_sum_product(tree, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="edge_scores must be"):
        tree_sum_product(tree, np.zeros((3, 2)), np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="finite"):
        tree_max_product(tree, np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="heuristic"):
        junction_tree(3, [(0, 1)], heuristic="greedy")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 3),
       scale=st.sampled_from([0.0, 1.0, 30.0]))
def test_forest_of_many_graphs_is_each_graph_alone(seed, m, scale):
    """One level-by-level pass over the junction trees of many graphs (shared trees among
    them, forests, single nodes, a spare row of S used by no graph) gives every graph's
    log Z, marginals and MAP labeling as its own pass does."""
    rng = np.random.default_rng(seed)
    names = sorted(GRAPHS)
    picks = [names[i] for i in rng.integers(0, len(names), size=7)]
    trees = {name: junction_tree(*GRAPHS[name]) for name in set(picks)}
    node_off, edge_off, n_rows, n_edges = [], [], 1, 0      # row 0 is spare
    for name in picks:
        node_off.append(n_rows)
        edge_off.append(n_edges)
        n_rows += GRAPHS[name][0]
        n_edges += len(GRAPHS[name][1])
    S = rng.normal(scale=scale, size=(n_rows, m)) if scale else np.zeros((n_rows, m))
    T = rng.normal(scale=scale, size=(n_edges, m, m)) if scale else np.zeros((n_edges, m, m))
    forest = JunctionForest([trees[p] for p in picks], node_off, edge_off)
    log_z, node, edge = forest.sum_product(S, T)
    labels = forest.max_product(S, T)
    for j, name in enumerate(picks):
        n, edges = GRAPHS[name]
        rows = slice(node_off[j], node_off[j] + n)
        erows = slice(edge_off[j], edge_off[j] + len(edges))
        one = tree_sum_product(trees[name], S[rows], T[erows] if edges else None)
        assert log_z[j] == pytest.approx(one.log_z, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(node[rows], one.node, atol=1e-12)
        if edges:
            np.testing.assert_allclose(edge[erows], one.edge, atol=1e-12)
        # MAP: the forest's labeling scores the best score (and is the same labeling where
        # every score ties, scale 0: the same tie rule)
        lab, best = tree_max_product(trees[name], S[rows], T[erows] if edges else None)
        got = labels[rows]
        own = S[rows][np.arange(n), got].sum() + sum(T[erows][e][got[u], got[v]]
                                                     for e, (u, v) in enumerate(edges))
        assert own == pytest.approx(best, rel=1e-12, abs=1e-12)
        if scale == 0:
            np.testing.assert_array_equal(got, lab)
    assert np.all(node[0] == 0) and labels[0] == -1


def test_forest_adds_the_messages_of_siblings_that_share_a_parent():
    """A star's leaf cliques all send to the root clique at one level: their messages, split
    into groups of distinct parents, all arrive (one group would keep only the last)."""
    n, edges = 7, [(0, i) for i in range(1, 7)]
    tree = junction_tree(n, edges)
    forest = JunctionForest([tree, tree], [0, n], [0, len(edges)])
    keys = [key for level in forest.up_levels for key, _ in level]
    assert len(keys) > len(set(keys))               # the same key split for shared parents
    rng = np.random.default_rng(3)
    S = rng.normal(size=(2 * n, 3))
    T = rng.normal(size=(2 * len(edges), 3, 3))
    log_z, node, _ = forest.sum_product(S, T)
    for j in range(2):
        ref = enumerate_model(n, 3, edges, S[j * n:(j + 1) * n], T[j * 6:(j + 1) * 6])
        assert log_z[j] == pytest.approx(ref[0], rel=1e-12)
        np.testing.assert_allclose(node[j * n:(j + 1) * n], ref[1], atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e3])
def test_forest_scaled_pass_and_its_log_space_fallback(scale):
    """At moderate scores the forest's pass runs in linear space (one exp per entry); at
    scores of 1e3 that would underflow, it is refused and the log-space pass runs. Either
    way log Z, the marginals and the junction-tree bound's products are the log-space
    pass's."""
    rng = np.random.default_rng(8)
    names = ["grid3", "cycle", "tree", "clique4", "star"]
    trees = [junction_tree(*GRAPHS[g]) for g in names]
    n_off = np.cumsum([0] + [GRAPHS[g][0] for g in names])
    e_off = np.cumsum([0] + [len(GRAPHS[g][1]) for g in names])
    forest = JunctionForest(trees, n_off[:-1], e_off[:-1])
    S = rng.normal(scale=scale, size=(n_off[-1], 3))
    T = rng.normal(scale=scale, size=(e_off[-1], 3, 3))
    assert (forest._upward_scaled(S, T) is None) == (scale > 100)
    log_z, node, edge, state = forest.sum_product(S, T, bound=True)
    for j, tree in enumerate(trees):
        one = tree_sum_product(tree, S[n_off[j]:n_off[j + 1]], T[e_off[j]:e_off[j + 1]])
        assert log_z[j] == pytest.approx(one.log_z, rel=1e-12)
        np.testing.assert_allclose(node[n_off[j]:n_off[j + 1]], one.node, atol=1e-12)
        np.testing.assert_allclose(edge[e_off[j]:e_off[j + 1]], one.edge, atol=1e-12)
    log_state = forest.bound_state(S, T) if scale > 100 else forest._bound_state(
        forest._upward(S, T)[0], log_z, 3)
    Sd, Td = rng.normal(size=S.shape), rng.normal(size=T.shape)
    for a, b in zip(forest.bound_product(state, Sd, Td),
                    forest.bound_product(log_state, Sd, Td)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
