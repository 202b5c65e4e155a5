"""Inputs: sparse matrices, arbitrary labels, binary conventions, sample weights, and the errors
that bad inputs and parameters raise."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

from zbound import BoundLogisticRegression


@pytest.fixture(scope="module")
def iris(dataset):
    return dataset("iris")


# -- sparse input ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_equals_dense(dataset, fmt):
    X, y = dataset("wine")
    Xd = np.where(np.abs(X) < 0.5, 0.0, X)          # about 40% zeros
    Xs = sp.csr_matrix(Xd).asformat(fmt)
    dense = BoundLogisticRegression(tol=1e-10).fit(Xd, y)
    sparse = BoundLogisticRegression(tol=1e-10).fit(Xs, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sparse.predict_proba(Xs), dense.predict_proba(Xd), atol=1e-12)
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(Xd))


def test_sparse_binary_equals_dense(dataset):
    X, y = dataset("breast_cancer")
    Xd = np.where(np.abs(X) < 0.7, 0.0, X)[:200]
    y = y[:200]
    dense = BoundLogisticRegression(tol=1e-10).fit(Xd, y)
    sparse = BoundLogisticRegression(tol=1e-10).fit(sp.csr_array(Xd), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(Xd)),
                               dense.decision_function(Xd), atol=1e-9)


# -- labels and shapes -------------------------------------------------------------------------


def test_string_labels(iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    est = BoundLogisticRegression().fit(X, names)
    ref = BoundLogisticRegression().fit(X, y)
    np.testing.assert_array_equal(est.classes_, ["setosa", "versicolor", "virginica"])
    np.testing.assert_array_equal(est.predict(X), est.classes_[ref.predict(X)])
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X))
    assert est.score(X, names) == ref.score(X, y)


def test_labels_sorted_like_np_unique(iris):
    X, y = iris
    labels = np.array([10, -3, 7])[y]                 # not sorted, negative, gaps
    est = BoundLogisticRegression().fit(X, labels)
    np.testing.assert_array_equal(est.classes_, [-3, 7, 10])
    proba = est.predict_proba(X)
    np.testing.assert_array_equal(est.classes_[proba.argmax(axis=1)], est.predict(X))
    assert est.score(X, labels) > 0.9


@pytest.mark.parametrize("labels", [
    np.array([1, 0, 1, 1]), np.array([0, 2, 1, 2]), np.array([5, 5, 9, 2], dtype=np.uint8),
    np.array([-(2**62), 2**62, 0]), np.array([True, False, True]), np.array([1.5, -2.0, 1.5]),
    np.array([0.0, -0.0, 1.0]), np.array(["b", "a", "b"]), np.array([b"x", b"y"]),
    np.array(["b", "a"], dtype=object), np.array([[1], [0], [1]]), np.array([1, 2, 3])])
def test_label_indices_match_np_unique(labels):
    """The fast label encoding (distinct labels by hashing, then indices by lookup or binary
    search) gives np.unique's classes and inverse, as intp, for every kind of label."""
    from zbound.utils.validation import label_indices

    classes, idx = label_indices(labels)
    want, inverse = np.unique(labels, return_inverse=True)
    np.testing.assert_array_equal(classes, want)
    assert classes.dtype == want.dtype
    np.testing.assert_array_equal(idx, inverse.ravel())
    assert idx.dtype == np.intp and idx.ndim == 1


@pytest.mark.parametrize("labels", [
    np.array([0, 1, 1]), np.array([3, 3, 3], dtype=np.uint8), np.array([True, False]),
    np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.0]), np.array([[0, 1], [1, 0]]),
    np.array(["a", "b"]), np.array([1, "a"], dtype=object), [0, 1, 2], [0.5, 1.5],
    np.array([0.0, np.nan])])
def test_check_class_targets_matches_scikit_learn(labels):
    """The fast path for 1-D integer labels accepts and rejects exactly what
    scikit-learn's check_classification_targets does."""
    from sklearn.utils.multiclass import check_classification_targets

    from zbound.utils.validation import check_class_targets

    try:
        check_classification_targets(labels)
    except ValueError as exc:
        with pytest.raises(ValueError, match=re.escape(str(exc))):
            check_class_targets(labels)
    else:
        check_class_targets(labels)


