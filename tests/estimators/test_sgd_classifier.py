"""BoundSGDClassifier: fit, partial_fit over a stream, bad chunks, the scikit-learn contract."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from zbound import BoundSGDClassifier


def _data(n_classes=3, t=600, seed=0):
    X, y = make_classification(t, 6, n_informative=4, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=seed)
    return X, np.array(["abc"[i] for i in y]) if n_classes <= 3 else y


def _expected(estimator):
    # The low-rank bound depends on the order of its rank-one terms: a weight of 2 and a
    # repeated row stream different terms (the full-curvature methods pass these checks).
    if estimator.solver != "lspfb":
        return {}
    return {"check_sample_weight_equivalence_on_dense_data":
            "mini-batch composition differs between weighted and repeated rows",
            "check_sample_weight_equivalence_on_sparse_data":
            "mini-batch composition differs between weighted and repeated rows"}


# fit runs no epoch by default (the full-batch finish from zero): max_iter=1 puts the
# stochastic steps themselves under the contract too
@parametrize_with_checks([BoundSGDClassifier(),
                          BoundSGDClassifier(solver="spfb", max_iter=1, random_state=0),
                          BoundSGDClassifier(solver="lspfb", rank=2, max_iter=1,
                                             random_state=0)],
                         expected_failed_checks=_expected)
def test_sklearn_contract(estimator, check):
    check(estimator)


def _reference_objective(X, y, alpha, sample_weight=None):
    """J at LogisticRegression's optimum of the same objective (C = 1 / (alpha sum(s)))."""
    total = X.shape[0] if sample_weight is None else float(np.sum(sample_weight))
    ref = LogisticRegression(C=1.0 / (alpha * total), tol=1e-10, max_iter=10000).fit(
        X, y, sample_weight=sample_weight)
    shell = BoundSGDClassifier(alpha=alpha).fit(X[:5], y[:5])   # a fitted shell
    shell.classes_ = ref.classes_
    shell.coef_, shell.intercept_ = ref.coef_, ref.intercept_
    return shell.objective(X, y, sample_weight), ref


@pytest.mark.parametrize("n_classes", [2, 3])
def test_stochastic_epochs_approach_the_batch_optimum(n_classes):
    """alpha = 1 / (C T): the same objective as LogisticRegression(C). The epochs alone
    (finish_tol=None) come within 1%."""
    X, y = _data(n_classes)
    alpha = 1e-2
    est = BoundSGDClassifier(alpha=alpha, batch_size=100, max_iter=30, decay=20.0,
                             finish_tol=None, random_state=0).fit(X, y)
    f_ref, ref = _reference_objective(X, y, alpha)
    result = est.solver_result_               # the epochs: one trace row per epoch, and J
    assert result.method == est.solver_ and result.nit == est.n_epochs_ == len(result.trace) - 1
    assert result.fun == pytest.approx(est.objective_, rel=1e-12)
    assert est.objective_ == pytest.approx(est.objective(X, y))
    assert f_ref <= est.objective_ <= 1.01 * f_ref
    assert (est.predict(X) == ref.predict(X)).mean() > 0.97


@pytest.mark.parametrize("n_classes", [2, 3, 10])
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_finishes_at_the_batch_optimum(n_classes, weighted):
    """The default fit ends where the full-batch solver converges: the optimum of J, to
    LogisticRegression's precision at tol 1e-10, with or without sample weights (weights
    over their sum: scaling them all changes nothing)."""
    if n_classes == 10:
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
    else:
        X, y = _data(n_classes)
    sw = np.random.default_rng(1).uniform(0.0, 3.0, X.shape[0]) if weighted else None
    alpha = 1e-3
    f_ref, _ = _reference_objective(X, y, alpha, sw)
    for finish_tol, rtol in ((1e-4, 1e-4), (1e-9, 1e-9)):
        est = BoundSGDClassifier(alpha=alpha, finish_tol=finish_tol).fit(X, y, sw)
        assert est.solver_result_.converged
        assert est.objective_ == pytest.approx(est.objective(X, y, sw))
        assert f_ref - 1e-9 <= est.objective_ <= f_ref * (1 + rtol)
    if weighted:
        for scale in (7.5, 1e-300, 1e200, 1e307):      # J weighs rows over the weights' sum
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                scaled = BoundSGDClassifier(alpha=alpha, finish_tol=1e-9).fit(X, y, scale * sw)
            assert scaled.objective_ == pytest.approx(est.objective_, rel=1e-9)


