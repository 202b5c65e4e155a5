import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.ising.exact import (
    eliminate_exact,
    enumerate_exact,
    exact,
    hypercube,
    log_partition,
    max_energy,
    max_product,
)
from zbound.ising.generators import random_model
from zbound.ising.model import IsingModel


def _brute(model):
    """Straight from eq. (5), with a Python loop over states and Python floats."""
    d, eps = model.d, model.epsilon
    states = [np.array(x, dtype=float) for x in itertools.product([-1, 1], repeat=d)]
    f = np.array([model.energy(x) for x in states])
    top = f.max()
    w = np.exp((f - top) / eps)
    Z = w.sum()
    X = np.array(states)
    p = w / Z
    return eps * (np.log(Z) + top / eps - d * np.log(2)), X.T @ p, (X * p[:, None]).T @ X, top


def _model_strategy(max_d=7, scale=3.0, graphs=("complete", "tree", "independent")):
    return st.builds(
        lambda d, g, seed, s, eps: _scaled(random_model(d, "gaussian", g, random_state=seed),
                                           s, eps),
        st.integers(1, max_d), st.sampled_from(graphs), st.integers(0, 2**31),
        st.floats(0.01, scale), st.floats(0.05, 5.0),
    )


def _scaled(m, s, eps):
    return IsingModel(s * m.h, s * m.J, eps)


@settings(max_examples=40, deadline=None)
@given(_model_strategy())
def test_enumeration_matches_brute_force(model):
    lz, mean, mom, top = _brute(model)
    res = enumerate_exact(model, batch_states=8)   # tiny batches: many chunks
    assert res.log_partition == pytest.approx(lz, rel=1e-12, abs=1e-11)
    np.testing.assert_allclose(res.means, mean, atol=1e-12)
    np.testing.assert_allclose(res.moments, mom, atol=1e-12)
    np.testing.assert_allclose(res.marginals, (1 + mean) / 2, atol=1e-12)
    assert res.max_value == pytest.approx(top, abs=1e-12)
    assert model.energy(res.argmax) == pytest.approx(top, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(_model_strategy(max_d=9, scale=5.0, graphs=("tree",)))
def test_elimination_matches_enumeration_on_trees(model):
    e = enumerate_exact(model)
    v = eliminate_exact(model, pairs="all")
    assert v.log_partition == pytest.approx(e.log_partition, rel=1e-12, abs=1e-11)
    np.testing.assert_allclose(v.marginals, e.marginals, atol=1e-11)
    np.testing.assert_allclose(v.moments, e.moments, atol=1e-11)
    value, x = max_product(model)
    assert value == pytest.approx(e.max_value, abs=1e-11)
    assert model.energy(x) == pytest.approx(value, abs=1e-11)


@pytest.mark.slow
def test_elimination_handles_low_treewidth_cycles_and_large_trees():
    # a cycle (treewidth 2) with a chord
    d = 8
    J = np.zeros((d, d))
    rng = np.random.default_rng(1)
    for i in range(d):
        J[i, (i + 1) % d] = J[(i + 1) % d, i] = rng.standard_normal()
    J[0, 4] = J[4, 0] = 1.5
    model = IsingModel(rng.standard_normal(d), J, 0.7)
    e, v = enumerate_exact(model), eliminate_exact(model, pairs="edges")
    assert v.log_partition == pytest.approx(e.log_partition, abs=1e-12)
    edges = model.edges()
    np.testing.assert_allclose(v.moments[edges[:, 0], edges[:, 1]],
                               e.moments[edges[:, 0], edges[:, 1]], atol=1e-12)
    # a 60-node tree is far beyond enumeration; compare with the forest identity on a star
    star = np.zeros((60, 60))
    star[0, 1:] = star[1:, 0] = 0.3
    m = IsingModel(np.zeros(60), star, 1.0)
    # with h = 0, x_0 x_i are independent uniform signs weighted by exp(0.3 y): closed form
    expected = 59 * np.log(np.cosh(0.3))
    assert eliminate_exact(m, pairs=None).log_partition == pytest.approx(expected, rel=1e-12)
    assert exact(m, moments=False).log_partition == pytest.approx(expected, rel=1e-12)


def test_elimination_refuses_wide_graphs():
    m = random_model(12, "gaussian", "complete", random_state=0)
    with pytest.raises(ValueError, match="treewidth"):
        eliminate_exact(m, max_width=4)


def test_extreme_couplings_and_cold_temperatures_do_not_overflow():
    m = random_model(10, "gaussian", "complete", random_state=2)
    big = IsingModel(1e4 * m.h, 1e4 * m.J, 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = enumerate_exact(big)
        tree = random_model(10, "gaussian", "tree", random_state=2)
        t = eliminate_exact(IsingModel(1e4 * tree.h, 1e4 * tree.J, 1e-3))
    X = hypercube(10)
    top = big.energy(X).max()
    # Phi_eps -> max f as eps -> 0, from below by at most eps * d log 2
    assert top - 10 * np.log(2) * 1e-3 <= res.log_partition <= top + 1e-9
    assert np.all(np.isfinite(res.moments)) and np.all(np.isfinite(t.marginals))


def test_zero_temperature_is_the_maximum():
    m = random_model(9, "gaussian", "complete", epsilon=0.0, random_state=5)
    res = enumerate_exact(m)
    top = m.energy(hypercube(9)).max()
    assert res.log_partition == pytest.approx(top, abs=1e-12)
    assert log_partition(m) == pytest.approx(top, abs=1e-12)
    # a unique maximizer: marginals are its coordinates
    np.testing.assert_allclose(res.means, res.argmax, atol=1e-12)
    assert max_energy(m)[0] == pytest.approx(top, abs=1e-12)
    # Phi_eps = sup_p E_p f - eps D(p||q) increases to max f as eps decreases to 0
    vals = [enumerate_exact(m.with_epsilon(e)).log_partition for e in (1.0, 0.1, 0.01)]
    assert vals[0] < vals[1] < vals[2] <= top
    assert vals[2] >= top - 0.01 * 9 * np.log(2)


def test_larger_enumeration_is_chunked_and_consistent():
    m = random_model(18, "gaussian", "complete", epsilon=2.0, random_state=7)
    a = enumerate_exact(m, batch_states=2**16)
    b = enumerate_exact(m, batch_states=2**21)
    assert a.log_partition == pytest.approx(b.log_partition, rel=1e-13)
    np.testing.assert_allclose(a.moments, b.moments, atol=1e-12)
    with pytest.raises(ValueError, match="too large"):
        enumerate_exact(random_model(27, "gaussian", "independent", random_state=0))
    with pytest.raises(TypeError, match="IsingModel"):
        enumerate_exact(np.zeros(3))
