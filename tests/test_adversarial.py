"""The input contract (docs/input-contract.md), driven by generated bad and extreme input.

Every public entry point answers any input in one of two ways: a ``ValueError`` / ``TypeError``
whose message names the problem, or a finite result reached without a NumPy floating-point
warning (overflow, invalid, divide by zero; underflow to zero is not an error). A value called
a bound is never below the enumerated log Z. Each property runs a few dozen draws in the
default lane and many more in the slow one.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from zbound import (
    BoundLogisticRegression,
    BoundSGDClassifier,
    ChainCRF,
    GraphCRF,
    IsingModel,
    LatentLogisticRegression,
    MixtureOfExperts,
    multinomial_bound,
    quadratic_bound,
)
from zbound.bounds.junction import chain_bound
from zbound.datasets import fetch, make_multinomial

FAST = dict(max_examples=40, deadline=None, derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
THOROUGH = dict(FAST, max_examples=300)

# a fit stopped by a small max_iter, or a mixture component left empty, warns as it should;
# those warnings are the model's, not the input contract's
pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning", "ignore:.*collapsed:UserWarning")


def both_lanes(strategy_kwargs):
    """A property as two tests: a few draws in the default lane, many more in the slow one."""
    def wrap(body):
        fast = settings(**FAST)(given(**strategy_kwargs)(body))
        slow = pytest.mark.slow(settings(**THOROUGH)(given(**strategy_kwargs)(body)))
        return fast, slow
    return wrap


class Refused(Exception):
    """The call raised a ValueError or TypeError (held in ``error``)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def answer(call):
    """The result of ``call()`` under the contract: NumPy floating-point warnings and
    RuntimeWarnings are errors (the test fails), a ValueError / TypeError comes back as
    :class:`Refused` after checking that it says something; anything else propagates."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(all="raise", under="ignore"):
            try:
                return call()
            except (ValueError, TypeError) as exc:
                assert len(str(exc)) > 10, f"an error that says nothing: {exc!r}"
                return Refused(exc)


def finite(*arrays) -> bool:
    return all(np.all(np.isfinite(np.asarray(a, dtype=np.float64))) for a in arrays)


# -- data ---------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
X_BASE = RNG.normal(size=(48, 3))
Y2 = (X_BASE[:, 0] + 0.5 * RNG.normal(size=48) > 0).astype(int)
Y3 = np.digitize(X_BASE[:, 0] + 0.3 * RNG.normal(size=48), [-0.5, 0.5])
Y_REAL = X_BASE @ [1.0, -2.0, 0.5] + 0.1 * RNG.normal(size=48)
SEQS = [X_BASE[i:i + 6] for i in range(0, 48, 6)]
TAGS = [list(Y2[i:i + 6]) for i in range(0, 48, 6)]
#: the same sequences as loopy graphs: the chain and an edge from the first node to the last
GRAPHS = [(s, [(t, t + 1) for t in range(5)] + [(0, 5)]) for s in SEQS]

#: the ends of float64 and of the ranges the checks draw
ENDS = [0.0, -0.0, 5e-324, 2.2e-308, 1e-300, 1e-150, 1e-101, 1e-100, 1e-50, 1e6, 1e50, 1e100,
        1.01e100, 1e150, 1e300, 1.7976931348623157e308, -1.0, np.inf, np.nan]
#: floats a parameter may be given: anything, the ends of float64 weighted in
EXTREME = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(ENDS),
    st.integers(-3, 3).map(lambda k: 10.0 ** k))

CLASSIFIERS = {
    "BoundLogisticRegression": lambda **kw: BoundLogisticRegression(max_iter=50, **kw),
    "BoundSGDClassifier": lambda **kw: BoundSGDClassifier(max_iter=5, random_state=0, **kw),
    "LatentLogisticRegression": lambda **kw: LatentLogisticRegression(max_iter=20,
                                                                      random_state=0, **kw),
    "MixtureOfExperts": lambda **kw: MixtureOfExperts(expert="logistic", max_iter=15,
                                                      random_state=0, **kw),
}
REGRESSOR = lambda **kw: MixtureOfExperts(expert="linear", max_iter=15, random_state=0, **kw)

#: (make an estimator with the parameter set to v, regression?) for every numeric parameter
PARAMETERS = {
    "BLR C": (lambda v: CLASSIFIERS["BoundLogisticRegression"](C=v), False),
    "BLR tol": (lambda v: CLASSIFIERS["BoundLogisticRegression"](tol=v), False),
    "BLR coef lower": (lambda v: CLASSIFIERS["BoundLogisticRegression"](
        coef_bounds=(v, None)), False),
    "BLR coef upper": (lambda v: CLASSIFIERS["BoundLogisticRegression"](
        coef_bounds=(None, v)), False),
    "BLR intercept box": (lambda v: CLASSIFIERS["BoundLogisticRegression"](
        intercept_bounds=(-abs(v) if v == v else v, abs(v) if v == v else v)), False),
    "BLR class_weight": (lambda v: CLASSIFIERS["BoundLogisticRegression"](
        class_weight={0: v}), False),
    "SGD alpha": (lambda v: CLASSIFIERS["BoundSGDClassifier"](alpha=v), False),
    "SGD lr": (lambda v: CLASSIFIERS["BoundSGDClassifier"](lr=v), False),
    "SGD decay": (lambda v: CLASSIFIERS["BoundSGDClassifier"](decay=v), False),
    "SGD tol": (lambda v: CLASSIFIERS["BoundSGDClassifier"](tol=v), False),
    "SGD finish_tol": (lambda v: CLASSIFIERS["BoundSGDClassifier"](finish_tol=v), False),
    "latent C": (lambda v: CLASSIFIERS["LatentLogisticRegression"](C=v), False),
    "latent tol": (lambda v: CLASSIFIERS["LatentLogisticRegression"](tol=v), False),
    "latent init_scale": (lambda v: CLASSIFIERS["LatentLogisticRegression"](
        init_scale=v), False),
    "mixture reg": (lambda v: CLASSIFIERS["MixtureOfExperts"](reg=v), False),
    "mixture init_scale": (lambda v: CLASSIFIERS["MixtureOfExperts"](init_scale=v), False),
    "mixture learning_rate": (lambda v: CLASSIFIERS["MixtureOfExperts"](
        method="gd", learning_rate=v), False),
    "mixture tol": (lambda v: CLASSIFIERS["MixtureOfExperts"](method="em", tol=v), False),
    "regression reg": (lambda v: REGRESSOR(reg=v), True),
    "regression noise": (lambda v: REGRESSOR(noise=v), True),
    "regression init_scale": (lambda v: REGRESSOR(init_scale=v), True),
    "regression learning_rate": (lambda v: REGRESSOR(method="gradient-em",
                                                     learning_rate=(v, 1.0)), True),
    "crf c2": (lambda v: ChainCRF(c2=v, max_iter=10), "sequences"),
    "crf c2 bound": (lambda v: ChainCRF(c2=v, solver="bound", max_iter=5), "sequences"),
    "crf learning_rate": (lambda v: ChainCRF(solver="adagrad", learning_rate=v, max_iter=3),
                          "sequences"),
    "crf tol": (lambda v: ChainCRF(tol=v, max_iter=10), "sequences"),
    "graphcrf c2": (lambda v: GraphCRF(c2=v, max_iter=10), "graphs"),
    "graphcrf c2 bound": (lambda v: GraphCRF(c2=v, solver="bound", max_iter=5), "graphs"),
    "graphcrf learning_rate": (lambda v: GraphCRF(solver="adagrad", learning_rate=v,
                                                  max_iter=3), "graphs"),
    "graphcrf tol": (lambda v: GraphCRF(tol=v, max_iter=10), "graphs"),
}


def check_fitted(est, X, regression: bool):
    """A fitted estimator's results are finite and mean what they say."""
    for name in ("objective_", "coef_", "intercept_", "noise_variance_", "gate_coef_"):
        if hasattr(est, name):
            assert finite(getattr(est, name)), f"{name} is not finite"
    if regression:
        assert finite(est.predict(X))
        return
    P = est.predict_proba(X)
    assert finite(P) and np.allclose(P.sum(axis=1), 1.0) and (P >= 0).all()
    assert set(np.unique(est.predict(X))) <= set(est.classes_.tolist())


