import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from zbound.ising.exact import enumerate_exact
from zbound.ising.generators import random_model
from zbound.ising.model import IsingModel
from zbound.ising.trw import max_weight_spanning_forest, spanning_tree_polytope_point, trw_bound


@pytest.mark.parametrize("d", [2, 5, 9])
def test_trw_is_exact_on_trees(d):
    m = random_model(d, "gaussian", "tree", epsilon=0.8, random_state=d)
    r = trw_bound(m, tol=1e-10)
    e = enumerate_exact(m)
    assert r.converged
    np.testing.assert_allclose(r.rho, 1.0)       # the only spanning tree is the tree itself
    assert r.bound == pytest.approx(e.log_partition, abs=1e-8)
    np.testing.assert_allclose(r.marginals, e.marginals, atol=1e-8)
    edges = r.edges
    np.testing.assert_allclose(r.pairwise, e.moments[edges[:, 0], edges[:, 1]], atol=1e-8)


def test_trw_is_exact_for_independent_variables():
    m = random_model(6, "gaussian", "independent", epsilon=1.3, random_state=0)
    r = trw_bound(m)
    assert r.bound == pytest.approx(enumerate_exact(m).log_partition, abs=1e-12)


_settings = st.sampled_from([
    ("gaussian", "mixed", 1.0), ("logdet", "attractive", 0.5), ("logdet", "mixed", 1.0),
    ("logdet", "repulsive", 0.5), ("trw", "attractive", 2.0), ("trw", "mixed", 3.0),
])


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(3, 7), _settings, st.integers(0, 2**31), st.floats(0.1, 20.0),
       st.floats(0.2, 5.0), st.sampled_from(["uniform", "optimize"]))
def test_converged_trw_upper_bounds_log_partition(d, setting, seed, scale, eps, rho):
    name, coupling, w = setting
    base = random_model(d, name, "complete", coupling, w, random_state=seed)
    m = IsingModel(scale * base.h, scale * base.J, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = trw_bound(m, rho=rho, max_iter=3000, rho_steps=5)
    exact = enumerate_exact(m).log_partition
    assert np.isfinite(r.bound) and np.all(np.isfinite(r.marginals))
    if r.converged:
        assert r.bound >= exact - 1e-6 * max(1.0, abs(exact))


@pytest.mark.slow
def test_optimizing_rho_tightens_the_uniform_bound():
    gains = []
    for seed in range(4):
        m = random_model(5, "logdet", "complete", "attractive", 0.4, random_state=seed)
        u = trw_bound(m, rho="uniform")
        o = trw_bound(m, rho="optimize")
        assert u.converged and o.converged
        assert o.bound <= u.bound + 1e-9
        assert o.rho.sum() == pytest.approx(4.0)        # spanning trees of 5 nodes: 4 edges
        gains.append(u.bound - o.bound)
    assert max(gains) > 1e-3


def test_non_convergence_warns_and_is_recorded():
    m = random_model(6, "gaussian", "complete", random_state=0)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        r = trw_bound(m, max_iter=2)
    assert not r.converged and r.iterations == 2
    r = trw_bound(m, max_iter=2, warn=False)
    assert not r.converged


def test_spanning_tree_helpers():
    d = 6
    edges = np.stack(np.triu_indices(d, 1), axis=1)
    w = np.arange(len(edges), dtype=float)
    tree = max_weight_spanning_forest(d, edges, w)
    assert tree.sum() == d - 1
    # same weight as the best of all spanning trees, enumerated by brute force
    assert w @ tree == max(w @ t for t in _all_spanning_trees(d, edges))
    rho = spanning_tree_polytope_point(d, edges)
    assert np.all(rho > 0) and rho.sum() == pytest.approx(d - 1)


def _all_spanning_trees(d, edges):
    import itertools

    for combo in itertools.combinations(range(len(edges)), d - 1):
        parent = list(range(d))

        def find(a, parent=parent):
            while parent[a] != a:
                a = parent[a]
            return a

        ok = True
        for k in combo:
            a, b = find(edges[k, 0]), find(edges[k, 1])
            if a == b:
                ok = False
                break
            parent[a] = b
        if ok:
            t = np.zeros(len(edges))
            t[list(combo)] = 1
            yield t


def test_bad_arguments():
    m = random_model(4, "gaussian", "complete", random_state=0)
    with pytest.raises(ValueError, match="temperature"):
        trw_bound(m.with_epsilon(0.0))
    with pytest.raises(ValueError, match="spanning-tree polytope"):
        trw_bound(m, rho=np.full(6, 0.9))
    with pytest.raises(ValueError, match="one entry per edge"):
        trw_bound(m, rho=np.full(5, 0.5))
    with pytest.raises(ValueError, match="damping"):
        trw_bound(m, damping=1.0)
    tree = random_model(4, "gaussian", "tree", random_state=0)
    with pytest.raises(ValueError, match="complete graph"):
        trw_bound(tree, rho="uniform")
    with pytest.raises(TypeError, match="IsingModel"):
        trw_bound("model")


@pytest.mark.parametrize("scale, eps", [(100.0, 0.01), (1000.0, 1.0)])
def test_extreme_couplings_stay_finite_and_valid(scale, eps):
    base = random_model(6, "gaussian", "complete", random_state=1)
    m = IsingModel(scale * base.h, scale * base.J, eps)
    with np.errstate(over="raise", invalid="raise", divide="raise"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = trw_bound(m, rho="uniform", max_iter=2000)
    assert np.isfinite(r.bound) and np.all(np.isfinite(r.marginals))
    if r.converged:
        assert r.bound >= enumerate_exact(m).log_partition


def test_rho_is_optimized_when_messages_converge_slowly():
    """Dense Gaussian couplings: the messages reach the 1e-6 gap only after ~10^4 sweeps, but rho
    steps start at a 1e-3 gap and are accepted by the certificate, so rho is optimized and the
    bound stays certified above the exact value."""

    from zbound.ising import exact, generators

    m = generators.gaussian_model(8, random_state=8)
    truth = exact.log_partition(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        uniform = trw_bound(m, rho="uniform", max_iter=20000)
        start = trw_bound(m, rho_steps=0)
        opt = trw_bound(m, rho_steps=10)
    assert opt.rho_steps == 10
    assert truth <= opt.bound < start.bound
    assert opt.bound < uniform.bound
    assert opt.certified and np.isclose(opt.rho.sum(), m.d - 1)
