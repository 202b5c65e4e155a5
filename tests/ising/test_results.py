"""One vocabulary on every Ising result: each bound is a solver ``Result`` (``fun``, ``converged``,
a ``Status``, ``message``, ``trace``) with ``bound`` and ``certified``, and ``marginals``
meaning P(x_i = 1) everywhere (with ``means`` = E[x_i] = 2 P(x_i = 1) - 1)."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from zbound.ising.cvxpy_quantum import cvxpy_quantum_bound
from zbound.ising.exact import eliminate_exact, enumerate_exact
from zbound.ising.features import all_features, tree_features
from zbound.ising.generators import random_model
from zbound.ising.hierarchy import greedy_features
from zbound.ising.logdet import logdet_bound
from zbound.ising.metric import metric_learning_bound
from zbound.ising.quantum import quantum_bound, zero_temperature_bound
from zbound.ising.result import BoundResult
from zbound.ising.trw import trw_bound
from zbound.solvers import Result, Status


def _results(model):
    return {
        "exact": enumerate_exact(model),
        "quantum": quantum_bound(model),
        "greedy": greedy_features(model, 1),
        "trw": trw_bound(model),
        "logdet": logdet_bound(model),
        "zero": zero_temperature_bound(model.with_epsilon(0.0)),
        "cvxpy": cvxpy_quantum_bound(model),
        "metric": metric_learning_bound(model, max_iter=3),
    }


def test_every_result_has_bound_converged_and_status():
    model = random_model(4, "gaussian", "complete", random_state=0)
    for name, r in _results(model).items():
        assert isinstance(r.bound, float), name
        assert isinstance(r.converged, bool), name
        if name == "exact":
            continue
        assert isinstance(r, Result) and isinstance(r, BoundResult), name
        assert isinstance(r.status, Status) and r.status.converged == r.converged, name
        assert isinstance(r.message, str) and r.message, name
        assert r.fun == r.bound and r.method, name
        assert len(r.trace) >= 1 and r.trace.objective[-1] == pytest.approx(r.bound), name
        assert r.trace.is_monotone(), name
        assert np.all(np.diff(r.trace.seconds) >= 0) and r.trace.seconds[-1] <= r.seconds, name
        assert r.certified == (name not in ("logdet", "cvxpy")), name


def test_iterative_bounds_trace_every_check():
    """The quantum solver's trace has a row per duality-gap check, its best bound so far, and
    ends at the returned certificate; greedy steps a row each."""
    model = random_model(6, "gaussian", "complete", random_state=1)
    r = quantum_bound(model, tol=1e-9, polish=False)
    assert len(r.trace) == len(r.history) >= 2
    np.testing.assert_array_equal(r.trace.objective, [h[1] for h in r.history])
    assert r.nit == r.iterations and r.n_evals == r.eigendecompositions > 0
    g = greedy_features(model, 2)
    assert len(g.trace) == 1 + g.nit == 1 + len(g.history)
    assert g.trace.objective[-1] == pytest.approx(g.bound)
    short = quantum_bound(model, tol=1e-12, max_iter=3, polish=False)
    assert short.status is Status.MAX_ITER and short.message == "max_iter reached"


def test_marginals_are_probabilities_of_plus_one_everywhere():
    """On a tree TRW (rho = 1), the quantum relaxation with all 2^d features and elimination are
    exact: all report the same P(x_i = 1), and means = 2 marginals - 1."""
    model = random_model(5, "gaussian", "tree", random_state=3)
    ref = enumerate_exact(model)
    assert np.all((ref.marginals >= 0) & (ref.marginals <= 1))
    np.testing.assert_allclose(ref.means, 2 * ref.marginals - 1, atol=1e-12)
    found = {
        "eliminate": eliminate_exact(model),
        "trw": trw_bound(model, rho=np.ones(4)),
        "quantum-all": quantum_bound(model, all_features(5), tol=1e-9),
    }
    for name, r in found.items():
        np.testing.assert_allclose(r.marginals, ref.marginals, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(r.means, ref.means, atol=2e-5, err_msg=name)
    approx = {
        "quantum": quantum_bound(model),
        "greedy": greedy_features(model, 2),
        "logdet": logdet_bound(model),
        "zero": zero_temperature_bound(model.with_epsilon(0.0), tree_features(model)),
    }
    for name, r in approx.items():
        p = np.asarray(r.marginals)
        assert p.shape == (5,) and np.all((p >= 0) & (p <= 1)), name
        np.testing.assert_allclose(2 * p - 1, np.clip(r.means, -1, 1), atol=1e-12, err_msg=name)
    # the l1 error of the paper is taken between such probabilities
    assert np.mean(np.abs(approx["quantum"].marginals - ref.marginals)) < 0.5


def test_unrepresentable_marginals_are_nan_not_a_guess():
    """Features (1, x_1, x_0 x_2): E[x_1] is read from Sigma, E[x_0] and E[x_2] are not."""
    from zbound.ising.features import FeatureSet
    from zbound.ising.model import IsingModel

    J = np.zeros((3, 3))
    J[0, 2] = J[2, 0] = 0.7
    model = IsingModel(np.array([0.0, 0.9, 0.0]), J)
    r = quantum_bound(model, FeatureSet(3, [0b000, 0b010, 0b101]))
    assert np.isnan(r.marginals[[0, 2]]).all() and np.isnan(r.means[[0, 2]]).all()
    assert 0.5 < r.marginals[1] <= 1 and r.means[1] == pytest.approx(2 * r.marginals[1] - 1)


def test_trw_says_why_it_did_not_converge():
    model = random_model(6, "gaussian", "complete", random_state=5)
    with pytest.warns(ConvergenceWarning):
        r = trw_bound(model, max_iter=2)
    assert not r.converged and "did not converge" in r.message
    assert r.status is Status.MAX_ITER and r.nit == 2