def check_refusal_names_the_problem(refused: Refused, X) -> None:
    """A refusal does not blame X for NaN or inf when X has none."""
    if finite(X):
        assert "nan or inf" not in str(refused).lower() or "x contains" not in \
            str(refused).lower(), f"a finite X called non-finite: {refused}"


# -- estimators: parameters at the ends of their range ----------------------------------------


def _check_parameter(which, value):
    make, regression = PARAMETERS[which]
    if regression in ("sequences", "graphs"):
        X = SEQS if regression == "sequences" else GRAPHS
        est = make(value)
        got = answer(lambda: est.fit(X, TAGS))
        if not isinstance(got, Refused):
            assert finite(est.objective_, est.coef_)
            answer(lambda: _check_marginals(est.predict_marginals(X[:2])))
        return
    y = Y_REAL if regression else (Y3 if which.startswith(("BLR", "SGD")) else Y2)
    est = make(value)
    got = answer(lambda: est.fit(X_BASE, y))
    if isinstance(got, Refused):
        check_refusal_names_the_problem(got, X_BASE)
        return
    answer(lambda: check_fitted(est, X_BASE, regression))


test_parameters_at_the_ends_of_their_range, test_parameters_thorough = both_lanes(
    dict(which=st.sampled_from(sorted(PARAMETERS)), value=EXTREME))(_check_parameter)


