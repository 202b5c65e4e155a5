"""ChainCRF: input conventions, solvers on the same objective, partial_fit, bad input."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from zbound import ChainCRF


def toy(n=30, seed=0):
    """Labels follow the word's first letter, with a transition pattern."""
    rng = np.random.default_rng(seed)
    words = ["apple", "avocado", "banana", "berry", "cherry", "citrus"]
    X, y = [], []
    for _ in range(n):
        L = int(rng.integers(1, 6))
        seq = [words[i] for i in rng.integers(0, len(words), size=L)]
        X.append(seq)
        y.append([w[0].upper() for w in seq])
    return X, y


def test_raw_tokens_fit_predict():
    X, y = toy()
    crf = ChainCRF(c2=0.01, max_iter=30).fit(X, y)
    assert crf.score(X, y) == 1.0
    pred = crf.predict(X[:3])
    assert [len(p) for p in pred] == [len(s) for s in X[:3]]
    marg = crf.predict_marginals(X[:2])
    for seq in marg:
        for tok in seq:
            assert set(tok) == set(crf.classes_)
            assert sum(tok.values()) == pytest.approx(1.0)


def test_bound_objective_monotone_and_solvers_agree():
    X, y = toy(40, seed=1)
    fits = {s: ChainCRF(c2=0.5, solver=s, max_iter=200, tol=1e-9).fit(X, y)
            for s in ("lbfgs-bound", "lbfgs", "newton-bound")}
    for s in ("lbfgs-bound", "newton-bound"):
        h = fits[s].solver_result_.trace.objective[1:]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(h, h[1:]))       # monotone
        assert fits[s].objective_ == pytest.approx(fits["lbfgs"].objective_, rel=1e-5)
    # plain Alg. 2 with the chain bound: monotone, and it makes progress
    bound = ChainCRF(c2=0.5, solver="bound", max_iter=15, cg_maxiter=20).fit(X, y)
    h = bound.solver_result_.trace.objective[1:]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(h, h[1:]))
    assert h[-1] < 0.5 * h[0]
    sgd = ChainCRF(c2=0.5, solver="adagrad", max_iter=20, random_state=0)
    sgd.fit(X, y)
    assert sgd.objective_ < 1.5 * fits["lbfgs"].objective_


def test_dict_features_and_sparse_inputs_agree():
    X, y = toy(20, seed=2)
    dicts = [[{"w": w, "first": w[0]} for w in s] for s in X]
    a = ChainCRF(c2=0.1, solver="lbfgs").fit(dicts, y)
    vocab = a.index_.vocabulary_
    mats = []
    for s in dicts:
        M = sp.lil_matrix((len(s), len(vocab)))
        for i, tok in enumerate(s):
            for k, v in tok.items():
                M[i, vocab[f"{k}={v}"]] = 1.0
        mats.append(M.tocsr())
    b = ChainCRF(c2=0.1, solver="lbfgs").fit(mats, y)
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-6)
    assert b.predict(mats) == a.predict(dicts)
    dense = [M.toarray() for M in mats]           # dense feature matrices: the same model
    c = ChainCRF(c2=0.1, solver="lbfgs").fit(dense, y)
    assert c.objective_ == pytest.approx(b.objective_, rel=1e-12)
    assert c.predict(dense) == b.predict(mats)
    with pytest.raises(ValueError, match="differ in width"):
        ChainCRF().fit([dense[0], dense[1][:, :-1]], y[:2])


def test_partial_fit_generator():
    X, y = toy(60, seed=3)

    def batches():
        for s in range(0, 60, 10):
            yield X[s:s + 10], y[s:s + 10]

    crf = ChainCRF(c2=0.1, n_samples_hint=60)
    for _ in range(3):
        for Xb, yb in batches():
            crf.partial_fit(iter(Xb), iter(yb), classes=["A", "B", "C"])
    assert crf.score(X, y) > 0.9


