import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from zbound.ising.exact import enumerate_exact, hypercube
from zbound.ising.generators import random_model
from zbound.ising.logdet import LOGDET_CONSTANT, logdet_bound, logdet_entropy_bound
from zbound.ising.model import IsingModel


def test_entropy_bound_dominates_the_entropy_of_random_distributions():
    # Suppl. A.1: H(p) <= 1/2 logdet(Sigma_p + blkdiag(0, I/3)) + d/2 log(pi e / 2)
    rng = np.random.default_rng(0)
    for d in (1, 2, 3, 5):
        X = hypercube(d)
        Phi = np.hstack([np.ones((2**d, 1)), X])
        for alpha in (0.05, 1.0, 20.0):
            p = rng.dirichlet(np.full(2**d, alpha))
            H = -np.sum(p[p > 0] * np.log(p[p > 0]))
            Sigma = (Phi * p[:, None]).T @ Phi
            assert logdet_entropy_bound(Sigma) >= H - 1e-12
    # the slack for the uniform law is d * (1/2 log(2 pi e / 3) - log 2) (Suppl. A.1)
    d = 4
    slack = logdet_entropy_bound(np.eye(d + 1)) - d * np.log(2)
    assert slack == pytest.approx(d * (0.5 * np.log(2 * np.pi * np.e / 3) - np.log(2)))
    assert LOGDET_CONSTANT == pytest.approx(0.5 * np.log(np.pi * np.e / 2))


def test_independent_variables_match_the_separable_closed_form():
    # Without couplings the optimum is separable (Hadamard: det <= product of diagonal):
    # per variable max_mu h mu + eps/2 log(4/3 - mu^2), plus eps (log(pi e/2)/2 - log 2).
    m = random_model(4, "gaussian", "independent", epsilon=0.7, random_state=3)
    r = logdet_bound(m)
    eps = m.epsilon
    total = 0.0
    for h in m.h:
        res = minimize_scalar(lambda mu, h=h: -(h * mu + eps / 2 * np.log(4 / 3 - mu**2)),
                              bounds=(-1, 1), method="bounded", options={"xatol": 1e-12})
        total += -res.fun + eps * (LOGDET_CONSTANT - np.log(2))
    assert r.message == "optimal"
    assert r.bound == pytest.approx(total, abs=1e-6)
    assert r.bound > enumerate_exact(m).log_partition


_settings = st.sampled_from([
    ("gaussian", "mixed", 1.0), ("logdet", "attractive", 1.0), ("logdet", "mixed", 1.0),
    ("logdet", "repulsive", 1.0), ("trw", "attractive", 3.0), ("trw", "mixed", 3.0),
])


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 7), _settings, st.sampled_from(["complete", "tree"]),
       st.integers(0, 2**31), st.floats(0.05, 30.0), st.floats(0.1, 5.0))
def test_logdet_upper_bounds_log_partition(d, setting, graph, seed, scale, eps):
    name, coupling, w = setting
    base = random_model(d, name, graph, coupling, w, random_state=seed)
    m = IsingModel(scale * base.h, scale * base.J, eps)
    r = logdet_bound(m)
    assert r.bound is not None, r.message
    exact = enumerate_exact(m).log_partition
    assert r.bound >= exact
    assert np.all((r.marginals >= 0) & (r.marginals <= 1))


def test_zero_temperature_is_an_sdp_relaxation_of_the_maximum():
    for seed in range(5):
        m = random_model(6, "gaussian", "complete", epsilon=0.0, random_state=seed)
        top = m.energy(hypercube(6)).max()
        r = logdet_bound(m)
        # the relaxation can be tight at eps = 0, so only solver accuracy separates them
        assert r.bound >= top - 1e-6 * max(1.0, abs(top))
        # the relaxed moments are feasible: PSD, unit diagonal, pairwise-consistent
        S = r.moments
        assert np.linalg.eigvalsh(S).min() > -1e-6
        np.testing.assert_allclose(np.diag(S), 1.0, atol=1e-6)
        for i, j in itertools.combinations(range(6), 2):
            for a, b in itertools.product((-1, 1), repeat=2):
                assert 1 + a * S[0, i + 1] + b * S[0, j + 1] + a * b * S[i + 1, j + 1] > -1e-6


def test_pairwise_constraints_tighten_and_solvers_agree():
    m = random_model(6, "logdet", "complete", "repulsive", 1.0, random_state=0)
    with_pw = logdet_bound(m)
    without = logdet_bound(m, pairwise=False)
    assert with_pw.bound <= without.bound + 1e-7
    scs = logdet_bound(m, solver="SCS")
    assert scs.bound == pytest.approx(with_pw.bound, abs=1e-4)


def test_bad_input():
    with pytest.raises(TypeError, match="IsingModel"):
        logdet_bound({"h": [0.0]})


@pytest.mark.parametrize("scale, eps", [(100.0, 0.01), (1000.0, 1.0)])
def test_extreme_couplings(scale, eps):
    base = random_model(6, "gaussian", "complete", random_state=1)
    m = IsingModel(scale * base.h, scale * base.J, eps)
    r = logdet_bound(m)
    exact = enumerate_exact(m).log_partition
    assert r.bound is not None and r.bound >= exact
    # the SDP part is tight on this instance, so only the entropy slack O(eps d) remains
    assert r.bound - exact < 2 * eps * m.d
