import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from zbound.ising.generators import (
    check_random_state,
    graph_edges,
    logdet_model,
    random_model,
    random_tree_edges,
    trw_model,
)


@pytest.mark.parametrize("d", [1, 2, 3, 7, 30])
def test_random_tree_is_a_spanning_tree(d):
    edges = random_tree_edges(d, random_state=d)
    assert edges.shape == (d - 1, 2)
    assert np.all(edges[:, 0] < edges[:, 1])
    if d > 1:
        g = coo_matrix((np.ones(d - 1), (edges[:, 0], edges[:, 1])), shape=(d, d))
        assert connected_components(g, directed=False)[0] == 1


def test_random_trees_vary_with_the_seed():
    trees = {random_tree_edges(8, s).tobytes() for s in range(20)}
    assert len(trees) > 10


@pytest.mark.parametrize(
    "setting, coupling, lo, hi, hmax",
    [
        ("logdet", "attractive", 0.0, 1.4, 0.25),
        ("logdet", "mixed", -0.7, 0.7, 0.25),
        ("logdet", "repulsive", -1.4, 0.0, 0.25),
        ("trw", "attractive", 0.0, 0.7, 0.05),
        ("trw", "mixed", -0.7, 0.7, 0.05),
    ],
)
def test_parameter_ranges_follow_the_paper(setting, coupling, lo, hi, hmax):
    m = random_model(40, setting, "complete", coupling, w=0.7, random_state=1)
    vals = m.J[np.triu_indices(40, 1)]
    assert vals.min() >= lo and vals.max() <= hi
    # the draws fill their interval (not a constant or a narrower range)
    assert vals.min() < lo + 0.05 * (hi - lo) and vals.max() > hi - 0.05 * (hi - lo)
    assert np.abs(m.h).max() <= hmax and np.abs(m.h).max() > 0.8 * hmax


def test_gaussian_parameters_are_standard_normal():
    m = random_model(60, "gaussian", "complete", random_state=3)
    vals = m.J[np.triu_indices(60, 1)]
    assert abs(vals.mean()) < 0.1 and abs(vals.std() - 1) < 0.1


def test_graphs_and_reproducibility():
    assert graph_edges(5, "independent").shape == (0, 2)
    assert graph_edges(5, "complete").shape == (10, 2)
    tree = random_model(9, "gaussian", "tree", random_state=4)
    assert tree.edges().shape == (8, 2)
    a = logdet_model(6, 0.3, "mixed", random_state=5)
    b = logdet_model(6, 0.3, "mixed", random_state=np.random.default_rng(5))
    np.testing.assert_array_equal(a.J, b.J)
    np.testing.assert_array_equal(a.h, b.h)
    assert not np.array_equal(a.J, logdet_model(6, 0.3, "mixed", random_state=6).J)
    assert trw_model(4, 1.0, "attractive", epsilon=0.5).epsilon == 0.5


def test_bad_arguments():
    with pytest.raises(ValueError, match="setting"):
        random_model(3, "uniform")
    with pytest.raises(ValueError, match="graph"):
        random_model(3, graph="grid")
    with pytest.raises(ValueError, match="coupling"):
        random_model(3, "trw", coupling="repulsive")
    with pytest.raises(ValueError, match="w must be"):
        random_model(3, "logdet", w=-1.0)
    with pytest.raises(TypeError, match="d must be an integer"):
        random_model(3.5)
    with pytest.raises(ValueError, match="d must be"):
        random_model(0)
    with pytest.raises(TypeError, match="random_state"):
        check_random_state("seed")