def _validated_both_ways(X, y, reset, fitted_names=None, n_features=None, **params):
    """(outcome of zbound's validate_data, outcome of scikit-learn's) on fresh estimators
    in the same state: the returned arrays and n_features_in_ / feature_names_in_, or the
    error's type and message, and the warnings' messages. NumPy's RuntimeWarnings are left
    out: scikit-learn's finiteness check warns "invalid value" on +inf beside -inf before its
    own error, which zbound's input contract keeps silent (docs/input-contract.md)."""
    import warnings

    from sklearn.utils.validation import validate_data as sk_validate_data

    from zbound.utils.validation import validate_data

    outcomes = []
    for validate in (validate_data, sk_validate_data):
        est = BoundLogisticRegression()
        if fitted_names is not None:
            est.feature_names_in_ = fitted_names
        if n_features is not None:
            est.n_features_in_ = n_features
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = validate(est, X, y, reset=reset, **params)
            except (TypeError, ValueError) as exc:
                out = (type(exc), str(exc))
            else:
                out = out if isinstance(out, tuple) else (out,)
                out = tuple(np.asarray(a) if not sp.issparse(a) else a.toarray() for a in out)
        outcomes.append((out, getattr(est, "n_features_in_", None),
                         getattr(est, "feature_names_in_", None),
                         [str(w.message) for w in caught
                          if not issubclass(w.category, RuntimeWarning)]))
    return outcomes


def _assert_same_outcome(a, b):
    (out_a, n_a, names_a, warn_a), (out_b, n_b, names_b, warn_b) = a, b
    assert n_a == n_b and warn_a == warn_b
    assert (names_a is None) == (names_b is None)
    if names_a is not None:
        np.testing.assert_array_equal(names_a, names_b)
    assert len(out_a) == len(out_b)
    for u, v in zip(out_a, out_b, strict=True):
        if isinstance(u, type) or isinstance(u, str):
            assert u == v
        else:
            assert u.dtype == v.dtype and u.shape == v.shape
            np.testing.assert_array_equal(u, v)


_X = np.random.default_rng(0).standard_normal((6, 3))


@pytest.mark.parametrize("X", [
    _X, np.asfortranarray(_X), _X[:, :2], _X[::2], _X.astype(np.float32), _X.astype(int),
    _X.tolist(), np.where(_X > 1, np.nan, _X), np.where(_X > 1, np.inf, _X),
    np.full((6, 3), 1e308), np.empty((0, 3)), np.empty((6, 0)), _X[:, 0], _X[:1],
    sp.csr_matrix(_X), _X.astype(complex)], ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("y", [
    np.arange(6) % 2, (np.arange(6) % 2).astype(bool), np.arange(6) % 3 * 0.5,
    np.array([0.0, 1, 0, 1, 0, np.nan]), np.arange(5) % 2, (np.arange(6) % 2)[:, None],
    np.array(list("abcabc")), [0, 1, 0, 1, 0, 1], None, "no_validation"],
    ids=lambda a: f"{type(a).__name__}-{getattr(a, 'dtype', '')}")
@pytest.mark.parametrize("reset", [True, False])
@pytest.mark.parametrize("params", [
    {"accept_sparse": "csr", "dtype": np.float64, "order": "C"}, {"dtype": np.float64},
    {"dtype": np.float64, "y_numeric": True}, {"dtype": np.float64, "order": "F"}])
def test_validate_data_matches_scikit_learn(X, y, reset, params):
    """The fast path of validate_data returns, sets, warns and raises exactly what
    scikit-learn's validate_data does, on plain, converted, bad and empty inputs."""
    _assert_same_outcome(*_validated_both_ways(X, y, reset, **params))
    # a fitted estimator: with the same and another width, and fitted with feature names
    _assert_same_outcome(*_validated_both_ways(X, y, reset, n_features=3, **params))
    _assert_same_outcome(*_validated_both_ways(X, y, reset, n_features=4, **params))
    _assert_same_outcome(*_validated_both_ways(
        X, y, reset, fitted_names=np.array(["a", "b", "c"], dtype=object), n_features=3,
        **params))


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 4),
       values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64),
                       min_size=20, max_size=20),
       labels=st.lists(st.integers(-2, 2), min_size=5, max_size=5))
