"""Features in very different units (raw data: a column in units of 1e6 beside 0/1 columns)
must not change whether the latent and mixture estimators converge, nor let a fit that stopped
far from a stationary point be called converged. Each fit is checked in the original
coordinates: its stored objective is the objective of its coefficients, and the gradient there,
in the units of a standardized column, is small."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from zbound import LatentLogisticRegression, MixtureOfExperts
from zbound.models.latent import latent_objective
from zbound.moe.model import MoEProblem
from zbound.utils.linalg import column_scale

UNITS = np.array([1.0, 1e6, 1e-3, 1.0, 1.0])


def _raw(n_classes, rows=500, seed=0):
    """Standard normal columns (one a 0/1 indicator), labels from a noisy linear model,
    then columns put in the units of UNITS."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((rows, UNITS.size))
    Z[:, 4] = Z[:, 4] > 0.5
    W = rng.standard_normal((UNITS.size, n_classes))
    y = (Z @ W + 0.5 * rng.standard_normal((rows, n_classes))).argmax(axis=1)
    return Z * UNITS, y


def _unit_gradient(g, X, per_block, a):
    """The gradient in coordinates where every column's curvature is about a standardized
    column's: weights times u, u^2 = (rms^2 + a) / (1 + a) (a: the ridge against a logistic
    column's curvature rms^2 / 4; a column in tiny units is held by its ridge, not blown
    up), so the gradient is g / u."""
    u = np.append(np.sqrt((column_scale(X) ** 2 + a) / (1.0 + a)), 1.0)
    return g / np.tile(u, per_block)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_latent_model_converges_on_raw_units(n_classes):
    X, y = _raw(n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = LatentLogisticRegression(random_state=0).fit(X, y)
    assert est.converged_
    theta = np.concatenate([est.coef_, est.intercept_[:, :, None]], axis=2).ravel()
    reg = (2.0 if n_classes == 2 else 1.0) / est.C        # LogisticRegression's binary C
    model = latent_objective(X, y, est.n_components, reg, n_classes)
    f, g = model.value_and_grad(theta)
    assert f == pytest.approx(est.objective_, rel=1e-10)
    gu = _unit_gradient(g, X, n_classes * est.n_components, 4.0 * reg / X.shape[0])
    assert np.max(np.abs(gu)) <= 1e-2 * max(1.0, abs(f)), np.max(np.abs(gu))
    np.testing.assert_allclose(est.solver_result_.x, theta, rtol=1e-12, atol=0)


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mixture_converges_on_raw_units(n_classes, seed):
    """L-BFGS on the mixture's likelihood stops on a gradient test relative to the current
    objective (it was relative to the random start's: 7% above the optimum, called
    converged, with a column in units of 1e6)."""
    X, y = _raw(n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = MixtureOfExperts(2, random_state=seed).fit(X, y)
    problem = MoEProblem(X, y, 2, "logistic", n_classes=n_classes, reg=est.alpha)
    f, g = problem.value_and_grad(est._theta)
    assert f == pytest.approx(est.objective_, rel=1e-10)
    n_weights = problem.n_gate + problem.n_coef
    gu = _unit_gradient(g[:n_weights], X, n_weights // problem.p, 4.0 * est.alpha)
    assert np.max(np.abs(gu)) <= 1e-3 * max(1.0, abs(f)), np.max(np.abs(gu))


@pytest.mark.parametrize("make", [
    lambda: LatentLogisticRegression(), lambda: MixtureOfExperts(2, random_state=0),
    lambda: MixtureOfExperts(2, expert="linear", random_state=0)])
@pytest.mark.parametrize("big", [1e150, 1e300])
def test_entries_whose_sums_overflow_are_a_clear_error(make, big):
    """Every estimator rejects entries whose gradient sums would overflow float64, before any
    statistic of X warns (the latent model fitted them, with invalid-value warnings)."""
    X, y = _raw(2, rows=60)
    X = X / UNITS
    X[3, 2] = big
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="magnitude"):
            make().fit(X, y)


@pytest.mark.parametrize("units", [1e-8, 1e8, 1e120])
def test_mixture_of_regressions_does_not_depend_on_the_units_of_y(units):
    """The same data with y in other units: the same fit in those units (the penalty weighed
    the weights in y's units: y in units of 1e8 gave R^2 0.68 against 0.99)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = np.where(X[:, 1] > 0, 2.0 * X[:, 0], -X[:, 0]) + 0.1 * rng.standard_normal(300)
    ref = MixtureOfExperts(2, expert="linear", random_state=0).fit(X, y)
    est = MixtureOfExperts(2, expert="linear", random_state=0).fit(X, y * units)
    np.testing.assert_allclose(est.predict(X), units * ref.predict(X), rtol=1e-6,
                               atol=1e-6 * units)
    np.testing.assert_allclose(est.noise_variance_, units**2 * ref.noise_variance_, rtol=1e-6)
    assert est.objective_ == pytest.approx(ref.objective_ + np.log(units), rel=1e-9, abs=1e-9)
    assert est.score(X, y * units) == pytest.approx(ref.score(X, y), abs=1e-9)
    assert ref.score(X, y) > 0.95


def test_mixture_of_regressions_rejects_targets_whose_squares_overflow():
    X = np.random.default_rng(0).standard_normal((40, 2))
    with pytest.raises(ValueError, match="magnitude"):
        MixtureOfExperts(2, expert="linear").fit(X, 1e200 * X[:, 0])


def test_stochastic_bound_steps_do_not_depend_on_a_column_in_large_units():
    """The SPFB step factors its curvature with a unit diagonal: a column in units of 1e9
    made the curvature "singular", its minimum-norm inverse dropped every other direction,
    and the fit stalled at J = 0.51 (accuracy 0.75) where 1e3 units reach J = 0.196."""
    from zbound import BoundSGDClassifier

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((200, 5))
    y = (Z[:, 0] + Z[:, 4] + 0.3 * rng.standard_normal(200) > 0).astype(int)
    fits = {}
    for units in (1e3, 1e9, 1e15):
        X = Z * np.array([1.0, 1.0, 1.0, 1.0, units])
        est = BoundSGDClassifier().fit(X, y)
        assert est.solver_ == "spfb"
        fits[units] = (est.objective_, est.predict(X))
    for units in (1e9, 1e15):
        assert fits[units][0] == pytest.approx(fits[1e3][0], rel=1e-4)
        np.testing.assert_array_equal(fits[units][1], fits[1e3][1])


@pytest.mark.parametrize("make", [
    lambda: __import__("zbound").BoundLogisticRegression(), lambda: LatentLogisticRegression()])
def test_sample_weights_whose_sums_overflow_are_a_clear_error(make):
    """Weights of 1e200 count as 1e200 rows in a sum of losses: the latent model fitted them
    with invalid values and predicted at chance, BoundLogisticRegression with overflow
    warnings. (BoundSGDClassifier and MixtureOfExperts weigh rows over the weights' sum,
    where their scale is free: tests/test_adversarial.py.)"""
    X, y = _raw(3, rows=60)
    X = X / UNITS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="sample_weight sums to"):
            make().fit(X, y, sample_weight=np.full(60, 1e200))
