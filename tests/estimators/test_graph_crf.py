"""GraphCRF: the chain CRF on chains, exact MAP and marginals on loopy graphs, sample weights,
streaming, and clear errors."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from zbound import ChainCRF, GraphCRF

WORDS = ["a", "b", "c", "d", "e"]


def corpus(n=40, seed=0, skip=False):
    """Random word sequences labelled by a rule with context; as chains or with skip edges
    between repeated words (a skip chain)."""
    rng = np.random.default_rng(seed)
    X, y, seqs = [], [], []
    for _ in range(n):
        L = int(rng.integers(2, 7))
        seq = [WORDS[i] for i in rng.integers(0, len(WORDS), L)]
        nodes = [{"w": w} for w in seq]
        edges = [(t, t + 1) for t in range(L - 1)]
        if skip:
            edges += [(s, t) for s, t in itertools.combinations(range(L), 2)
                      if t > s + 1 and seq[s] == seq[t]]
        X.append((nodes, edges))
        seqs.append(nodes)
        y.append(["V" if w in "ae" else ("N" if w == "b" else "C") for w in seq])
    return X, y, seqs


def brute(est, graph):
    """MAP labeling and node marginals of one graph by enumeration."""
    (tree, S, T), = est._scores([graph])
    n, m = S.shape
    best, top, Z, P = None, -np.inf, 0.0, np.zeros((n, m))
    scores = {}
    for ys in itertools.product(range(m), repeat=n):
        s = S[np.arange(n), ys].sum() + sum(T[e][ys[u], ys[v]]
                                            for e, (u, v) in enumerate(tree.edges))
        scores[ys] = s
        if s > top:
            best, top = ys, s
    for ys, s in scores.items():
        w = np.exp(s - top)
        Z += w
        P[np.arange(n), ys] += w
    return list(est.classes_[list(best)]), P / Z


def test_on_chains_it_fits_the_chain_crf():
    X, y, seqs = corpus()
    g = GraphCRF(c2=0.5).fit(X, y)
    c = ChainCRF(c2=0.5, solver="lbfgs").fit(seqs, y)
    assert g.objective_ == pytest.approx(c.objective_, rel=1e-7)
    assert g.predict(X) == c.predict(seqs)
    np.testing.assert_allclose(g.edge_weights_[0], c.transitions_, atol=1e-4)


def test_loopy_graphs_exact_map_and_marginals():
    X, y, _ = corpus(skip=True, seed=1)
    assert any(len(e) >= len(n) for n, e in X)          # some graphs have cycles
    est = GraphCRF(c2=0.1).fit(X, y)
    assert est.solver_result_.converged
    pred = est.predict(X)
    marg = est.predict_marginals(X)
    for graph, p, mg in zip(X[:12], pred, marg):
        labels, P = brute(est, graph)
        assert p == labels
        got = np.array([[row[c] for c in est.classes_] for row in mg])
        np.testing.assert_allclose(got, P, atol=1e-12)
    assert est.score(X, y) > 0.9


def test_edge_features_and_clone():
    X, y, _ = corpus(seed=2)
    rng = np.random.default_rng(0)
    Xf = [(n, e, rng.normal(size=(len(e), 3))) for n, e in X]
    est = GraphCRF(max_iter=200).fit(Xf, y)
    assert est.edge_weights_.shape == (3, 3, 3) and est.n_edge_features_ == 3
    again = clone(est).fit(Xf, y)
    assert again.objective_ == pytest.approx(est.objective_, rel=1e-10)
    with pytest.raises(ValueError, match=r"edge_features\[0\] must be \(5, 3\) \(the model.s K\), "
                                         r"got \(5, 2\)"):
        est.predict([(X[0][0], X[0][1], np.ones((len(X[0][1]), 2)))])
    with pytest.raises(ValueError, match="every graph or for none"):
        GraphCRF().fit([Xf[0], X[1]], y[:2])


def test_sample_weight_two_is_the_graph_twice_and_zero_drops_it():
    X, y, _ = corpus(n=12, seed=3, skip=True)
    w = np.ones(12)
    w[0], w[1] = 2.0, 0.0
    a = GraphCRF(tol=1e-10, max_iter=500).fit(X, y, sample_weight=w)
    Xb = [X[0]] + X[0:1] + X[2:]
    yb = [y[0]] + y[0:1] + y[2:]
    b = GraphCRF(tol=1e-10, max_iter=500).fit(Xb, yb)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5)


def test_partial_fit_streams_graphs():
    X, y, _ = corpus(n=60, seed=4, skip=True)
    est = GraphCRF(learning_rate=0.5)
    with pytest.raises(ValueError, match="classes"):
        est.partial_fit(X[:10], y[:10])
    for _ in range(3):
        for s in range(0, 60, 15):
            est.partial_fit(X[s:s + 15], y[s:s + 15], classes=["C", "N", "V"])
    assert est.n_seen_ == 180 and est.n_updates_ == 3 * 4 * 2
    assert est.score(X, y) > 0.9


def test_errors_name_the_problem():
    X, y, _ = corpus(n=5)
    with pytest.raises(NotFittedError):
        GraphCRF().predict(X)
    clique = [(u, v) for u, v in itertools.combinations(range(6), 2)]
    wide = [([{"w": "a"}] * 6, clique)]
    with pytest.raises(ValueError, match=r"graph 'sample 0' \(6 nodes, 15 edges\) has "
                                         r"treewidth at least 5"):
        GraphCRF().fit(wide, [["V"] * 6])
    assert GraphCRF(max_treewidth=5, max_iter=5).fit(wide, [["V"] * 6]).predict(wide) == [
        ["V"] * 6]
    with pytest.raises(TypeError, match="graph 0 must be a tuple"):
        GraphCRF().fit([[{"w": "a"}]], [["V"]])
    with pytest.raises(TypeError, match="not a 2-D array"):
        GraphCRF().fit(np.zeros((3, 2)), [["V"]] * 3)
    with pytest.raises(ValueError, match="joins node 1 to itself"):
        GraphCRF().fit([([{"w": "a"}] * 2, [(1, 1)])], [["V", "V"]])
    est = GraphCRF(max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    n = len(y[0])
    with pytest.raises(ValueError, match=f"graph 0 has {n} nodes but {n + 1} labels"):
        est.score(X[:1], [y[0] + ["V"]])


@pytest.mark.parametrize("solver", ["bound", "lbfgs-bound"])
def test_bound_solvers_are_monotone_and_reach_lbfgs(solver):
    X, y, _ = corpus(n=25, seed=5, skip=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GraphCRF(c2=0.3, solver=solver, max_iter=60 if solver == "bound" else 300,
                       tol=1e-8).fit(X, y)
    trace = est.solver_result_.trace.objective
    assert np.all(np.diff(trace) <= 1e-10 * np.abs(trace[:-1]))
    ref = GraphCRF(c2=0.3, solver="lbfgs", tol=1e-10, max_iter=500).fit(X, y)
    if solver == "lbfgs-bound":
        assert est.solver_result_.converged
        assert est.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    else:
        assert est.objective_ < trace[0]


@pytest.mark.parametrize("solver", ["bound", "squarem", "lbfgs-bound"])
def test_bound_solvers_never_form_the_curvature(solver, monkeypatch):
    """The bound solvers work by products with the matrix-free bound (CG steps, Jacobi on a
    cheap diagonal), as they must on corpora of 10^5 parameters: with every dense form
    refused the fit still runs, monotone."""
    from zbound.bounds.curvature import MatrixFreeCurvature

    monkeypatch.setattr(MatrixFreeCurvature, "DENSE_MAX", 0)
    X, y, _ = corpus(n=20, seed=3, skip=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GraphCRF(c2=0.3, solver=solver, max_iter=8).fit(X, y)
    trace = est.solver_result_.trace.objective
    assert trace[-1] < trace[0]
    assert np.all(np.diff(trace) <= 1e-10 * np.abs(trace[:-1]))


def test_threads_of_the_chain_kernels_give_the_same_fit():
    """n_jobs runs the chains' forward-backward on threads (as ChainCRF's): the same fit
    to rounding, and joblib's convention for the count."""
    X, y, _ = corpus(n=30, seed=4, skip=True)
    chains = [list(map(tuple, e)) == [(t, t + 1) for t in range(len(x) - 1)] for x, e in X]
    assert 0 < sum(chains) < len(X)                 # chains and skip chains
    one = GraphCRF(c2=0.3, max_iter=40, n_jobs=1).fit(X, y)
    two = GraphCRF(c2=0.3, max_iter=40, n_jobs=2).fit(X, y)
    assert two.objective_ == pytest.approx(one.objective_, rel=1e-10)
    assert two.predict(X) == one.predict(X)
    with pytest.raises(ValueError, match="n_jobs"):
        GraphCRF(n_jobs=0).fit(X, y)