def test_bad_input():
    X, y = toy(5)
    with pytest.raises(ValueError, match="empty"):
        ChainCRF().fit(X + [[]], y + [[]])
    with pytest.raises(ValueError, match="tokens but"):
        ChainCRF().fit(X, [s[:-1] + s[-1:] * 2 for s in y])
    with pytest.raises(ValueError, match="non-finite|NaN"):
        ChainCRF().fit([[{"x": float("nan")}]], [["A"]])
    # values whose sums over the tokens overflow: an error, not a fit with overflow warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="magnitude"):
            ChainCRF().fit([[{"w": w, "x": 1e200} for w in s] for s in X], y)
    crf = ChainCRF(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="not seen"):
        crf.score(X, [["Z"] * len(s) for s in X])
    with pytest.raises(ValueError, match="c2"):
        ChainCRF(c2=-1).fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        ChainCRF().partial_fit(X, y)
    with pytest.raises(ValueError, match="sequences but"):
        ChainCRF().fit(X, y[:-1])


def test_public_featurizer_and_objective_are_what_the_estimator_fits():
    """featurize + encode_labels + chain_crf_objective give the objective ChainCRF minimizes:
    its value at coef_ is objective_, its gradient there ~0; setting coef_ moves predict."""
    from zbound.models.crf import chain_crf_objective
    from zbound.structured import encode_labels, featurize

    X, y = toy(40, seed=3)
    crf = ChainCRF(c2=0.3, tol=1e-10, max_iter=500).fit(X, y)
    M, lengths, index = featurize(X, None, grow=True)
    yi, classes = encode_labels(y, lengths)
    assert list(classes) == list(crf.classes_)
    assert index.vocabulary_ == crf.index_.vocabulary_
    obj = chain_crf_objective(M, lengths, yi, len(classes), c2=0.3)
    f, g = obj.value_and_grad(crf.coef_)
    assert f == pytest.approx(crf.objective_, rel=1e-12)
    assert np.max(np.abs(g)) <= 1e-6 * max(1.0, abs(f))
    twin = ChainCRF(c2=0.3)
    twin.index_, twin.classes_, twin.n_features_in_ = index, classes, M.shape[1]
    twin.coef_ = crf.coef_
    assert twin.predict(X) == crf.predict(X)
    twin.coef_ = np.zeros_like(crf.coef_)          # all scores 0: ties go to the first label
    assert all(set(p) == {classes[0]} for p in twin.predict(X))
    with pytest.raises(ValueError, match="was not seen in training"):
        encode_labels([["Z"]], np.array([1]), classes)
    with pytest.raises(ValueError, match="3 tokens but 2 labels"):
        encode_labels([["A", "B"]], np.array([3]))


