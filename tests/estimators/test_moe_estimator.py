"""MixtureOfExperts: the scikit-learn contract, fits, errors, collapsed experts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from zbound import MixtureOfExperts


def _expected_failures(estimator):
    out = {}
    if estimator.expert == "auto":
        # expert="auto" reads integer targets as class labels (a classifier) and floating-point
        # ones as real values (a regressor), by design; the check fits a regressor to the same
        # values as int and as float and expects one regression. expert="linear" passes it.
        out["check_regressors_int"] = "expert='auto' reads integer targets as class labels"
    if estimator.expert == "linear":
        # The check's 15-point regression on 30 columns lets an expert interpolate its points
        # (its noise variance falls to the floor): the likelihood of a mixture of regressions
        # is unbounded there, and rounding differences between the weighted and the repeated
        # fit can send EM to different degenerate optima. With well-posed data the two fits
        # agree (test_sample_weight_equals_repetition). expert="auto" reads the check's
        # integer labels as classes (logistic experts) and passes it.
        out["check_sample_weight_equivalence_on_dense_data"] = \
            "degenerate mixture-of-regressions optimum on the check's tiny data"
    return out


@parametrize_with_checks([MixtureOfExperts(), MixtureOfExperts(expert="linear"),
                          MixtureOfExperts(expert="logistic"),
                          MixtureOfExperts(expert="linear", solver="squarem")],
                         expected_failed_checks=_expected_failures)
def test_sklearn_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


def _switching_regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0, 3 * X[:, 1], -3 * X[:, 1]) + 0.1 * rng.normal(size=n)
    return X, y


def test_linear_mixture_beats_one_expert():
    X, y = _switching_regression()
    one = MixtureOfExperts(n_components=1).fit(X, y)
    two = MixtureOfExperts(n_components=2, n_init=3, random_state=0).fit(X, y)
    assert two.score(X, y) > 0.95 > one.score(X, y)
    curve = two.solver_result_.trace.objective
    assert np.all(np.diff(curve) <= 1e-10 * np.abs(curve[:-1]))
    assert two.noise_variance_.shape == (2,)
    assert not hasattr(two, "predict_proba")


def test_squarem_fits_the_mixture_em_fits():
    """method="squarem": the same two-piece fit as EM, a monotone objective curve."""
    X, y = _switching_regression()
    em = MixtureOfExperts(n_components=2, random_state=0).fit(X, y)
    sq = MixtureOfExperts(n_components=2, random_state=0, solver="squarem").fit(X, y)
    assert sq.solver_ == "squarem" and sq.score(X, y) > 0.95
    assert sq.objective_ <= em.objective_ + 1e-6 * abs(em.objective_)
    c = sq.solver_result_.trace.objective
    assert np.all(np.diff(c) <= 1e-10 * np.abs(c[:-1]))


def test_fixed_noise_and_methods():
    X, y = _switching_regression(200)
    em = MixtureOfExperts(noise=0.01, random_state=0, n_init=2).fit(X, y)
    np.testing.assert_allclose(em.noise_variance_, 0.01)
    for method, lr in (("gd", 0.05), ("gradient-em", (0.05, 0.5)), ("adam", 0.05)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = MixtureOfExperts(solver=method, learning_rate=lr, noise=0.01, max_iter=50,
                                   random_state=0).fit(X, y)
        assert est.objective_ >= em.objective_ - 1e-9


def test_inverted_classes_need_two_experts():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 1] > 0).astype(int)
    inv = X[:, 0] > 0
    y[inv] = 1 - y[inv]
    one = MixtureOfExperts(n_components=1, expert="logistic").fit(X, y)
    two = MixtureOfExperts(n_components=2, expert="logistic", n_init=3, random_state=0,
                           alpha=1e-3).fit(X, y)
    assert two.score(X, y) > 0.9 and one.score(X, y) < 0.7
    P = two.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(two.gate_proba(X).sum(axis=1), 1.0)


@pytest.mark.parametrize("classes", [2, 3])
def test_fitted_mixture_keeps_no_training_rows(classes):
    """The fitted estimator predicts from the problem's layout alone: no array with one
    entry per training row survives the fit (pickles stay small), the two-class caches
    included, and the predictions are the same after a pickle round trip."""
    import pickle

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = rng.integers(0, classes, 400)
    est = MixtureOfExperts(n_components=2, random_state=0).fit(X, y)
    for name, value in vars(est._predictor).items():
        assert not (isinstance(value, np.ndarray) and 400 in value.shape), name
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict_proba(X[:50]), est.predict_proba(X[:50]))


def test_sample_weight_equals_repetition():
    X, y = _switching_regression(60, seed=3)
    w = np.random.default_rng(4).integers(0, 3, size=60)
    a = MixtureOfExperts(random_state=0, tol=1e-12, max_iter=500).fit(X, y, sample_weight=w)
    b = MixtureOfExperts(random_state=0, tol=1e-12, max_iter=500).fit(
        np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-6)


def test_errors():
    X, y = _switching_regression(20)
    with pytest.raises(ValueError, match="'n_components' parameter .* must be an int"):
        MixtureOfExperts(n_components=0).fit(X, y)
    with pytest.raises(ValueError, match="2 samples per expert"):
        MixtureOfExperts(n_components=3).fit(X[:5], y[:5])
    Xn = X.copy()
    Xn[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MixtureOfExperts().fit(Xn, y)
    with pytest.raises(ValueError, match="1 class"):
        MixtureOfExperts(expert="logistic").fit(X, np.zeros(20, dtype=int))
    with pytest.raises(ValueError, match="solver"):
        MixtureOfExperts(solver="sgd").fit(X, y)
    with pytest.raises(ValueError, match="learning_rate"):
        MixtureOfExperts(learning_rate=-1.0).fit(X, y)


def test_collapsed_components_are_reported():
    # one straight line: a second and third expert have nothing to explain
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 1))
    y = 2 * X[:, 0]
    with pytest.warns(UserWarning, match="collapsed"):
        est = MixtureOfExperts(n_components=3, random_state=0).fit(X, y)
    assert est.collapsed_components_


def test_linear_experts_on_wide_data_build_no_columns_by_columns_matrix():
    """More columns than rows: each expert's weighted ridge fit goes through (rows, rows)
    systems (300 x 20 000 asked for a 3 GB normal matrix); the peak stays near the data's
    size, and the fit explains the target."""
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4000))
    y = np.where(X[:, 1] > 0, 2.0 * X[:, 0], -X[:, 0]) + 0.05 * rng.standard_normal(60)
    tracemalloc.start()
    est = MixtureOfExperts(2, expert="linear", random_state=0, max_iter=20).fit(X, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 40 * X.nbytes          # a (4001, 4001) normal matrix alone is 64 x X
    assert est.score(X, y) > 0.9


def _objective_from_attributes(m, X, y, sample_weight, reg):
    """The objective as the docstring of ``objective_`` defines it, from the fitted
    attributes alone."""
    from scipy.special import log_softmax, logsumexp

    v = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
    v = v / v.sum()
    gate = np.column_stack([np.zeros(len(X)), X @ m.gate_coef_.T + m.gate_intercept_])
    log_gate = log_softmax(gate, axis=1)
    if m.expert_ == "linear":
        mean = X @ m.coef_.T + m.intercept_
        s2 = m.noise_variance_
        log_expert = -0.5 * (np.log(2 * np.pi * s2) + (y[:, None] - mean) ** 2 / s2)
        penalty = np.sum(m.gate_coef_**2) + np.sum(m.coef_**2) / (v @ y**2)
    else:
        scores = np.einsum("nd,kmd->nkm", X, m.coef_) + m.intercept_[None]
        scores = np.concatenate([np.zeros(scores.shape[:2] + (1,)), scores], axis=2)
        idx = np.searchsorted(m.classes_, y)
        log_expert = log_softmax(scores, axis=2)[np.arange(len(y)), :, idx]
        penalty = np.sum(m.gate_coef_**2) + np.sum(m.coef_**2)
    return -(v @ logsumexp(log_gate + log_expert, axis=1)) + reg / 2 * penalty


@pytest.mark.parametrize("method", ["em", "squarem", "lbfgs", "gradient-em", "gd", "adam"])
@pytest.mark.parametrize("expert", ["linear", "logistic"])
@pytest.mark.parametrize("weighted", [False, True])
def test_objective_is_the_likelihood_of_the_attributes(method, expert, weighted):
    """objective_ is what a user recomputes from gate_coef_, gate_intercept_, coef_,
    intercept_ and noise_variance_ by the documented formula (weights with zeros, y in large
    units, three classes)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 3))
    z = rng.random(150) < 0.5
    if expert == "linear":
        y = 1e4 * (np.where(z, X @ [1.0, -2, 0.5], X @ [-1, 0.5, 2]) + 0.3 * rng.normal(size=150))
    else:
        y = np.digitize(X[:, 0] * np.where(z, 1, -1) + 0.3 * rng.normal(size=150), [-0.5, 0.5])
    sw = None
    if weighted:
        sw = rng.uniform(0, 3, 150)
        sw[:20] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MixtureOfExperts(n_components=3, expert=expert, solver=method, alpha=1e-3, max_iter=30,
                             random_state=0).fit(X, y, sample_weight=sw)
    assert m.objective_ == pytest.approx(_objective_from_attributes(m, X, y, sw, 1e-3),
                                         rel=1e-9)