def test_validate_data_matches_scikit_learn_on_any_floats(rows, cols, values, labels):
    """Any float64 entries, huge, tiny, NaN and inf among them: the same outcome."""
    X = np.array(values[:rows * cols]).reshape(rows, cols)
    y = np.array(labels[:rows])
    params = {"accept_sparse": "csr", "dtype": np.float64, "order": "C"}
    _assert_same_outcome(*_validated_both_ways(X, y, True, **params))
    _assert_same_outcome(*_validated_both_ways(X, None, False, n_features=cols, **params))


def test_scaling_hint_names_columns_far_from_standardized():
    """The hint a convergence warning carries: empty for standardized, sparse or non-NumPy
    X, a sentence naming the columns' root mean squares and StandardScaler for raw ones
    (all-zero columns left out)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from zbound.utils.validation import scaling_hint

    X, _ = load_breast_cancer(return_X_y=True)
    hint = scaling_hint(X)
    assert "StandardScaler" in hint and "far from standardized" in hint
    assert f"{float(np.sqrt((X ** 2).mean(axis=0)).max()):.3g}" in hint
    Z = StandardScaler().fit_transform(X)
    assert scaling_hint(Z) == ""
    assert scaling_hint(np.column_stack([Z, np.zeros(len(Z))])) == ""     # a zero column
    assert scaling_hint(np.column_stack([Z, 50.0 * Z[:, 0]])) != ""       # one large column
    assert scaling_hint(np.column_stack([Z, 0.01 * Z[:, 0]])) != ""       # one tiny column
    assert scaling_hint(sp.csr_matrix(X)) == "" and scaling_hint(X.tolist()) == ""
    assert scaling_hint(np.empty((0, 3))) == ""
    # weighted: rows of weight 0 do not count (a column large only there is not large)
    W = np.column_stack([Z, Z[:, 0]])
    W[:10, -1] = 1e4
    w = np.ones(len(W))
    w[:10] = 0.0
    assert scaling_hint(W) != "" and scaling_hint(W, w) == ""


@pytest.mark.filterwarnings("ignore::zbound.estimators.latent.CollapsedComponentWarning")
def test_latent_convergence_warning_on_raw_columns_says_to_standardize():
    """Raw breast_cancer (columns from 0.003 to 800): the latent model's L-BFGS ran out of
    iterations; the warning says why and what helps. Standardized, it converges."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from zbound import LatentLogisticRegression

    X, y = load_breast_cancer(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="StandardScaler"):
        LatentLogisticRegression(random_state=0, max_iter=100).fit(X, y)
    est = LatentLogisticRegression(random_state=0).fit(StandardScaler().fit_transform(X), y)
    assert est.converged_


def test_object_labels(iris):
    X, y = iris
    labels = np.array(["a", "b", "c"], dtype=object)[y]
    est = BoundLogisticRegression().fit(X, labels)
    assert est.classes_.dtype == object
    assert est.predict(X).dtype == object
    assert set(est.predict(X)) <= {"a", "b", "c"}
    lists = BoundLogisticRegression().fit(X, labels.tolist())
    np.testing.assert_array_equal(lists.predict(X), est.predict(X))


def test_binary_conventions(dataset):
    X, y = dataset("breast_cancer")
    labels = np.where(y == 1, "benign", "malignant")
    est = BoundLogisticRegression().fit(X, labels)
    assert est.coef_.shape == (1, X.shape[1])
    assert est.intercept_.shape == (1,)
    df = est.decision_function(X)
    assert df.shape == (X.shape[0],)
    proba = est.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # decision_function is the log-odds of classes_[1], also where a probability underflows
    logp = est.predict_log_proba(X)
    assert np.isfinite(logp).all()
    np.testing.assert_allclose(df, logp[:, 1] - logp[:, 0], rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(est.predict(X), est.classes_[(df > 0).astype(int)])
    np.testing.assert_allclose(np.exp(logp), proba, rtol=1e-12, atol=1e-300)


def test_multiclass_shapes_and_log_proba(iris):
    X, y = iris
    est = BoundLogisticRegression().fit(X, y)
    assert est.coef_.shape == (3, 4)
    assert est.intercept_.shape == (3,)
    assert est.decision_function(X).shape == (150, 3)
    assert est.n_features_in_ == 4
    assert est.n_iter_.shape == (1,) and est.n_iter_[0] == est.solver_result_.nit
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), est.predict_proba(X),
                               rtol=1e-12)