def test_partial_fit_on_a_generator_of_chunks_reaches_fit():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    kw = dict(alpha=1e-3, batch_size=200, decay=20.0, random_state=0)
    fitted = BoundSGDClassifier(max_iter=10, tol=None, finish_tol=None, **kw).fit(X, y)

    def chunks(epochs, rng):
        for _ in range(epochs):
            order = rng.permutation(X.shape[0])
            for a in range(0, X.shape[0], 200):
                rows = order[a:a + 200]
                yield X[rows], y[rows]             # only one chunk in memory at a time

    streamed = BoundSGDClassifier(**kw)
    for Xc, yc in chunks(10, np.random.default_rng(1)):
        streamed.partial_fit(Xc, yc, classes=np.arange(10))
    f_fit = fitted.objective(X, y)
    f_stream = streamed.objective(X, y)
    assert abs(f_stream - f_fit) <= 0.01 * f_fit, (f_stream, f_fit)
    assert streamed.t_ == fitted.t_


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("n_chunks", [3, 10])
def test_default_stream_reaches_the_batch_optimum(seed, raw, n_chunks):
    """25 passes over a stream of 3 or 10 chunks at default settings end within 1% of the
    batch optimum, on raw columns (scales 1e-2 to 1e2, offsets up to 50) as on standardized
    ones. On these nearly separable draws a schedule whose half-life was half a chunk left
    the stream 4-18% above the optimum."""
    X, y = make_classification(n_samples=6000, n_features=20, n_informative=10,
                               random_state=seed)
    if raw:
        rng = np.random.default_rng(seed)
        X = X * 10.0 ** rng.uniform(-2, 2, 20) + rng.uniform(-50, 50, 20)
    best = BoundSGDClassifier(finish_tol=1e-8, tol=None).fit(X, y).objective(X, y)
    est = BoundSGDClassifier()
    for _ in range(25):
        for rows in np.array_split(np.arange(6000), n_chunks):
            est.partial_fit(X[rows], y[rows], classes=[0, 1])
    assert est.objective(X, y) <= 1.01 * best, (est.objective(X, y), best)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("chunk", [1, 10, 100])
