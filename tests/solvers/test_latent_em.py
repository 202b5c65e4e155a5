"""Solvers on the latent conditional likelihood: the bound (Alg. 2) and EM decrease the
objective at every iteration; EM's M-step objective majorizes J; every baseline runs on the
same objective from the same start; the generative (joint) EM maps back to the same model."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.models.latent import latent_objective
from zbound.solvers import minimize
from zbound.solvers.latent_em import (
    LatentEM,
    LatentJointEM,
    joint_to_theta,
    mstep_objective,
    theta_to_joint,
)


def _stripes(n, seed):
    """The Fig. 1 toy of the latent suite: 8 Gaussians in 4 horizontal stripes, A B A B."""
    rng = np.random.default_rng(seed)
    cx = np.array([-4.0, 4.0] * 4)
    cy = np.repeat([3.0, 1.0, -1.0, -3.0], 2)
    lab = np.repeat([0, 1, 0, 1], 2)
    k = rng.integers(0, 8, n)
    return np.c_[cx[k], cy[k]] + 0.5 * rng.standard_normal((n, 2)), lab[k]


def _model(reg=0.0, seed=0, n=120):
    X, y = _stripes(n, seed)
    return latent_objective(X, y, 2, reg=reg)


def _monotone_callback(seen):
    def cb(x, f):
        seen.append(f)
        return False
    return cb


@pytest.mark.parametrize("method", ["bound", "squarem", LatentEM])
@pytest.mark.parametrize("reg", [0.0, 0.1])
def test_monotone_every_iteration(method, reg):
    model = _model(reg)
    x0 = 0.01 * np.random.default_rng(1).standard_normal(model.n_params)
    seen = [model.value(x0)]
    res = minimize(model, x0, method=method, max_iter=150, tol=1e-10,
                   callback=_monotone_callback(seen))
    f = np.array(seen)
    assert np.all(np.diff(f) <= 1e-12 * np.maximum(1.0, np.abs(f[:-1])))
    assert np.all(np.diff(res.trace.objective) <= 1e-12 * np.maximum(1.0, np.abs(
        res.trace.objective[:-1])))
    assert res.fun < f[0] - 1.0


def test_bound_step_minimizes_the_quadratic_in_closed_form():
    model = _model(0.1)
    rng = np.random.default_rng(2)
    x = 0.3 * rng.standard_normal(model.n_params)
    maj = model.majorizer(x)
    x_new = maj.minimizer()
    C = maj.curvature.to_dense()
    # stationary point of the quadratic, and it decreases the true objective
    np.testing.assert_allclose(maj.grad + C @ (x_new - x), 0.0, atol=1e-8)
    assert model.value(x_new) <= maj.evaluate(x_new) <= maj.value
    res = minimize(model, x, method="bound", max_iter=1)
    np.testing.assert_allclose(res.x, x_new, atol=1e-8)


def test_bound_step_with_singular_curvature_at_lambda_zero():
    """lambda = 0: the softmax over pairs is invariant to a common shift of all pairs, so the
    Alg. 1 curvature is singular; the minimum-norm step still decreases J."""
    model = _model(0.0)
    x = 0.2 * np.random.default_rng(3).standard_normal(model.n_params)
    maj = model.majorizer(x)
    assert np.linalg.matrix_rank(maj.curvature.to_dense()) < model.n_params
    x_new = maj.minimizer()
    assert np.all(np.isfinite(x_new))
    assert model.value(x_new) < model.value(x)


def test_em_mstep_objective_majorizes_J():
    model = _model(0.05)
    rng = np.random.default_rng(4)
    x = 0.5 * rng.standard_normal(model.n_params)
    eta = model.loss.responsibilities(x)
    Q = mstep_objective(model.loss, model.penalties, eta)
    const = model.value(x) - Q.value(x)           # the entropy of eta
    assert const <= 1e-12                          # -H(eta) <= 0
    for _ in range(50):
        z = x + rng.standard_normal(model.n_params) * rng.choice([0.01, 1.0, 5.0])
        assert model.value(z) <= Q.value(z) + const + 1e-9


@pytest.mark.parametrize("method", ["bound", "bfgs", "cg", "steepest", "newton", LatentEM])
def test_every_method_on_the_same_objective(method):
    """Regularized (bounded) problem, the same start: every method gets to a stationary point
    no worse than the start, on the very same objective."""
    model = _model(1.0)
    x0 = 0.01 * np.random.default_rng(5).standard_normal(model.n_params)
    res = minimize(model, x0, method=method, max_iter=3000, tol=1e-6)
    assert res.fun < model.value(x0)
    assert res.fun == pytest.approx(model.value(res.x))
    assert np.max(np.abs(model.value_and_grad(res.x)[1])) <= 1e-3 * max(1.0, abs(res.fun))


def test_joint_em_round_trip_and_run():
    model = _model(0.0)
    rng = np.random.default_rng(6)
    W = rng.standard_normal((model.loss.n_pairs, model.loss.d))
    A = rng.standard_normal((2, 2))
    cov = A @ A.T + np.eye(2)
    mu, log_pi = theta_to_joint(W, cov)
    W2 = joint_to_theta(mu, log_pi, cov)
    # the offsets are defined up to a common constant (normalizing pi)
    np.testing.assert_allclose(W2[:, :-1], W[:, :-1], atol=1e-10)
    shift = W2[:, -1] - W[:, -1]
    np.testing.assert_allclose(shift, shift[0], atol=1e-10)
    x0 = 0.01 * rng.standard_normal(model.n_params)
    res = minimize(model, x0, method=LatentJointEM, max_iter=300, ftol=1e-10)
    assert np.isfinite(res.fun) and res.fun == pytest.approx(model.value(res.x))
    assert "joint_loglik" in res.info


def test_em_rejects_other_models():
    from zbound.models.multinomial import MultinomialLogistic

    X, y = _stripes(30, 0)
    with pytest.raises(TypeError, match="LatentLikelihood capability"):
        minimize(MultinomialLogistic(X, y, 2, 1.0), np.zeros(4), method=LatentEM)
    with pytest.raises(TypeError, match="LatentLikelihood capability"):
        minimize(MultinomialLogistic(X, y, 2, 1.0), np.zeros(4), method="em")


def test_toy_bound_separates_where_joint_em_does_not():
    X, y = _stripes(300, 7)
    Xt, yt = _stripes(300, 8)
    model = latent_objective(X, y, 2)
    test = latent_objective(Xt, yt, 2)
    x0 = 0.01 * np.random.default_rng(9).standard_normal(model.n_params)
    acc = {}
    for name, method in [("bound", "squarem"), ("em-joint", LatentJointEM)]:
        res = minimize(model, x0, method=method, max_iter=500, tol=1e-8)
        acc[name] = float(np.mean(test.loss.log_proba(res.x).argmax(axis=1) == yt))
    assert acc["bound"] >= 0.9
    assert acc["em-joint"] <= 0.7
