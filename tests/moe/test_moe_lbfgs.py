"""The mixtures' one-product logistic objective on extreme inputs, "moe-lbfgs", and the
estimator's automatic expert and method."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _moe_data import class_data
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from zbound import MixtureOfExperts
from zbound.moe import MixtureLBFGS, MoEProblem, fit_em


def _reference(pb, theta):
    """L and its gradient the long way: log gate + log expert per expert, logsumexp, and
    the gradient of Q at its own responsibilities."""
    J = pb.log_gate(theta) + pb.log_expert(theta)
    f = -float(pb.v @ logsumexp(J, axis=1)) + pb.penalty_value(theta)
    R = np.exp(J - logsumexp(J, axis=1)[:, None])
    return f, pb.q_value_and_grad(theta, R)[1]


@settings(max_examples=400, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(1, 4), k=st.integers(1, 4), C=st.integers(2, 5),
       log_scale=st.floats(-3.0, 2.7), intercept=st.booleans(), seed=st.integers(0, 2**31),
       zero_weights=st.booleans())
def test_one_product_objective_matches_the_reference(n, d, k, C, log_scale, intercept, seed,
                                                     zero_weights):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, C, n)
    sw = rng.uniform(0.1, 1.0, n)
    if zero_weights and n > 1:
        sw[rng.random(n) < 0.5] = 0.0
        sw[0] = 1.0
    pb = MoEProblem(X, y, k, "logistic", n_classes=C, reg=0.1, sample_weight=sw,
                    fit_intercept=intercept)
    theta = rng.normal(size=pb.n_params) * 10.0 ** log_scale    # scores up to ~1e3
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # no overflow warnings
        f, g = pb.value_and_grad(theta)
    assert np.isfinite(f) and np.isfinite(g).all()
    f0, g0 = _reference(pb, theta)
    assert f == pytest.approx(f0, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(g, g0, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(g0).max()))


def test_lbfgs_is_monotone_and_reaches_em_objective():
    X, y = class_data(n=400, noise=0.3)
    pb = MoEProblem(X, y, 2, "logistic", reg=1e-3)
    theta0 = np.random.default_rng(0).normal(size=pb.n_params) * 0.1
    res = MixtureLBFGS(tol=1e-8, ftol=0.0, max_iter=2000).run(pb, theta0)
    assert res.converged
    assert res.trace.is_monotone()
    # SciPy may end on its line search's precision near the optimum (then converged when the
    # gradient is small; on Haswell kernels 1.06e-8 here, against 3e-9 on SkylakeX)
    assert np.max(np.abs(pb.value_and_grad(res.x)[1])) <= 1e-6 * max(1.0, abs(res.fun))
    em = fit_em(pb, theta0, max_iter=300, tol=1e-12)
    assert res.fun <= em.fun + 1e-6


def test_auto_is_a_classifier_for_labels_and_a_regressor_for_reals():
    X, y = class_data(n=400, noise=0.3)
    labels = np.array(["low", "mid", "high"])[y]
    clf = MixtureOfExperts(random_state=0).fit(X, labels)
    assert clf.expert_ == "logistic" and clf.solver_ == "lbfgs"
    assert set(clf.predict(X)) <= set(labels)
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert clf.score(X, labels) > 0.85          # the flipped classes need two experts
    one = MixtureOfExperts(n_components=1).fit(X, labels)
    assert one.score(X, labels) < clf.score(X, labels) - 0.1
    ints = MixtureOfExperts(random_state=0).fit(X, y)
    assert ints.expert_ == "logistic"
    np.testing.assert_array_equal(ints.classes_, [0, 1, 2])
    reg = MixtureOfExperts(random_state=0).fit(X, y.astype(float) + 0.5)
    assert reg.expert_ == "linear" and reg.solver_ == "em"
    assert not hasattr(reg, "predict_proba")
    assert MixtureOfExperts(expert="linear").fit(X, y).expert_ == "linear"
