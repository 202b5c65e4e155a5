"""One dialect for the six estimators: the parameter names, defaults, fitted attributes and
warnings a user meets are the same everywhere (docs/estimators.md, "One dialect")."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from zbound import (
    BoundLogisticRegression,
    BoundSGDClassifier,
    ChainCRF,
    GraphCRF,
    LatentLogisticRegression,
    MixtureOfExperts,
)
from zbound.solvers import Result, Trace

ESTIMATORS = [BoundLogisticRegression, BoundSGDClassifier, LatentLogisticRegression,
              MixtureOfExperts, ChainCRF, GraphCRF]
#: old names and the names that replace them (FutureWarning for one release)
RENAMED = {
    BoundSGDClassifier: {"method": ("solver", "spfb", "sbm"),
                         "lr": ("learning_rate", 0.5, 0.25)},
    MixtureOfExperts: {"n_experts": ("n_components", 3, 4), "reg": ("alpha", 1e-3, 1e-2),
                       "method": ("solver", "squarem", "em"),
                       "mstep": ("m_step", "bound", "gd")},
}
#: names the dialect does not use (abbreviations, or a second word for the same concept)
BANNED = {"method", "lr", "n_experts", "reg", "mstep", "step_size", "n_iterations"}
#: every estimator takes these
COMMON = {"solver", "tol", "max_iter", "verbose"}


def _data(cls, seed=0):
    rng = np.random.default_rng(seed)
    if cls is ChainCRF:
        words = ["a", "b", "c", "d"]
        X, y = [], []
        for _ in range(30):
            n = int(rng.integers(2, 6))
            seq = [words[i] for i in rng.integers(0, 4, n)]
            X.append([{"w": w} for w in seq])
            y.append(["V" if w in "ab" else "C" for w in seq])
        return X, y
    if cls is GraphCRF:                  # the same sequences with a skip edge: loopy graphs
        X, y = _data(ChainCRF, seed)
        return [(seq, [(t, t + 1) for t in range(len(seq) - 1)] + [(0, len(seq) - 1)] * (
            len(seq) > 2)) for seq in X], y
    X = rng.standard_normal((120, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")
    return X, y


def _parameters(cls):
    return {n: p for n, p in inspect.signature(cls.__init__).parameters.items() if n != "self"}


def _current(cls):
    """The parameters without the old names kept for one release."""
    return {n: p for n, p in _parameters(cls).items() if n not in RENAMED.get(cls, {})}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_parameter_names(cls):
    names = set(_current(cls))
    assert not names & BANNED, names & BANNED
    assert COMMON <= names, COMMON - names
    params = _parameters(cls)
    if "random_state" in params:
        assert params["random_state"].default is None
    for old in RENAMED.get(cls, {}):
        assert params[old].default == "deprecated"


@pytest.mark.parametrize("cls", [c for c in ESTIMATORS if c is not ChainCRF],
                         ids=lambda c: c.__name__)
def test_fit_takes_sample_weight(cls):
    assert "sample_weight" in inspect.signature(cls.fit).parameters
    X, y = _data(cls)
    w = np.ones(len(y))
    w[:10] = 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = cls(**_quick(cls)).fit(X, y, sample_weight=w)
    assert np.isfinite(est.objective_)


def _quick(cls):
    return {"random_state": 0} if "random_state" in _parameters(cls) else {}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_fitted_attributes(cls):
    X, y = _data(cls)
    est = cls(**_quick(cls)).fit(X, y)
    result = est.solver_result_
    assert isinstance(result, Result) and isinstance(result.trace, Trace)
    assert len(result.trace) >= 1 and result.nit >= 0
    assert isinstance(est.objective_, float) and np.isfinite(est.objective_)
    assert result.fun == pytest.approx(est.objective_, rel=1e-9, abs=1e-12)
    assert result.trace.objective[-1] == pytest.approx(est.objective_, rel=1e-6)
    if cls is BoundLogisticRegression:      # LogisticRegression's form: an array
        assert est.n_iter_.shape == (1,) and est.n_iter_.dtype.kind == "i"
    else:
        assert isinstance(est.n_iter_, int) and est.n_iter_ >= 0
    if hasattr(est, "predict_proba"):
        X1 = X[:7]
        P = est.predict_proba(X1)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(np.exp(est.predict_log_proba(X1)), P, rtol=1e-9)
        assert list(est.classes_[P.argmax(axis=1)]) == list(est.predict(X1))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_convergence_warning_at_the_iteration_limit(cls):
    X, y = _data(cls)
    kw = dict(_quick(cls), max_iter=1)
    if cls is BoundSGDClassifier:           # the full-batch finish has the iteration limit
        kw.update(finish_tol=None, tol=0.0)
    else:
        kw["tol"] = 0.0
    with pytest.warns(ConvergenceWarning, match=cls.__name__):
        est = cls(**kw).fit(X, y)
    assert not est.solver_result_.converged


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_verbose_prints(cls, capsys):
    X, y = _data(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        kw = dict(_quick(cls), verbose=2, max_iter=3)
        if cls is BoundSGDClassifier:
            kw.update(finish_tol=None)
        cls(**kw).fit(X, y)
    assert cls.__name__ in capsys.readouterr().out


@pytest.mark.parametrize("cls", list(RENAMED), ids=lambda c: c.__name__)
def test_old_names_warn_and_work(cls):
    X, y = _data(cls)
    for old, (new, value, other) in RENAMED[cls].items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            with pytest.warns(FutureWarning, match=f"'{old}' is named '{new}'"):
                by_old = cls(random_state=0, **{old: value}).fit(X, y)
            warnings.simplefilter("error", FutureWarning)
            by_new = cls(random_state=0, **{new: value}).fit(X, y)
        assert by_old.objective_ == pytest.approx(by_new.objective_, rel=1e-12)
        with pytest.raises(ValueError, match="same parameter"):
            cls(**{old: value, new: other}).fit(X, y)


@pytest.mark.parametrize("cls, old, read_new", [
    (BoundSGDClassifier, "method_", lambda e: e.solver_),
    (BoundSGDClassifier, "finish_result_", lambda e: e.solver_result_),
    (MixtureOfExperts, "method_", lambda e: e.solver_),
    (MixtureOfExperts, "collapsed_experts_", lambda e: e.collapsed_components_),
    (MixtureOfExperts, "objective_curve_", lambda e: e.solver_result_.trace.objective),
    (ChainCRF, "status_", lambda e: e.solver_result_.status),
    (ChainCRF, "history_", lambda e: list(e.solver_result_.trace.objective[1:])),
], ids=lambda v: v if isinstance(v, str) else getattr(v, "__name__", ""))
def test_old_attribute_names_warn_and_read_the_new(cls, old, read_new):
    est = cls(**_quick(cls))
    assert not hasattr(est, old)                       # unfitted: no attribute, no warning
    X, y = _data(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    with pytest.warns(FutureWarning, match=f"{old} is named"):
        value = getattr(est, old)
    expected = read_new(est)
    if isinstance(expected, np.ndarray | list):
        np.testing.assert_array_equal(value, expected)
    else:
        assert value is expected or value == expected


@pytest.mark.parametrize("cls", [BoundSGDClassifier, LatentLogisticRegression],
                         ids=lambda c: c.__name__)
def test_warm_start_starts_from_the_fit(cls):
    X, y = _data(cls)
    est = cls(random_state=0, warm_start=True).fit(X, y)
    first = est.objective_
    est.fit(X, y)
    # the second run starts where the first ended: its trace opens at the fitted objective
    assert est.solver_result_.trace.objective[0] == pytest.approx(first, rel=1e-9)
    cold = cls(random_state=0).fit(X, y)
    assert cold.solver_result_.trace.objective[0] > first