def test_predict_log_proba_is_the_log_of_predict_proba_in_log_space():
    """Logistic experts: exp(predict_log_proba) is predict_proba, and far-out rows whose small
    probabilities round to 0 keep finite logs; linear experts have no such method."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=200), [-0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MixtureOfExperts(expert="logistic", random_state=0).fit(X, y)
        regressor = MixtureOfExperts(expert="linear", random_state=0).fit(X, X[:, 0])
    np.testing.assert_allclose(np.exp(m.predict_log_proba(X)), m.predict_proba(X), atol=1e-15)
    far = X[:3] * 1e4
    assert (m.predict_proba(far) == 0).any()
    assert np.isfinite(m.predict_log_proba(far)).all()
    assert not hasattr(regressor, "predict_log_proba")


@pytest.mark.parametrize("params", [{"solver": "em", "m_step": "gd"}, {"solver": "gd"}])
def test_a_step_size_past_every_scale_ends_finite_with_a_warning_and_no_numpy_warning(params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="raise"):
            est = MixtureOfExperts(learning_rate=1e300, **params).fit(X, y)
    assert est.solver_result_.info["diverged"]
    assert np.isfinite(est.predict_proba(X)).all()
    assert [type(w.message) for w in caught] == [ConvergenceWarning], caught
    assert "non-finite" in str(caught[0].message)
