"""Hierarchies and greedy feature selection (Beyler & Bach, Sec. 5.2-5.3, Alg. 2)."""

import numpy as np
import pytest
from _ising_reference import brute_phi, random_model
from hypothesis import given, settings
from hypothesis import strategies as st

from zbound.ising.features import default_features
from zbound.ising.hierarchy import degree_hierarchy, greedy_features
from zbound.ising.model import IsingModel
from zbound.ising.quantum import quantum_bound


def test_greedy_lowers_the_bound_and_stays_valid():
    model = random_model(7, 0)
    base = quantum_bound(model, tol=1e-6)
    g = greedy_features(model, 4)
    exact = brute_phi(model)
    assert g.features.n == base.features.n + 4
    assert exact - 1e-9 <= g.bound < base.bound - 1e-3
    assert g.result.converged and g.result.gap <= 1e-6
    assert len(g.history) == 4
    # each added monomial is at XOR-distance one from the set it joined
    masks = list(default_features(7).masks)
    for step in g.history:
        assert any(bin(step["added"] ^ m).count("1") == 1 for m in masks)
        assert step["added"] not in masks
        masks.append(step["added"])
    sel = [step["bound"] for step in g.history]
    assert all(b2 <= b1 + 1e-3 * abs(b1) for b1, b2 in zip(sel, sel[1:]))


def test_greedy_first_choice_is_the_best_candidate():
    """The first pick beats every other pair monomial (checked at a tight tolerance)."""
    model = random_model(5, 1)
    g = greedy_features(model, 1, tol_select=1e-6)
    fs0 = default_features(5)
    vals = {}
    for i in range(5):
        for j in range(i + 1, 5):
            m = (1 << i) | (1 << j)
            vals[m] = quantum_bound(model, fs0.add(m), tol=1e-6).bound
    best = min(vals.values())
    assert vals[g.history[0]["added"]] <= best + 1e-5 * abs(best)


def test_greedy_k_zero_is_the_plain_relaxation():
    model = random_model(5, 2)
    g = greedy_features(model, 0)
    assert g.bound == pytest.approx(quantum_bound(model).bound, rel=1e-5)
    assert g.history == []


def test_degree_hierarchy_decreases_to_exact():
    """Adding features lowers a_eps (Sec. 5.2); all 2^d features give Phi_eps (Sec. 5.1)."""
    model = random_model(4, 3, eps=0.7)
    out = degree_hierarchy(model, tol=1e-8, max_iter=100000)
    assert [n for n, _ in out] == list(range(5, 17))
    bounds = [r.bound for _, r in out]
    gaps = [r.abs_gap for _, r in out]
    for k in range(1, len(bounds)):
        assert bounds[k] <= bounds[k - 1] + gaps[k] + gaps[k - 1] + 1e-9
    assert bounds[-1] == pytest.approx(brute_phi(model), abs=1e-6)


def test_bad_inputs():
    model = random_model(4, 4)
    with pytest.raises(ValueError, match="k"):
        greedy_features(model, -1)
    with pytest.raises(TypeError, match="k"):
        greedy_features(model, 1.5)
    with pytest.raises(ValueError, match="tol_select"):
        greedy_features(model, 1, tol_select=0.0)


@settings(max_examples=10)
@given(d=st.integers(2, 6), seed=st.integers(0, 2**32 - 1), log_scale=st.floats(-2, 2),
       log_eps=st.floats(-1.5, 1))
def test_greedy_bound_is_valid_on_random_instances(d, seed, log_scale, log_eps):
    rng = np.random.default_rng(seed)
    J = np.triu(rng.standard_normal((d, d)), 1) * 10**log_scale
    model = IsingModel(rng.standard_normal(d) * 10**log_scale, J + J.T, 10**log_eps)
    g = greedy_features(model, 2, max_iter_select=300, max_iter_final=2000)
    exact = brute_phi(model)
    assert g.bound >= exact - 1e-10 * max(1.0, abs(exact))
    assert len(g.features) == d + 1 + min(2, len(g.history))
