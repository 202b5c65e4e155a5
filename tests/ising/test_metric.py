"""Diagonal metric learning with Kelley's cutting planes (Beyler & Bach, supplement C, App. D)."""

import math

import numpy as np
import pytest
from _ising_reference import brute_phi, random_model

from zbound.ising.metric import diag_entropy, diag_entropy_gradient, metric_learning_bound


def test_diag_entropy_matches_its_definition():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    S = A @ A.T + 0.2 * np.eye(6)
    lam, U = np.linalg.eigh(S)
    H = (U * (lam * np.log(lam) - lam + 1)) @ U.T
    np.testing.assert_allclose(diag_entropy(S), np.diag(H), atol=1e-12)
    np.testing.assert_allclose(diag_entropy(np.eye(4)), 0.0, atol=1e-15)


@pytest.mark.parametrize("i", [0, 3])
def test_gradient_matches_finite_differences(i):
    """App. D: grad [h(S)]_ii = U (Gamma o u_i u_i^T) U^T with divided differences Gamma."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 5))
    S = A @ A.T + 0.1 * np.eye(5)
    D = rng.standard_normal((5, 5))
    D = D + D.T
    G = diag_entropy_gradient(S, i)
    h = 1e-6
    fd = (diag_entropy(S + h * D)[i] - diag_entropy(S - h * D)[i]) / (2 * h)
    assert np.vdot(G, D) == pytest.approx(fd, rel=1e-6, abs=1e-8)
    # repeated eigenvalues: the diagonal of Gamma is h'(l) = log l
    G1 = diag_entropy_gradient(2.0 * np.eye(3), 1)
    np.testing.assert_allclose(G1, math.log(2.0) * np.diag([0.0, 1.0, 0.0]), atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_metric_bound_between_exact_and_quantum(seed):
    model = random_model(3, seed, eps=1.0)
    r = metric_learning_bound(model, tol=1e-3)
    exact = brute_phi(model)
    assert r.converged
    assert exact - 1e-7 <= r.lower <= r.bound + 1e-9
    assert r.bound <= r.quantum.bound + 1e-9
    # diagonal metric learning strictly improves on V = I / n here
    assert r.bound < r.quantum.bound - 1e-3
    assert r.gap <= 1e-3 + 1e-9


def test_bad_inputs():
    model = random_model(3, 2)
    with pytest.raises(ValueError, match="epsilon"):
        metric_learning_bound(model.with_epsilon(0.0))
    with pytest.raises(ValueError, match="interior"):
        metric_learning_bound(model, interior=1.5)
    with pytest.raises(ValueError, match="positive definite"):
        diag_entropy_gradient(np.diag([1.0, 0.0]), 0)