@pytest.mark.parametrize("which", sorted(PARAMETERS))
def test_every_parameter_at_each_end(which):
    """Each numeric parameter at every value of ``ENDS``, the generated draws aside."""
    for value in ENDS:
        _check_parameter(which, value)


def test_the_examples_of_the_parameter_family():
    """Found on the code before the input contract: inf / nan objectives, a
    FloatingPointError, a finite X called non-finite."""
    for make in (lambda: CLASSIFIERS["BoundLogisticRegression"](coef_bounds=(1e300, None)),
                 lambda: CLASSIFIERS["LatentLogisticRegression"](C=5e-324),
                 lambda: CLASSIFIERS["BoundLogisticRegression"](coef_bounds=(1e6, None)),
                 lambda: REGRESSOR(reg=1.7e308),
                 lambda: CLASSIFIERS["MixtureOfExperts"](init_scale=1e300)):
        got = answer(lambda make=make: make().fit(X_BASE, Y2))
        assert isinstance(got, Refused) or finite(got.objective_)
        if isinstance(got, Refused):
            check_refusal_names_the_problem(got, X_BASE)
    got = answer(lambda: CLASSIFIERS["LatentLogisticRegression"](C=5e-324).fit(X_BASE, Y2))
    assert isinstance(got, Refused) and "'C' parameter" in str(got)
    got = answer(lambda: CLASSIFIERS["BoundLogisticRegression"](
        class_weight={0: 1.7e308, 1: 1.0}).fit(X_BASE, Y2))
    assert isinstance(got, Refused) and "class_weight" in str(got)


# -- estimators: data at the ends of float64 --------------------------------------------------


@both_lanes(dict(which=st.sampled_from(sorted(CLASSIFIERS) + ["regression"]),
                 x_exp=st.integers(-320, 308), column=st.integers(-1, 2),
                 w_exp=st.one_of(st.none(), st.integers(-320, 308)),
                 zeros=st.integers(0, 47)))
def _data(which, x_exp, column, w_exp, zeros):
    X = X_BASE.copy()
    with np.errstate(over="ignore", under="ignore"):
        if column < 0:
            X *= 10.0 ** x_exp
        else:
            X[:, column] *= 10.0 ** x_exp
    regression = which == "regression"
    y = Y_REAL if regression else Y2
    sw = None
    if w_exp is not None:
        with np.errstate(over="ignore", under="ignore"):
            sw = np.linspace(0.5, 2.0, 48) * 10.0 ** w_exp
        sw[:zeros] = 0.0
    est = REGRESSOR() if regression else CLASSIFIERS[which]()
    got = answer(lambda: est.fit(X, y, sample_weight=sw))
    if isinstance(got, Refused):
        check_refusal_names_the_problem(got, X)
        return
    answer(lambda: check_fitted(est, X_BASE, regression))


test_data_at_the_ends_of_float64, test_data_thorough = _data


@both_lanes(dict(which=st.sampled_from(sorted(CLASSIFIERS) + ["regression"]),
                 x_exp=st.integers(-320, 308)))
def _predict(which, x_exp):
    """Predict-time input is checked as fit-time input is: a refusal, or finite answers
    (probabilities that sum to 1)."""
    regression = which == "regression"
    est = (REGRESSOR() if regression else CLASSIFIERS[which]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X_BASE, Y_REAL if regression else Y2)
    with np.errstate(over="ignore", under="ignore"):
        X = X_BASE * 10.0 ** x_exp
    got = answer(lambda: check_fitted(est, X, regression))
    if isinstance(got, Refused):
        check_refusal_names_the_problem(got, X)


test_predict_at_the_ends_of_float64, test_predict_thorough = _predict


# -- the same input, the same answer ------------------------------------------------------------