def test_partial_fit_does_not_depend_on_the_chunk_size(n_classes, chunk):
    """A stream of one-row chunks reaches what 100-row chunks do. Each chunk of fewer than
    PARTIAL_FIT_FULL_ROWS rows takes that fraction of a step and of the schedule, and the
    binary step's curvature is the stream's average bound: with a full step on each row's
    own bound, one-row chunks ended at accuracy 0.70 (binary) where 100-row chunks reach
    0.94."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    s = X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=3000)
    y = (s > 0).astype(int) if n_classes == 2 else np.digitize(s, [-0.7, 0.7])
    best = LogisticRegression(C=1e4).fit(X, y).score(X, y)
    est = BoundSGDClassifier()
    for a in range(0, 3000, chunk):
        est.partial_fit(X[a:a + chunk], y[a:a + chunk], classes=np.arange(n_classes))
    assert est.score(X, y) >= best - 0.025, (est.score(X, y), best)


def _partially_fitted():
    X, y = _data(3)
    est = BoundSGDClassifier(batch_size=50)
    est.partial_fit(X[:100], y[:100], classes=["a", "b", "c"])
    return est, X, y


@pytest.mark.parametrize("bad,match", [
    ("nan", "NaN"),
    ("features", "features"),
    ("empty", "sample"),
    ("label", "not in classes"),
    ("classes", "differ"),
])
def test_bad_chunks_leave_the_model_untouched(bad, match):
    est, X, y = _partially_fitted()
    before = (est.coef_.copy(), est.intercept_.copy(), est.t_)
    Xc, yc, kw = X[100:150].copy(), y[100:150].copy(), {}
    if bad == "nan":
        Xc[3, 2] = np.nan
    elif bad == "features":
        Xc = Xc[:, :4]
    elif bad == "empty":
        Xc, yc = Xc[:0], yc[:0]
    elif bad == "label":
        yc[0] = "z"
    elif bad == "classes":
        kw = {"classes": ["a", "b"]}
    with pytest.raises(ValueError, match=match):
        est.partial_fit(Xc, yc, **kw)
    np.testing.assert_array_equal(est.coef_, before[0])
    np.testing.assert_array_equal(est.intercept_, before[1])
    assert est.t_ == before[2]
    est.partial_fit(X[100:150], y[100:150])          # still usable
    assert est.t_ == before[2] + 1


def test_first_partial_fit_needs_classes():
    X, y = _data(2)
    est = BoundSGDClassifier()
    with pytest.raises(ValueError, match="classes must be passed"):
        est.partial_fit(X, y)
    assert not hasattr(est, "classes_")
    with pytest.raises(ValueError, match="at least 2"):
        est.partial_fit(X, y, classes=["a"])


@pytest.mark.parametrize("bad", [{"alpha": 0}, {"method": "adam"}, {"max_iter": 0},
                                 {"batch_size": 0}, {"tol": -1.0}, {"lr": -1.0},
                                 {"schedule": "cos"}])
def test_bad_parameters(bad):
    X, y = _data(2)
    with pytest.raises(ValueError):
        BoundSGDClassifier(**bad).fit(X, y)


def test_single_class_is_rejected():
    X, _ = _data(2)
    with pytest.raises(ValueError, match="2 classes"):
        BoundSGDClassifier().fit(X, np.zeros(X.shape[0]))


def test_auto_settings_follow_the_shape():
    from zbound.estimators.sgd import auto_batch_size

    X, y = _data(3, t=1347)
    est = BoundSGDClassifier(max_iter=2, random_state=0).fit(X, y)
    assert est.solver_ == "sbm-boehning"
    assert est._sgd_solver.opts["batch_size"] == auto_batch_size(1347) == 135
    assert est._sgd_solver.opts["schedule"] == "constant"
    Xb, yb = _data(2, t=5000)
    two = BoundSGDClassifier(max_iter=2, random_state=0).fit(Xb, yb)
    assert two.solver_ == "spfb" and two._sgd_solver.opts["batch_size"] == 500
    assert two._sgd_solver.opts["schedule"] == "inverse"
    # the schedule's half-life is in epochs: 0.5 epoch = 5 of the 10 updates of an epoch
    assert two._sgd_solver.opts["decay"] == pytest.approx(0.5 * 10)
    # ... and in a stream, 20 chunks (each chunk is one update)
    stream = BoundSGDClassifier().partial_fit(Xb[:500], yb[:500], classes=np.unique(yb))
    assert stream._sgd_solver.opts["decay"] == pytest.approx(20.0)
    assert auto_batch_size(50) == 100 and auto_batch_size(10**6) == 1000


def test_schedule_in_epochs_gives_a_small_data_set_the_same_steps():
    """decay counts epochs: the step after e epochs is the same whatever the batch count."""
    from zbound.solvers import solver_class

    X, y = _data(2, t=600)
    for bs in (100, 300):
        est = BoundSGDClassifier(batch_size=bs, max_iter=1, tol=None, decay=2.0,
                                 random_state=0).fit(X, y)
        solver = est._sgd_solver
        per_epoch = -(-600 // bs)
        # after 4 epochs the step is lr / (1 + 4 / 2) = lr / 3, whatever the batch size
        assert solver.step_size(4 * per_epoch + 1) == pytest.approx(1.0 / 3.0)
        assert isinstance(solver, solver_class("spfb"))


def test_diverging_fit_says_so():
    """Steps far beyond the bound's: without the finish, a warning where the objective ends
    above the zero start's; a ValueError naming lr where it leaves the finite numbers; never
    a silent NaN or a NumPy warning. With the finish (default), the optimum all the same,
    from the zero start where the steps left the finite numbers."""
    from sklearn.exceptions import ConvergenceWarning

    X, y = _data(3)
    with pytest.warns(ConvergenceWarning, match="diverged"):
        BoundSGDClassifier(learning_rate=50.0, solver="sbm-boehning", max_iter=3,
                           finish_tol=None, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="learning_rate=1000000.0 is too large"):
            BoundSGDClassifier(learning_rate=1e6, solver="sbm-boehning", max_iter=50, tol=None,
                               finish_tol=None, random_state=0).fit(X * 1e3, y)
        with pytest.warns(ConvergenceWarning, match="finish starts from zero"):
            est = BoundSGDClassifier(learning_rate=1e6, solver="sbm-boehning", max_iter=50,
                                     tol=None, random_state=0).fit(X * 1e3, y)
    assert est.solver_result_.converged and np.isfinite(est.objective_)
    # the full-batch finish brings diverged epochs back to the optimum (from the zero start)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = BoundSGDClassifier(learning_rate=50.0, solver="sbm-boehning", max_iter=3,
                                 random_state=0).fit(X, y)
    f_ref, _ = _reference_objective(X, y, est.alpha)
    # finish_tol = 1e-3 on the gradient: 3e-5 relative here
    assert est.objective_ == pytest.approx(f_ref, rel=1e-4)


def _wide_sparse(t=300, d=5000, k=2, seed=0):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.random(t, d, density=20 / d, format="csr", random_state=seed)
    W = rng.standard_normal((d, k))
    return X, np.asarray((X @ W).argmax(axis=1)).ravel()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_wide_sparse_data_is_fitted_without_a_dense_gram(n_classes):
    """Wider than KRON_MAX_WIDTH columns: the SPFB step is preconditioned by the diagonal, not
    by a (d, d) Gram factor (30 000 columns segfaulted allocating one), fit reaches the batch
    optimum, and a stream keeps each chunk's own bound."""
    from zbound.estimators.sgd import WIDE_CG_MAXITER
    from zbound.solvers.stochastic import KRON_MAX_WIDTH

    X, y = _wide_sparse(k=n_classes)
    assert X.shape[1] > KRON_MAX_WIDTH
    f_ref, _ = _reference_objective(X, y, 1e-2)
    # one pass of SPFB steps
    est = BoundSGDClassifier(alpha=1e-2, max_iter=1, random_state=0).fit(X, y)
    assert est.solver_ == "spfb" and est.n_epochs_ == 1 and est.t_ > 1
    assert est._sgd_solver.opts["cg_maxiter"] == WIDE_CG_MAXITER
    assert f_ref - 1e-9 <= est.objective_ <= f_ref * (1 + 1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)    # 3 epochs: not settled
        alone = BoundSGDClassifier(alpha=1e-2, finish_tol=None, max_iter=3,
                                   random_state=0).fit(X, y)
    f_zero = np.log(n_classes)                  # J at theta = 0 (uniform probabilities)
    assert f_ref <= alone.objective_ < f_zero - 0.5 * (f_zero - f_ref)
    # max_iter="auto" runs no epoch: the finish from zero (one pass cost more than it)
    auto = BoundSGDClassifier(alpha=1e-2).fit(X, y)
    assert auto.n_epochs_ == 0 and auto.t_ == 0 and auto.solver_result_.converged
    assert auto.n_iter_ == auto.solver_result_.nit >= 1
    assert f_ref - 1e-9 <= auto.objective_ <= f_ref * (1 + 1e-3)      # finish_tol = 1e-3
    stream = BoundSGDClassifier(alpha=1e-2)
    for a in range(0, 300, 50):
        stream.partial_fit(X[a:a + 50], y[a:a + 50], classes=np.arange(n_classes))
    assert stream._sgd_solver.opts["curvature"] == "batch"
    assert np.isfinite(stream.coef_).all() and stream.score(X, y) > 0.6