def test_log_proba_finite_for_confident_predictions(iris):
    X, y = iris
    est = BoundLogisticRegression(C=1e4).fit(X, y)
    logp = est.predict_log_proba(100 * X)
    assert np.isfinite(logp).all()


def test_feature_names_in():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]})
    est = BoundLogisticRegression().fit(X, [0, 0, 1, 1])
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b"])


def test_no_feature_names_for_arrays(iris):
    X, y = iris
    assert not hasattr(BoundLogisticRegression().fit(X, y), "feature_names_in_")


# -- sample weights ----------------------------------------------------------------------------


def test_zero_weight_equals_removal(iris):
    X, y = iris
    sw = np.ones(len(y))
    sw[::3] = 0.0
    a = BoundLogisticRegression(tol=1e-10).fit(X, y, sample_weight=sw)
    b = BoundLogisticRegression(tol=1e-10).fit(X[sw > 0], y[sw > 0])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)


def test_sample_weight_binary_matches_sklearn(dataset):
    X, y = dataset("breast_cancer")
    sw = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    sk = LogisticRegression(tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=sw)
    zb = BoundLogisticRegression(tol=1e-10).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(zb.coef_, sk.coef_, atol=1e-5)


# -- convergence and verbosity -----------------------------------------------------------------


def test_convergence_warning_when_max_iter_hit(dataset):
    X, y = dataset("wine")
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        est = BoundLogisticRegression(C=10.0, solver="bound", max_iter=2).fit(X, y)
    assert not est.solver_result_.converged
    assert est.n_iter_[0] == 2


def test_no_warning_when_converged(iris, recwarn):
    X, y = iris
    BoundLogisticRegression().fit(X, y)
    assert not [w for w in recwarn if issubclass(w.category, ConvergenceWarning)]


def test_verbose_prints(iris, capsys):
    X, y = iris
    BoundLogisticRegression(verbose=2).fit(X, y)
    out = capsys.readouterr().out
    assert "iter 1: objective" in out and "Result(method=" in out


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_X_rejected(iris, bad):
    X, y = iris
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="(?i)nan|inf"):
        BoundLogisticRegression().fit(X, y)


def test_non_finite_sparse_X_rejected(iris):
    X, y = iris
    Xs = sp.csr_matrix(X)
    Xs.data[5] = np.nan
    with pytest.raises(ValueError, match="(?i)nan"):
        BoundLogisticRegression().fit(Xs, y)


def test_non_finite_X_rejected_at_predict(iris):
    X, y = iris
    est = BoundLogisticRegression().fit(X, y)
    Xp = X[:5].copy()
    Xp[0, 0] = np.nan
    with pytest.raises(ValueError, match="(?i)nan"):
        est.predict(Xp)


def test_shape_mismatch_X_y(iris):
    X, y = iris
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        BoundLogisticRegression().fit(X, y[:-1])


def test_wrong_n_features_at_predict(iris):
    X, y = iris
    est = BoundLogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        est.predict(X[:, :3])


def test_single_class_rejected(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="at least 2 classes.*1 class"):
        BoundLogisticRegression().fit(X, np.zeros(len(X), dtype=int))


def test_single_class_after_weights_rejected(iris):
    X, y = iris
    with pytest.raises(ValueError, match="at least 2 classes with positive sample_weight"):
        BoundLogisticRegression().fit(X, y, sample_weight=(y == 2).astype(float))


def test_empty_data_rejected():
    with pytest.raises(ValueError, match="0 sample"):
        BoundLogisticRegression().fit(np.empty((0, 3)), np.empty(0))


def test_no_features_rejected():
    with pytest.raises(ValueError, match="0 feature"):
        BoundLogisticRegression().fit(np.empty((4, 0)), [0, 1, 0, 1])


def test_continuous_targets_rejected(iris):
    X, _ = iris
    with pytest.raises(ValueError, match="Unknown label type"):
        BoundLogisticRegression().fit(X, np.linspace(0, 1, len(X)))