def _all_classifiers():
    return {name: make() for name, make in CLASSIFIERS.items()}


def test_a_class_with_only_zero_weights_is_kept_by_every_classifier():
    y = np.repeat([0, 1, 2], 16)
    sw = np.where(y == 2, 0.0, 1.0)
    for name, est in _all_classifiers().items():
        got = answer(lambda est=est: est.fit(X_BASE, y, sample_weight=sw))
        assert not isinstance(got, Refused), (name, got)
        assert est.classes_.tolist() == [0, 1, 2], name


def test_one_class_with_positive_weight_is_refused_by_every_classifier():
    y = np.repeat([0, 1], 24)
    for sw, says in ((np.where(y == 1, 0.0, 1.0), "at least 2 classes with positive"),
                     (np.zeros(48), "every sample_weight is zero")):
        for name, est in _all_classifiers().items():
            got = answer(lambda est=est, sw=sw: est.fit(X_BASE, y, sample_weight=sw))
            assert isinstance(got, Refused) and says in str(got), (name, got)


def test_labels_unseen_in_fit_are_refused_by_every_score():
    for name, est in _all_classifiers().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X_BASE, Y2)
        got = answer(lambda est=est: est.score(X_BASE[:4], np.array([0, 1, 7, 7])))
        assert isinstance(got, Refused) and "not seen during fit: 7" in str(got), (name, got)
    crf = ChainCRF(max_iter=3).fit([X_BASE[:5], X_BASE[5:9]], [[0, 1, 0, 1, 1], [1, 0, 0, 1]])
    got = answer(lambda: crf.score([X_BASE[:2]], [[0, 7]]))
    assert isinstance(got, Refused) and "not seen in training" in str(got)


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2", True])
def test_chain_crf_n_jobs_follows_joblib(n_jobs):
    got = answer(lambda: ChainCRF(n_jobs=n_jobs, max_iter=2).fit([X_BASE[:4]], [[0, 1, 0, 1]]))
    assert isinstance(got, Refused) and "n_jobs" in str(got)


# -- the chain CRF at predict time --------------------------------------------------------------

def test_chain_crf_refuses_the_other_kind_of_input_at_predict_time():
    on_matrices = ChainCRF(max_iter=3).fit(SEQS, TAGS)
    dicts = [[{"w=a": 1.0}, {"w=b": 1.0}]]
    on_dicts = ChainCRF(max_iter=3).fit(dicts * 3, [[0, 1]] * 3)
    for est, X in ((on_matrices, dicts), (on_dicts, SEQS[:1])):
        for method in (est.predict, est.predict_marginals):
            got = answer(lambda method=method, X=X: method(X))
            assert isinstance(got, Refused) and "was fitted on" in str(got)


@both_lanes(dict(x_exp=st.integers(-320, 308), graphs=st.booleans()))
def _crf_scale(x_exp, graphs):
    est = (GraphCRF(max_iter=5).fit(GRAPHS, TAGS) if graphs
           else ChainCRF(max_iter=5).fit(SEQS, TAGS))
    with np.errstate(over="ignore", under="ignore"):
        X = [s * 10.0 ** x_exp for s in SEQS[:3]]
    got = answer(lambda: est.predict_marginals([(x, e) for x, (_, e) in zip(X, GRAPHS)]
                                               if graphs else X))
    if isinstance(got, Refused):
        check_refusal_names_the_problem(got, np.vstack(X))
        return
    _check_marginals(got)
    answer(lambda: est.predict([(x, e) for x, (_, e) in zip(X, GRAPHS)] if graphs else X))


def _check_marginals(marginals) -> None:
    for seq in marginals:
        for token in seq:
            p = np.array(list(token.values()))
            assert finite(p) and abs(p.sum() - 1.0) < 1e-9


test_chain_crf_predicts_at_any_scale_or_refuses, test_chain_crf_scale_thorough = _crf_scale


# -- bounds: never below log Z --------------------------------------------------------------

LOG_PRIOR_ENTRY = st.one_of(st.floats(-50, 50), st.just(-np.inf),
                            st.sampled_from([np.nan, np.inf, -1e308, 1e308]))


def _holds(bound_log_z: float, exact: float, scale: float = 0.0) -> bool:
    """bound >= exact up to float64 rounding of the values and of the energies they are
    computed from (``scale``: an Ising model's sum |h| + sum |J|; at eps = 1e16 with h ~ 1e7
    both the exact value and the bound carry errors of 1e-9 in log Z ~ 3e-3)."""
    return bound_log_z >= exact - 1e-9 * max(1.0, abs(exact), scale)