def test_averaged_kronecker_curvature_on_too_wide_data_is_an_error():
    from zbound.models.multinomial import logistic_objective
    from zbound.solvers import minimize

    X, y = _wide_sparse()
    model = logistic_objective(X, y, 2, np.full(X.shape[1] + 1, 1e-2), None, 0.0,
                               fit_intercept=True)
    with pytest.raises(ValueError, match="Gram factor"):
        minimize(model, np.zeros(X.shape[1] + 1), method="spfb", curvature="average",
                 max_iter=1, batch_size=100)


def test_the_finish_from_zero_by_default():
    """max_iter="auto": no epoch before the full-batch finish (as a warm start one pass never
    paid for itself), 100 without it; max_iter=1 runs the pass, to the same optimum."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    est = BoundSGDClassifier().fit(X, y)
    assert est.n_epochs_ == 0 and est.t_ == 0 and est.solver_result_.converged
    assert est.n_iter_ == est.solver_result_.nit >= 1
    one = BoundSGDClassifier(max_iter=1, random_state=0).fit(X, y)
    assert one.n_epochs_ == 1 and one.n_iter_ == 1 + one.solver_result_.nit
    # the same optimum, each to the finish's tol (a gradient test, finish_tol = 1e-3: 1.1e-3
    # and 1.5e-3 above the optimum with OpenBLAS's AVX-512 and AVX2 kernels, one pass first
    # 5.7e-4 and 1.2e-3; at finish_tol = 1e-4, 4e-6 and 2.2e-5)
    optimum = BoundSGDClassifier(finish_tol=1e-10).fit(X, y).objective_
    for fit in (est, one):
        assert optimum <= fit.objective_ * (1 + 1e-12)
        assert fit.objective_ == pytest.approx(optimum, rel=3e-3)
    tight = BoundSGDClassifier(finish_tol=1e-4).fit(X, y).objective_
    assert optimum <= tight < est.objective_ and tight == pytest.approx(optimum, rel=1e-4)
    alone = BoundSGDClassifier(finish_tol=None).fit(X, y)
    assert 1 < alone.n_iter_ == alone.n_epochs_ < 100 and alone.solver_result_.converged
    assert alone.solver_result_.trace.objective[-1] == pytest.approx(alone.objective_)
    assert est.objective_ < alone.objective_


def test_epochs_cut_by_max_iter_warn_unless_the_finish_converged():
    """As SGDClassifier, epochs stopped by max_iter before tol warn, unless the full-batch
    finish then converged: that fit is converged, and says so."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = BoundSGDClassifier(max_iter=1, random_state=0).fit(X, y)
    assert est.n_epochs_ == 1 and est.solver_result_.converged
    with pytest.warns(ConvergenceWarning, match="max_iter=1 epochs reached"):
        est = BoundSGDClassifier(max_iter=1, finish_tol=None, random_state=0).fit(X, y)
    assert not est.solver_result_.converged