def test_bad_sample_weight(iris):
    X, y = iris
    with pytest.raises(ValueError, match="shape"):
        BoundLogisticRegression().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        BoundLogisticRegression().fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="NaN or inf"):
        BoundLogisticRegression().fit(X, y, sample_weight=np.full(len(y), np.nan))


def test_unknown_solver(iris):
    X, y = iris
    with pytest.raises(ValueError, match="'solver' parameter .*'newton-bound'.*Got 'liblinear'"):
        BoundLogisticRegression(solver="liblinear").fit(X, y)


@pytest.mark.parametrize("C", [0, -1.0, np.nan, np.inf, "1", None, True, 5e-324, 1e-101])
def test_bad_C(iris, C):
    X, y = iris
    with pytest.raises(ValueError, match=r"'C' parameter .* must be a float in the range "
                                         r"\[1e-100, inf\)"):
        BoundLogisticRegression(C=C).fit(X, y)


@pytest.mark.parametrize(("param", "value", "match"), [
    ("tol", -1.0, "'tol' parameter"),
    ("tol", np.nan, "'tol' parameter"),
    ("max_iter", 0, "'max_iter' parameter .* must be an int"),
    ("max_iter", 2.5, "'max_iter' parameter .* must be an int"),
    ("order", "random", "'order' parameter .* must be a str among"),
    ("fit_intercept", "yes", "'fit_intercept' parameter"),
    ("verbose", -1, "'verbose' parameter"),
    ("verbose", "loud", "'verbose' parameter"),
    ("solver", "spfb", "stochastic .*BoundSGDClassifier"),
])
def test_bad_params(iris, param, value, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        BoundLogisticRegression(**{param: value}).fit(X, y)


def test_not_fitted():
    with pytest.raises(NotFittedError):
        BoundLogisticRegression().predict(np.zeros((2, 2)))


def test_unknown_labels_at_score(iris):
    X, y = iris
    est = BoundLogisticRegression().fit(X, np.array(["a", "b", "c"])[y])
    with pytest.raises(ValueError, match="labels not seen during fit: 'd'"):
        est.score(X[:3], ["a", "b", "d"])
    # integers are not silently matched to string labels
    with pytest.raises(ValueError, match="labels not seen during fit: 0, 1"):
        est.score(X[:2], [0, 1])


def test_params_untouched_by_fit(iris):
    X, y = iris
    bounds = (np.zeros((3, 4)), None)
    est = BoundLogisticRegression(coef_bounds=bounds)
    est.fit(X, y)
    assert est.coef_bounds is bounds
    assert est.get_params()["solver"] == "auto"


def test_verbose_one_prints_summary_only(iris, capsys):
    X, y = iris
    BoundLogisticRegression(verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "Result(method='" in out and "iter 1" not in out


def test_works_in_pipeline_and_cross_validation(dataset):
    from sklearn.model_selection import GridSearchCV, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = dataset("wine")
    pipe = make_pipeline(StandardScaler(), BoundLogisticRegression())
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.9
    search = GridSearchCV(BoundLogisticRegression(), {"C": [0.01, 1.0]}, cv=3).fit(X, y)
    assert search.best_params_["C"] in (0.01, 1.0)


def test_stochastic_solver_points_to_the_sgd_estimator():
    import numpy as np

    from zbound import BoundLogisticRegression

    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="stochastic.*BoundSGDClassifier"):
        BoundLogisticRegression(solver="spfb").fit(X, y)


def test_precision_needs_a_method_that_evaluates_in_float32(iris):
    """precision='mixed' goes with the registered methods that take ``evaluation``; any other
    method is refused, naming them."""
    X, y = iris
    with pytest.raises(ValueError, match=r"needs an L-BFGS solver "
                                         r"\(lbfgs-bound, lbfgs-newton, lbfgs-precond\)"):
        BoundLogisticRegression(solver="newton-bound", precision="mixed").fit(X, y)
    est = BoundLogisticRegression(solver="lbfgs-bound", precision="mixed", tol=1e-8).fit(X, y)
    ref = BoundLogisticRegression(solver="newton-bound", tol=1e-10).fit(X, y)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-7)