@both_lanes(dict(n=st.integers(1, 5), d=st.integers(1, 3), scale=st.integers(-300, 300),
                 prior=st.one_of(st.none(), st.lists(LOG_PRIOR_ENTRY, min_size=5, max_size=5)),
                 seed=st.integers(0, 2**16)))
def _quadratic(n, d, scale, prior, seed):
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", under="ignore"):
        F = rng.normal(size=(n, d)) * 10.0 ** scale
    theta = rng.normal(size=d)
    lp = None if prior is None else np.array(prior[:n])
    got = answer(lambda: quadratic_bound(F, theta, log_prior=lp))
    if isinstance(got, Refused):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        exact = logsumexp(F @ theta + (0.0 if lp is None else lp))
    assert finite(got.log_z) and _holds(float(got.log_z), float(exact))


test_quadratic_bound_holds_or_refuses, test_quadratic_bound_thorough = _quadratic


@both_lanes(dict(n=st.integers(1, 4), scale=st.integers(-300, 300),
                 prior=st.one_of(st.none(), st.lists(LOG_PRIOR_ENTRY, min_size=4, max_size=4)),
                 seed=st.integers(0, 2**16)))
def _multinomial(n, scale, prior, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3, 2))
    with np.errstate(over="ignore", under="ignore"):
        W = rng.normal(size=(n, 2)) * 10.0 ** scale
    lp = None if prior is None else np.array(prior[:n])
    got = answer(lambda: multinomial_bound(X, W, log_prior=lp))
    if isinstance(got, Refused):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        exact = logsumexp(X @ W.T + (0.0 if lp is None else lp), axis=1)
    assert finite(got.log_z)
    assert all(_holds(float(b), float(e)) for b, e in zip(got.log_z, exact))


test_multinomial_bound_holds_or_refuses, test_multinomial_bound_thorough = _multinomial


@both_lanes(dict(T=st.integers(1, 3), m=st.integers(1, 3), scale=st.integers(-200, 200),
                 node_prior=st.one_of(st.none(), st.lists(LOG_PRIOR_ENTRY, min_size=9,
                                                          max_size=9)),
                 rule=st.sampled_from(["tight", "literal", "shared", "split"]),
                 seed=st.integers(0, 2**16)))
def _chain(T, m, scale, node_prior, rule, seed):
    rng = np.random.default_rng(seed)
    d = 2
    with np.errstate(over="ignore", under="ignore"):
        g = rng.normal(size=(T, m, d)) * 10.0 ** scale
    e = rng.normal(size=(T - 1, m, m, d))
    theta = rng.normal(size=d)
    hg = None if node_prior is None else np.array(node_prior[:T * m]).reshape(T, m)
    got = answer(lambda: chain_bound(g, e, theta, node_log_prior=hg, rule=rule))
    if isinstance(got, Refused):
        return
    terms = []
    with np.errstate(over="ignore", invalid="ignore"):
        for ys in itertools.product(range(m), repeat=T):
            s = sum(g[t, ys[t]] @ theta + (0.0 if hg is None else hg[t, ys[t]])
                    for t in range(T))
            s += sum(e[t - 1, ys[t - 1], ys[t]] @ theta for t in range(1, T))
            terms.append(s)
        exact = float(logsumexp(terms))
    assert finite(got.log_z) and _holds(float(got.log_z), exact)


test_chain_bound_holds_or_refuses, test_chain_bound_thorough = _chain


def test_the_examples_of_the_prior_family():
    """The chain bound took NaN, +inf and all--inf priors and returned a non-finite log Z."""
    g, e, theta = np.ones((2, 2, 1)), np.ones((1, 2, 2, 1)), np.ones(1)
    for prior in (np.full((2, 2), np.nan), np.full((2, 2), np.inf), np.full((2, 2), -np.inf)):
        got = answer(lambda prior=prior: chain_bound(g, e, theta, node_log_prior=prior))
        assert isinstance(got, Refused) and "prior" in str(got)


# -- Ising ------------------------------------------------------------------------------------


@both_lanes(dict(d=st.integers(1, 4), h_exp=st.integers(-300, 300),
                 j_exp=st.integers(-300, 300), epsilon=EXTREME, seed=st.integers(0, 2**16)))