def test_solver_choices_come_from_the_registry_and_sgd_is_adagrad():
    """Any registered batch method for a generic objective fits the chain CRF to the same
    optimum; "sgd" (the former name of "adagrad") still runs, with a FutureWarning."""
    X, y = toy(30, seed=4)
    ref = ChainCRF(c2=0.5, solver="newton-bound", tol=1e-10, max_iter=300).fit(X, y)
    sq = ChainCRF(c2=0.5, solver="squarem", tol=1e-9, max_iter=5000).fit(X, y)
    assert sq.objective_ == pytest.approx(ref.objective_, rel=1e-7)
    with pytest.raises(ValueError, match="'solver' parameter of ChainCRF"):
        ChainCRF(solver="sample-newton").fit(X, y)
    new = ChainCRF(c2=0.5, solver="adagrad", max_iter=5, random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="is named 'adagrad'"):
        old = ChainCRF(c2=0.5, solver="sgd", max_iter=5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(old.coef_, new.coef_)


def test_adagrad_fit_and_stream_take_the_registered_methods_steps():
    """fit(solver="adagrad") and partial_fit run the registered "adagrad" method: one epoch of
    fit is the registered solver's epoch on the same objective, and partial_fit of the corpus
    in that epoch's order in one chunk (sample count hinted) takes the same steps (its summed
    batch form and the solver's mean form are the same AdaGrad steps); the squared-gradient
    sums fit leaves let a stream go on from it."""
    from zbound.models.crf import chain_crf_objective
    from zbound.solvers import minimize

    X, y = toy(24, seed=5)
    fit = ChainCRF(c2=0.5, solver="adagrad", max_iter=1, batch_size=5, learning_rate=0.2,
                   random_state=0).fit(X, y)
    order = np.random.default_rng(0).permutation(len(X))      # the epoch's shuffle
    stream = ChainCRF(c2=0.5, batch_size=5, learning_rate=0.2, n_samples_hint=len(X))
    stream.partial_fit([X[i] for i in order], [y[i] for i in order],
                       classes=list(fit.classes_))
    assert stream.n_updates_ == 5
    assert list(stream.classes_) == list(fit.classes_)
    # the stream met the attributes in another order: compare them by name
    names = sorted(fit.index_.vocabulary_)
    at = [[est.index_.vocabulary_[n] for n in names] for est in (fit, stream)]
    np.testing.assert_allclose(stream.state_weights_[at[1]], fit.state_weights_[at[0]],
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(stream.transitions_, fit.transitions_, rtol=1e-10, atol=1e-12)
    m = len(fit.classes_)
    sums = [est.adagrad_[:-m * m].reshape(-1, m)[i] for est, i in zip((fit, stream), at)]
    np.testing.assert_allclose(sums[1], sums[0], rtol=1e-10, atol=1e-14)
    M, lengths = fit._matrices(X, grow=False)
    obj = chain_crf_objective(M, lengths, fit._labels(y, lengths, grow=False),
                              len(fit.classes_), 0.5)
    res = minimize(obj, np.zeros(obj.n_params), method="adagrad", max_iter=1, batch_size=5,
                   lr=0.2, random_state=np.random.default_rng(0))
    assert res.method == "adagrad" and res.nit == 1 and fit.solver_result_.method == "adagrad"
    np.testing.assert_allclose(res.x, fit.coef_, rtol=1e-12, atol=1e-14)
    assert res.fun == pytest.approx(fit.objective_, rel=1e-12)
    before = fit.n_updates_
    fit.partial_fit(X[:10], y[:10])
    assert fit.n_updates_ == before + 2 and np.all(fit.adagrad_ >= 0)


@pytest.mark.parametrize("where", ["fit", "partial_fit"])
def test_adagrad_steps_that_leave_float64_name_the_learning_rate(where):
    """A step size far too large: a ValueError naming learning_rate, from fit's epochs (the
    registered method's FAILED status) and from partial_fit's updates alike, never a NaN."""
    X, y = toy(12, seed=1)
    est = ChainCRF(c2=0.0, solver="adagrad", learning_rate=1e300, max_iter=3, random_state=0)
    with np.errstate(all="raise"), pytest.raises(ValueError, match="learning_rate=1e"):
        if where == "fit":
            est.fit(X, y)
        else:
            for _ in range(3):
                est.partial_fit(X, y, classes=["A", "B", "C"])


#: scikit-learn's checks that need no data: check_estimator generates 2-D arrays, which the
#: structured estimators do not take (their input is lists of sequences or graphs)
INPUT_FREE_CHECKS = ["check_no_attributes_set_in_init", "check_parameters_default_constructible",
                     "check_get_params_invariance", "check_set_params", "check_estimator_repr",
                     "check_estimator_cloneable", "check_estimator_tags_renamed",
                     "check_valid_tag_types", "check_mixin_order",
                     "check_do_not_raise_errors_in_init_or_set_params"]


@pytest.mark.parametrize("check", INPUT_FREE_CHECKS)
@pytest.mark.parametrize("name", ["ChainCRF", "GraphCRF"])
def test_structured_estimators_pass_the_input_free_sklearn_checks(name, check):
    from sklearn.utils import estimator_checks

    import zbound

    getattr(estimator_checks, check)(name, getattr(zbound, name)())
