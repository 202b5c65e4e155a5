"""The input contract at the edges of the structured estimators (ChainCRF, GraphCRF) and of the
label convention every classifier shares.

Families: predict-time input (NaN, inf, shapes, sparse), call sequences (fit, partial_fit,
clone and pickle in any order), graphs at and past the junction-tree budgets (refused before
any table is built, the width and the table size named), node numberings permuted (the same
answer for every numbering) and label types (int, str, bool, float, mixed, NaN: the same
``classes_`` or the same refusal from all six estimators).
"""

from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from zbound import (
    BoundLogisticRegression,
    BoundSGDClassifier,
    ChainCRF,
    GraphCRF,
    LatentLogisticRegression,
    MixtureOfExperts,
)
from zbound.structured.graph import TreewidthError, junction_tree

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

RNG = np.random.default_rng(3)
SEQS = [RNG.normal(size=(5, 3)) for _ in range(6)]
TAGS = [list(RNG.integers(0, 3, 5)) for _ in SEQS]
LOOP = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
GRAPHS = [(s, LOOP, RNG.normal(size=(5, 2))) for s in SEQS]


def strict(call):
    """``call()`` with NumPy floating-point problems and RuntimeWarnings as errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(all="raise", under="ignore"):
            return call()


@pytest.fixture(scope="module")
def graph_crf():
    return GraphCRF(max_iter=20).fit(GRAPHS, TAGS)


@pytest.fixture(scope="module")
def chain_crf():
    return ChainCRF(max_iter=20).fit(SEQS, TAGS)


# -- predict-time input -------------------------------------------------------------------------

def _with_edge_features(f):
    return [(SEQS[0], LOOP, f)]


@pytest.mark.parametrize("feats, err, match", [
    (np.full((5, 2), np.nan), ValueError, r"edge_features\[0\] contains NaN or inf"),
    (np.full((5, 2), np.inf), ValueError, r"edge_features\[0\] contains NaN or inf"),
    (np.ones(5), ValueError, r"must be a 2-D \(E, K\) array.*got shape \(5,\)"),
    (np.ones((5, 0)), ValueError, r"must be \(5, 2\)"),
    (np.ones((5, 3)), ValueError, r"must be \(5, 2\) \(the model's K\), got \(5, 3\)"),
    (np.ones((4, 2)), ValueError, r"must be \(5, 2\)"),
    ([["a", "b"]] * 5, TypeError, r"edge_features\[0\] must be a numeric"),
])
@pytest.mark.parametrize("method", ["predict", "predict_marginals"])
def test_graph_crf_checks_edge_features_at_predict_as_at_fit(graph_crf, feats, err, match,
                                                             method):
    with pytest.raises(err, match=match):
        strict(lambda: getattr(graph_crf, method)(_with_edge_features(feats)))


def test_edge_features_with_no_columns_are_refused_by_fit():
    with pytest.raises(ValueError, match=r"at least one column"):
        GraphCRF().fit([(s, LOOP, np.ones((5, 0))) for s in SEQS], TAGS)


def test_sparse_edge_features_give_the_dense_answer(graph_crf):
    dense = [(s, e, f) for s, e, f in GRAPHS]
    sparse = [(s, e, sp.csr_matrix(f)) for s, e, f in GRAPHS]
    assert graph_crf.predict(sparse) == graph_crf.predict(dense)
    fitted = GraphCRF(max_iter=20).fit(sparse, TAGS)
    assert fitted.objective_ == pytest.approx(graph_crf.objective_, rel=1e-12)


@pytest.mark.parametrize("edges, err, match", [
    (np.array([[0, 1], [1, np.inf]]), ValueError, r"graph 0: edges contain NaN or inf"),
    (np.array([[0, 1], [1, 1e20]]), ValueError, r"graph 0: .*0\.\.4, got 1e\+20"),
    (np.array([[0, 1], [1, 2 ** 64 - 1]], dtype=np.uint64), ValueError,
     r"graph 0: .*0\.\.4, got 18446744073709551615"),
    (np.array([[0, 1], [1, -3]]), ValueError, r"graph 0: .*0\.\.4, got -3"),
    (np.array([[0, 1], [1, 2.5]]), TypeError, r"graph 0: .*fractional"),
    (np.array([[True, False]]), TypeError, r"graph 0: .*dtype bool"),
    (sp.csr_matrix(np.array([[0, 1]])), TypeError, r"graph 0: .*sparse"),
])
@pytest.mark.parametrize("when", ["fit", "predict"])
def test_edge_ids_are_reported_as_given(graph_crf, edges, err, match, when):
    X = [(SEQS[0], edges, np.ones((np.shape(edges)[0], 2)))]
    with pytest.raises(err, match=match):
        if when == "fit":
            strict(lambda: GraphCRF().fit(X * 2, TAGS[:2]))
        else:
            strict(lambda: graph_crf.predict(X))


@pytest.mark.parametrize("which", ["chain", "graph"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_node_features_are_refused_at_predict(chain_crf, graph_crf, which, bad):
    X = SEQS[0].copy()
    X[1, 1] = bad
    est, sample = (chain_crf, [X]) if which == "chain" else (graph_crf, [(X, LOOP, GRAPHS[0][2])])
    with pytest.raises(ValueError, match="NaN or inf"):
        strict(lambda: est.predict(sample))


def test_a_string_label_where_a_sequence_belongs_is_named():
    one_node = [(np.ones((1, 2)), np.empty((0, 2)))] * 2
    with pytest.raises(TypeError, match=r"y\[0\] must be a sequence of labels.*str 'a'"):
        GraphCRF().fit(one_node, ["a", "b"])
    with pytest.raises(TypeError, match=r"y\[0\] must be a sequence of labels"):
        ChainCRF().fit([np.ones((1, 2))] * 2, ["a", "b"])


# -- call sequences -----------------------------------------------------------------------------

def _data(kind):
    return (SEQS, TAGS) if kind == "chain" else (GRAPHS, TAGS)


def _make(kind, **kw):
    return ChainCRF(max_iter=10, **kw) if kind == "chain" else GraphCRF(max_iter=10, **kw)


@pytest.mark.parametrize("kind", ["chain", "graph"])
def test_fit_then_partial_fit_then_fit(kind):
    X, y = _data(kind)
    est = _make(kind).fit(X, y)
    est.partial_fit(X, y)
    assert est.n_updates_ > 0 and np.isfinite(est.coef_).all()
    again = est.fit(X, y)
    fresh = _make(kind).fit(X, y)
    np.testing.assert_allclose(again.coef_, fresh.coef_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["chain", "graph"])
def test_partial_fit_first_needs_classes_and_sorts_them(kind):
    X, y = _data(kind)
    with pytest.raises(ValueError, match="classes"):
        _make(kind).partial_fit(X, y)
    est = _make(kind).partial_fit(X, y, classes=[2, 0, 1])
    np.testing.assert_array_equal(est.classes_, [0, 1, 2])
    assert est.classes_.dtype.kind == "i"
    with pytest.raises(ValueError, match="distinct"):
        _make(kind).partial_fit(X, y, classes=[0, 1, 1])


@pytest.mark.parametrize("kind", ["chain", "graph"])
def test_clone_and_pickle_between_calls(kind):
    X, y = _data(kind)
    est = _make(kind).partial_fit(X, y, classes=[0, 1, 2])
    est = pickle.loads(pickle.dumps(est))
    est.partial_fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    assert copy.predict(X) == est.predict(X)
    assert not hasattr(clone(est), "classes_")
    refit = clone(est).fit(X, y)
    assert refit.predict(X) == _make(kind).fit(X, y).predict(X)


# -- graphs at and past the budgets -------------------------------------------------------------

def grid(r, c):
    idx = np.arange(r * c).reshape(r, c)
    return np.array([(idx[i, j], idx[i, j + 1]) for i in range(r) for j in range(c - 1)]
                    + [(idx[i, j], idx[i + 1, j]) for i in range(r - 1) for j in range(c)])


def clique(n):
    return np.array(list(itertools.combinations(range(n), 2)))


@pytest.mark.parametrize("n, edges", [(k * k, grid(k, k)) for k in (10, 60, 200)]
                         + [(n, clique(n)) for n in (6, 30, 60)])
def test_graphs_past_the_width_budget_are_refused_naming_width_and_tables(n, edges):
    with pytest.raises(TreewidthError, match=r"treewidth at least \d+.*max_treewidth=4: a "
                                             r"clique of \d+ nodes holds 3\^\d+ = "):
        junction_tree(n, edges, max_treewidth=4, n_labels=3)


def test_a_graph_within_the_width_but_past_the_table_budget_is_refused():
    with pytest.raises(TreewidthError, match=r"100\^5 = 1e\+10 label combinations, above "
                                             r"the 1e\+08"):
        junction_tree(5, clique(5), max_treewidth=4, n_labels=100)
    X = [(RNG.normal(size=(5, 2)), clique(5))] * 2
    y = [list(range(i, i + 5)) for i in range(0, 100, 5)]
    with pytest.raises(ValueError, match=r"100\^5"):
        GraphCRF().fit(X * 10, y)


def test_graphs_at_the_budget_are_accepted():
    assert junction_tree(16, grid(4, 4), max_treewidth=4, n_labels=3).treewidth == 4
    assert junction_tree(5, clique(5), max_treewidth=4, n_labels=10).treewidth == 4


PETERSEN = np.array([(i, (i + 1) % 5) for i in range(5)] + [(i, i + 5) for i in range(5)]
                    + [(5 + i, 5 + (i + 2) % 5) for i in range(5)])


@pytest.mark.parametrize("seed", range(20))
def test_the_budget_does_not_depend_on_node_numbering(seed):
    perm = np.random.default_rng(seed).permutation(10)
    assert junction_tree(10, perm[PETERSEN], max_treewidth=4).treewidth == 4


# -- numberings ---------------------------------------------------------------------------------

def test_permuted_numberings_give_the_same_fit_and_predictions():
    rng = np.random.default_rng(0)
    nodes = [rng.normal(size=(10, 3)) for _ in range(4)]
    labels = [rng.integers(0, 2, 10) for _ in nodes]
    base = GraphCRF(max_iter=200, tol=1e-9).fit([(x, PETERSEN) for x in nodes],
                                                [list(t) for t in labels])
    test = [(x[::-1].copy(), PETERSEN) for x in nodes]
    marg = base.predict_marginals(test)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(10)      # old node i is new perm[i]
        inv = np.argsort(perm)
        graphs = [(x[inv], perm[PETERSEN]) for x in nodes]
        est = GraphCRF(max_iter=200, tol=1e-9).fit(graphs, [list(t[inv]) for t in labels])
        assert est.objective_ == pytest.approx(base.objective_, rel=1e-9)
        got = est.predict_marginals([(x[inv], perm[PETERSEN]) for x, _ in test])
        for j in range(len(test)):
            for i in range(10):
                for c in base.classes_:
                    assert got[j][perm[i]][c] == pytest.approx(marg[j][i][c], abs=1e-6)


# -- labels -------------------------------------------------------------------------------------

ROWS = RNG.normal(size=(24, 3))
LABELS = {
    "int": np.arange(24) % 12,
    "str": np.array(list("abcdefghijkl") * 2),
    "bool": np.arange(24) % 2 == 0,
    "whole floats": (np.arange(24) % 3).astype(float),
}
BAD_LABELS = {
    "mixed": np.array([1, "a"] * 12, dtype=object),
    "nan": np.r_[np.zeros(12), np.ones(11), np.nan],
    "continuous": (np.arange(24) % 3) * 0.5,
}


def _six():
    seqs = [ROWS[i:i + 6] for i in range(0, 24, 6)]
    return {
        "BoundLogisticRegression": (BoundLogisticRegression(max_iter=5), ROWS, False),
        "BoundSGDClassifier": (BoundSGDClassifier(max_iter=2), ROWS, False),
        "LatentLogisticRegression": (LatentLogisticRegression(max_iter=3), ROWS, False),
        "MixtureOfExperts": (MixtureOfExperts(expert="logistic", max_iter=3), ROWS, False),
        "ChainCRF": (ChainCRF(max_iter=3), seqs, True),
        "GraphCRF": (GraphCRF(max_iter=3), [(s, [(t, t + 1) for t in range(5)]) for s in seqs],
                     True),
    }


def _fit(est, X, structured, y):
    return est.fit(X, [list(y[i:i + 6]) for i in range(0, 24, 6)] if structured else y)


@pytest.mark.parametrize("kind", sorted(LABELS))
def test_the_same_labels_give_the_same_classes_in_all_six_estimators(kind):
    y = LABELS[kind]
    expected = np.unique(y)
    for name, (est, X, structured) in _six().items():
        classes = _fit(est, X, structured, y).classes_
        assert classes.dtype == expected.dtype, name
        np.testing.assert_array_equal(classes, expected, err_msg=name)


@pytest.mark.parametrize("kind", sorted(BAD_LABELS))
def test_the_same_bad_labels_are_refused_by_all_six_estimators(kind):
    for name, (est, X, structured) in _six().items():
        with pytest.raises(ValueError):
            _fit(est, X, structured, BAD_LABELS[kind])
            pytest.fail(f"{name} accepted {kind} labels")


# -- weights ------------------------------------------------------------------------------------

def test_chain_crf_sample_weight_is_the_repeated_sequence():
    kw = dict(max_iter=500, tol=1e-10)
    weighted = ChainCRF(**kw).fit(SEQS[:3], TAGS[:3], sample_weight=[2.0, 1.0, 0.5])
    repeated = ChainCRF(**kw).fit([SEQS[0]] + SEQS[:3], [TAGS[0]] + TAGS[:3],
                                  sample_weight=[1.0, 1.0, 1.0, 0.5])
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-10)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-6)
    graph = GraphCRF(**kw).fit([(s, [(t, t + 1) for t in range(4)]) for s in SEQS[:3]],
                               TAGS[:3], sample_weight=[2.0, 1.0, 0.5])
    assert graph.objective_ == pytest.approx(weighted.objective_, rel=1e-10)
    with pytest.raises(ValueError, match="sample_weight"):
        ChainCRF().fit(SEQS[:3], TAGS[:3], sample_weight=[1.0, -1.0, 1.0])


def test_chain_crf_on_huge_feature_values_warns_nothing_from_numpy():
    X = [s * 1e100 for s in SEQS]
    est = strict(lambda: ChainCRF(max_iter=30).fit(X, TAGS))
    assert np.isfinite(est.objective_) and np.isfinite(est.coef_).all()