def _ising(d, h_exp, j_exp, epsilon, seed):
    from zbound.ising import greedy_features, log_partition, quantum_bound, trw_bound

    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", under="ignore"):
        h = rng.normal(size=d) * 10.0 ** h_exp
        J = np.triu(rng.normal(size=(d, d)), 1) * 10.0 ** j_exp
    model = answer(lambda: IsingModel(h, J + J.T, epsilon))
    if isinstance(model, Refused):
        return
    exact = answer(lambda: log_partition(model))
    scale = float(np.abs(model.h).sum() + np.abs(np.triu(model.J)).sum())
    for bound in (quantum_bound, trw_bound, lambda m: greedy_features(m, 2)):
        got = answer(lambda bound=bound: bound(model))
        if isinstance(got, Refused) or isinstance(exact, Refused):
            continue
        assert got.bound is None or (finite(got.bound) and _holds(got.bound, exact, scale)), \
            (bound, got.bound, exact)


test_ising_bounds_hold_or_refuse, test_ising_bounds_thorough = _ising


@pytest.mark.parametrize("h_scale, j_scale, epsilon", [
    (1e-200, 1e-200, 1.0), (1e100, 1.0, 1.0), (1.0, 1e100, 1e-50), (1.0, 1.0, 1e250),
    (1.0, 1.0, 0.0), (1e-3, 1e3, 1e-100)])
def test_slower_ising_bounds_hold_or_refuse(h_scale, j_scale, epsilon):
    """The zero-temperature SDP (max f >= Phi_eps at every eps) and metric learning, at a few
    extreme models (they take a tenth of a second to seconds each)."""
    from zbound.ising import log_partition, metric_learning_bound, zero_temperature_bound

    rng = np.random.default_rng(1)
    J = np.triu(rng.normal(size=(3, 3)), 1) * j_scale
    model = IsingModel(rng.normal(size=3) * h_scale, J + J.T, epsilon)
    exact = answer(lambda: log_partition(model))
    calls = [zero_temperature_bound] + ([metric_learning_bound] if epsilon > 0 else [])
    for bound in calls:
        got = answer(lambda bound=bound: bound(model))
        if isinstance(got, Refused) or isinstance(exact, Refused):
            continue
        scale = float(np.abs(model.h).sum() + np.abs(np.triu(model.J)).sum())
        assert got.bound is None or (finite(got.bound) and _holds(got.bound, exact, scale)), \
            (bound.__name__, got.bound, exact)


# -- helpers and the command line ---------------------------------------------------------------


@both_lanes(dict(n_samples=st.one_of(st.integers(-2, 40), EXTREME, st.booleans()),
                 n_classes=st.one_of(st.integers(-1, 5), EXTREME),
                 scale=st.one_of(EXTREME, st.booleans(), st.text(max_size=2))))
def _generator(n_samples, n_classes, scale):
    got = answer(lambda: make_multinomial(n_samples, 3, n_classes, random_state=0,
                                          scale=scale))
    if not isinstance(got, Refused):
        assert finite(got.X, got.meta["proba"]) and got.X.shape == (n_samples, 3)


test_data_generator_answers_any_parameters, test_data_generator_thorough = _generator


@both_lanes(dict(name=st.one_of(st.text(max_size=12), st.sampled_from(["", "Ionosphere",
                                                                        "../adult"]))))
def _fetch_names(name):
    from zbound.datasets.remote import SOURCES

    if name in SOURCES:
        return
    got = answer(lambda: fetch(name))
    assert isinstance(got, Refused) and "unknown benchmark data set" in str(got)


test_fetch_refuses_unknown_names, test_fetch_names_thorough = _fetch_names


@pytest.mark.parametrize("solver", ["nope", "", "clarabel-x", 3])
def test_cvxpy_entry_points_refuse_unknown_solvers(solver):
    from zbound.ising import logdet_bound

    model = IsingModel(np.zeros(2), np.array([[0.0, 0.5], [0.5, 0.0]]))
    got = answer(lambda: logdet_bound(model, solver=solver))
    assert isinstance(got, Refused) or (got.bound is not None and finite(got.bound))


def test_cli_answers_without_a_traceback(tmp_path, capsys):
    from zbound import cli

    blocked = tmp_path / "file"
    blocked.write_text("")
    for argv in (["bench", "no-such-suite", "--out", str(tmp_path)],
                 ["bench", "logreg-small", "--quick", "--out", str(blocked / "sub")],
                 ["demo", "--out", str(blocked / "sub")],
                 ["data", "fetch", "no-such-set", "--dir", str(tmp_path)]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("zbound ") and "Traceback" not in err, (argv, err)

