"""CVXPY formulation of the quantum relaxation (the speed peer of the Chambolle-Pock solver)."""

import numpy as np
import pytest

from zbound.ising.cvxpy_quantum import cvxpy_quantum_bound
from zbound.ising.features import default_features, edge_features
from zbound.ising.model import IsingModel
from zbound.ising.quantum import quantum_bound


def random_model(d, rng, eps=1.0):
    J = np.triu(rng.standard_normal((d, d)), 1)
    return IsingModel(rng.standard_normal(d), J + J.T, eps)


@pytest.mark.parametrize("solver", ["CLARABEL", "SCS"])
@pytest.mark.parametrize("feats", ["default", "edges"])
def test_agrees_with_chambolle_pock(solver, feats):
    rng = np.random.default_rng(0)
    model = random_model(4, rng, eps=0.8)
    fs = default_features(4) if feats == "default" else edge_features(4, [(0, 1), (2, 3)])
    c = cvxpy_quantum_bound(model, fs, solver=solver)
    r = quantum_bound(model, fs, tol=1e-8, max_iter=50000)
    assert c.message == "optimal" and c.bound is not None
    tol = 1e-5 if solver == "CLARABEL" else 1e-3
    assert c.bound == pytest.approx(r.bound, rel=tol)
    assert c.seconds > 0
    S = c.sigma
    np.testing.assert_allclose(np.diag(S), 1.0, atol=1e-5)
    np.testing.assert_allclose(fs.xor_classes.project(S), S, atol=1e-5)


def test_failure_reported_as_none():
    """A one-millisecond limit cannot be met: the result says so instead of giving a number."""
    rng = np.random.default_rng(1)
    model = random_model(12, rng)
    c = cvxpy_quantum_bound(model, solver="SCS", time_limit=1e-3)
    assert c.bound is None
    assert c.message != "optimal"


def test_bad_inputs():
    rng = np.random.default_rng(2)
    model = random_model(3, rng)
    with pytest.raises(ValueError, match="solver"):
        cvxpy_quantum_bound(model, solver="MOSEK")
    with pytest.raises(ValueError, match="time_limit"):
        cvxpy_quantum_bound(model, time_limit=0)
    with pytest.raises(ValueError, match="epsilon"):
        cvxpy_quantum_bound(model.with_epsilon(0.0))
