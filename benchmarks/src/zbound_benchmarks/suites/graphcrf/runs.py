"""Runs of the ``graphcrf`` suite: exact inference on junction trees against enumeration, the
skip-chain CRF on CoNLL-2002 against the chain CRF and CRFsuite, and the cost of a pass
against treewidth and graph size.

Tasks:

- ``inference``: random graphs of up to ``inference_max_nodes`` nodes in six families (trees,
  cycles, grids, 3- and 4-cliques, random), 2 or 3 labels, scores at three scales; log Z, node
  and edge marginals and the MAP labeling of each graph's own pass, and of one
  :class:`~zbound.structured.graph.JunctionForest` pass over all of them, against
  enumeration. One record per family: graphs, largest relative error of log Z, largest
  absolute error of a marginal, MAP labelings whose score falls short of the best by more
  than 1e-9 (relative), and the count of values off by more than 1e-9.
- ``inference-medium``: graphs beyond enumeration (trees of 20-40 nodes, cycles of 15-30,
  3-4 x 4-6 grids, random graphs of 12-18 nodes of treewidth at most 4), 3 labels, against
  pgmpy's belief propagation on its own junction tree (the ``pgmpy`` extra; skipped without
  it): log Z, node and edge marginals, and the MAP labeling's score against pgmpy's
  max-calibrated best score; seconds per graph of each (ours: junction tree, sum-product and
  max-product; pgmpy: model, calibration and max-calibration). A record per family for each.
- ``skip-chain``: CoNLL-2002 Spanish NER, the crf suite's token features. ``ChainCRF`` (its
  default solver), ``GraphCRF`` on the same chains, ``GraphCRF`` on skip chains (an edge from
  each capitalized word to its next occurrence in the sentence, while the treewidth stays at
  most 4: :func:`skip_edges`) and CRFsuite L-BFGS on the
  chains, the same c2; chunk F1 and token accuracy on the test part, fit seconds (alternating
  repeats, median), value-and-gradient evaluations and seconds per evaluation; also
  ``ChainCRF(solver="lbfgs")``, and one value-and-gradient evaluation of each loss on the same
  chains timed alone.
- ``scaling``: grids of r x L nodes (treewidth r), 5 labels, a batch of graphs through one
  :class:`~zbound.structured.graph.JunctionForest`: seconds per graph of one sum-product pass.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from zbound_benchmarks.harness import suite_config
from zbound_benchmarks.records import BenchRecord
from zbound_benchmarks.timing import time_alternating

SUITE = "graphcrf"
OPTIONS = ("config",)
#: a value is a mismatch when it is off by more than this (relative to max(1, |value|))
MISMATCH = 1e-9
#: GraphCRF on chains: at most this multiple of ChainCRF's time per evaluation
CHAIN_RATIO = 1.2
FAMILIES = ("tree", "cycle", "grid", "clique3", "clique4", "random")
MEDIUM_FAMILIES = ("tree", "cycle", "grid", "random")
#: labels and score scale of the medium graphs (pgmpy multiplies factors in linear space)
MEDIUM_LABELS, MEDIUM_SCALE = 3, 1.0


@dataclass
class Config:
    inference_graphs: int = 3000
    inference_max_nodes: int = 8
    medium_graphs: int = 200
    corpus: tuple = (None, None)
    c2: float = 1.0
    max_iter: int = 300
    repeats: int = 3
    scaling_widths: tuple = (1, 2, 3, 4)
    scaling_lengths: tuple = (10, 20, 40)
    scaling_graphs: int = 50


def config(quick: bool) -> Config:
    if not quick:
        return Config()
    return Config(inference_graphs=600, medium_graphs=40, corpus=(800, 400), repeats=1,
                  scaling_lengths=(10, 20), scaling_graphs=20)


def tiny() -> Config:
    return Config(inference_graphs=24, inference_max_nodes=5, medium_graphs=4,
                  corpus=(30, 20), max_iter=15,
                  repeats=1, scaling_widths=(1, 2), scaling_lengths=(4,), scaling_graphs=3)


# ------------------------------------------------------------------------ inference
def random_graph(family: str, rng, max_nodes: int):
    """(n_nodes, edges) of one graph of ``family``."""
    if family == "tree":
        n = int(rng.integers(2, max_nodes + 1))
        return n, [(int(rng.integers(0, i)), i) for i in range(1, n)]
    if family == "cycle":
        n = int(rng.integers(3, max_nodes + 1))
        return n, [(i, (i + 1) % n) for i in range(n)]
    if family == "grid":
        r = 2
        c = int(rng.integers(2, max(3, max_nodes // 2) + 1))
        idx = np.arange(r * c).reshape(r, c)
        return r * c, ([(int(idx[i, j]), int(idx[i, j + 1])) for i in range(r)
                        for j in range(c - 1)]
                       + [(int(idx[0, j]), int(idx[1, j])) for j in range(c)])
    if family in ("clique3", "clique4"):
        k = int(family[-1])
        n = int(rng.integers(k, max_nodes + 1))
        base = list(itertools.combinations(range(k), 2))
        return n, base + [(int(rng.integers(0, i)), i) for i in range(k, n)]
    n = int(rng.integers(2, max_nodes + 1))
    return n, [e for e in itertools.combinations(range(n), 2) if rng.random() < 0.4]


def _enumerate(n, m, edges, S, T):
    ys = np.array(list(itertools.product(range(m), repeat=n)))
    score = S[np.arange(n)[None, :], ys].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        score += T[e][ys[:, u], ys[:, v]]
    top = score.max()
    w = np.exp(score - top)
    p = w / w.sum()
    node = np.zeros((n, m))
    for i in range(n):
        np.add.at(node[i], ys[:, i], p)
    edge = np.zeros((len(edges), m, m))
    for e, (u, v) in enumerate(edges):
        np.add.at(edge[e], (ys[:, u], ys[:, v]), p)
    return top + np.log(w.sum()), node, edge, top


def task_inference(ctx, cfg: Config) -> None:
    from zbound.structured.graph import (
        JunctionForest,
        junction_tree,
        tree_max_product,
        tree_sum_product,
    )

    rng = np.random.default_rng(0)
    stats = {f: {"graphs": 0, "logz_rel": 0.0, "marginal_abs": 0.0, "map_short": 0,
                 "mismatches": 0, "max_treewidth": 0, "seconds": 0.0} for f in FAMILIES}
    ctx.start("inference against enumeration", cfg.inference_graphs)
    drawn = []
    for i in range(cfg.inference_graphs):
        family = FAMILIES[i % len(FAMILIES)]
        n, edges = random_graph(family, rng, cfg.inference_max_nodes)
        m = int(rng.integers(2, 4)) if 3**n <= 20000 else 2
        scale = float(rng.choice([0.1, 1.0, 10.0]))
        S = rng.normal(scale=scale, size=(n, m))
        T = rng.normal(scale=scale, size=(len(edges), m, m))
        t0 = time.perf_counter()
        tree = junction_tree(n, edges)
        out = tree_sum_product(tree, S, T if edges else None)
        labels, best = tree_max_product(tree, S, T if edges else None)
        seconds = time.perf_counter() - t0
        log_z, node, edge, top = _enumerate(n, m, edges, S, T)
        st = stats[family]
        st["graphs"] += 1
        st["seconds"] += seconds
        st["max_treewidth"] = max(st["max_treewidth"], tree.treewidth)
        lz_err = abs(out.log_z - log_z) / max(1.0, abs(log_z))
        mg_err = float(np.abs(out.node - node).max())
        if edges:
            mg_err = max(mg_err, float(np.abs(out.edge - edge).max()))
        own = S[np.arange(n), labels].sum() + sum(T[e][labels[u], labels[v]]
                                                  for e, (u, v) in enumerate(edges))
        short = (top - own) / max(1.0, abs(top)) > MISMATCH or \
            abs(best - own) / max(1.0, abs(own)) > MISMATCH
        st["logz_rel"] = max(st["logz_rel"], lz_err)
        st["marginal_abs"] = max(st["marginal_abs"], mg_err)
        st["map_short"] += int(short)
        st["mismatches"] += int(lz_err > MISMATCH) + int(mg_err > MISMATCH) + int(short)
        drawn.append((family, tree, m, S, T, log_z, node, edge))
        ctx.advance()
    # all graphs of one label count through one forest
    forest_mismatch = 0
    for m in sorted({d[2] for d in drawn}):
        group = [d for d in drawn if d[2] == m]
        n_off = np.cumsum([0] + [d[1].n_nodes for d in group])
        e_off = np.cumsum([0] + [d[1].edges.shape[0] for d in group])
        forest = JunctionForest([d[1] for d in group], n_off[:-1], e_off[:-1])
        S = np.concatenate([d[3] for d in group])
        T = np.concatenate([d[4].reshape(-1, m, m) for d in group])
        log_z, node, edge = forest.sum_product(S, T)
        for j, d in enumerate(group):
            bad = abs(log_z[j] - d[5]) / max(1.0, abs(d[5])) > MISMATCH or \
                np.abs(node[n_off[j]:n_off[j + 1]] - d[6]).max() > MISMATCH or \
                (d[7].size and np.abs(edge[e_off[j]:e_off[j + 1]] - d[7]).max() > MISMATCH)
            forest_mismatch += int(bool(bad))
            stats[d[0]]["mismatches"] += int(bool(bad))
    for family, st in stats.items():
        if not st["graphs"]:
            continue
        ctx.writer.add_record(BenchRecord(
            task="inference", dataset=f"random/{family}",
            setting=f"n<={cfg.inference_max_nodes}", method="junction-tree", default=True,
            reached=st["mismatches"] == 0, time_to_target_s=st["seconds"] / st["graphs"],
            final_objective=None, metrics={**st, "mismatch_tol": MISMATCH}))
    ctx.writer.set_extra("forest_mismatches", forest_mismatch)


# ------------------------------------------------------------------------ medium graphs
def medium_graph(family: str, rng):
    """(n_nodes, edges) of a graph beyond enumeration (12-40 nodes), treewidth at most 4."""
    from zbound.structured.graph import elimination_cliques

    if family == "tree":
        n = int(rng.integers(20, 41))
        return n, [(int(rng.integers(0, i)), i) for i in range(1, n)]
    if family == "cycle":
        n = int(rng.integers(15, 31))
        return n, [(i, (i + 1) % n) for i in range(n)]
    if family == "grid":
        r, c = int(rng.integers(3, 5)), int(rng.integers(4, 7))
        return r * c, grid_edges(r, c)
    while True:     # random and connected, redrawn until its treewidth is at most 4
        n = int(rng.integers(12, 19))
        tree = {(int(rng.integers(0, i)), i) for i in range(1, n)}
        edges = sorted(tree | {e for e in itertools.combinations(range(n), 2)
                               if rng.random() < 0.12})
        cliques = elimination_cliques(n, np.array(edges, dtype=np.int64).reshape(-1, 2))
        if max(len(c) for c in cliques) <= 5:
            return n, edges


def _pgmpy_inference(n, m, edges, S, T):
    """(log Z, node (n, m), edge (E, m, m), best score) by pgmpy's belief propagation on its
    own junction tree (sum- and max-calibrated clique beliefs)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # pgmpy's deprecation notices
        from pgmpy.factors.discrete import DiscreteFactor
        from pgmpy.inference import BeliefPropagation
        from pgmpy.models import DiscreteMarkovNetwork

    names = [f"x{i}" for i in range(n)]
    net = DiscreteMarkovNetwork()
    net.add_nodes_from(names)
    net.add_edges_from([(names[u], names[v]) for u, v in edges])
    net.add_factors(*[DiscreteFactor([names[i]], [m], np.exp(S[i])) for i in range(n)],
                    *[DiscreteFactor([names[u], names[v]], [m, m], np.exp(T[e]))
                      for e, (u, v) in enumerate(edges)])
    bp = BeliefPropagation(net)
    bp.calibrate()
    beliefs = list(bp.get_clique_beliefs().values())

    def marginal(keep):
        f = next(b for b in beliefs if set(keep) <= set(b.variables))
        f = f.marginalize([v for v in f.variables if v not in keep], inplace=False)
        values = np.transpose(f.values, [f.variables.index(v) for v in keep])
        return values / values.sum()

    log_z = float(np.log(beliefs[0].values.sum()))
    node = np.array([marginal([names[i]]) for i in range(n)])
    edge = np.array([marginal([names[u], names[v]]) for u, v in edges]).reshape(-1, m, m)
    bp.max_calibrate()
    best = float(np.log(next(iter(bp.get_clique_beliefs().values())).values.max()))
    return log_z, node, edge, best


def task_inference_medium(ctx, cfg: Config) -> None:
    import warnings

    from zbound.structured.graph import junction_tree, tree_max_product, tree_sum_product
    from zbound.utils.extras import require

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # pgmpy's deprecation notices on import
            require("pgmpy", "the pgmpy peer of the graphcrf suite")
    except ImportError as exc:
        ctx.log(f"medium graphs against pgmpy skipped: {exc}")
        return
    rng = np.random.default_rng(2)
    m = MEDIUM_LABELS
    stats = {f: {"graphs": 0, "logz_rel": 0.0, "marginal_abs": 0.0, "map_short": 0,
                 "mismatches": 0, "max_treewidth": 0, "max_nodes": 0, "seconds": 0.0,
                 "pgmpy_seconds": 0.0} for f in MEDIUM_FAMILIES}
    ctx.start("medium graphs against pgmpy", cfg.medium_graphs)
    for i in range(cfg.medium_graphs):
        family = MEDIUM_FAMILIES[i % len(MEDIUM_FAMILIES)]
        n, edges = medium_graph(family, rng)
        S = rng.normal(scale=MEDIUM_SCALE, size=(n, m))
        T = rng.normal(scale=MEDIUM_SCALE, size=(len(edges), m, m))
        t0 = time.perf_counter()
        tree = junction_tree(n, edges)
        out = tree_sum_product(tree, S, T)
        labels, _ = tree_max_product(tree, S, T)
        t1 = time.perf_counter()
        log_z, node, edge, best = _pgmpy_inference(n, m, edges, S, T)
        t2 = time.perf_counter()
        st = stats[family]
        st["graphs"] += 1
        st["seconds"] += t1 - t0
        st["pgmpy_seconds"] += t2 - t1
        st["max_treewidth"] = max(st["max_treewidth"], tree.treewidth)
        st["max_nodes"] = max(st["max_nodes"], n)
        lz_err = abs(out.log_z - log_z) / max(1.0, abs(log_z))
        mg_err = max(float(np.abs(out.node - node).max()),
                     float(np.abs(out.edge - edge).max()))
        own = S[np.arange(n), labels].sum() + sum(T[e][labels[u], labels[v]]
                                                  for e, (u, v) in enumerate(edges))
        short = (best - own) / max(1.0, abs(best)) > MISMATCH
        st["logz_rel"] = max(st["logz_rel"], lz_err)
        st["marginal_abs"] = max(st["marginal_abs"], mg_err)
        st["map_short"] += int(short)
        st["mismatches"] += int(lz_err > MISMATCH) + int(mg_err > MISMATCH) + int(short)
        ctx.advance(family)
    for family, st in stats.items():
        if not st["graphs"]:
            continue
        common = dict(task="inference-medium", dataset=f"medium/{family}",
                      setting=f"m={m},scale={MEDIUM_SCALE:g}", final_objective=None,
                      metrics={**st, "mismatch_tol": MISMATCH})
        ctx.writer.add_record(BenchRecord(
            **common, method="junction-tree", default=True, reached=st["mismatches"] == 0,
            time_to_target_s=st["seconds"] / st["graphs"]))
        ctx.writer.add_record(BenchRecord(
            **common, method="pgmpy-bp", peer=True, reached=True,
            time_to_target_s=st["pgmpy_seconds"] / st["graphs"]))


# ------------------------------------------------------------------------ skip chain
def skip_edges(words, max_treewidth: int = 4) -> list[tuple[int, int]]:
    """Chain edges, plus an edge from each capitalized word to its next occurrence (when not
    adjacent), in sentence order, each kept only while the graph's treewidth (by min-fill
    elimination, as the fit triangulates) stays within ``max_treewidth``: a long sentence
    that repeats many names would otherwise reach treewidth 6 and tables of 9^7 entries."""
    from zbound.structured.graph import junction_tree

    edges = [(t, t + 1) for t in range(len(words) - 1)]
    last: dict = {}
    for t, w in enumerate(words):
        if w[:1].isupper():
            if w in last and t > last[w] + 1:
                trial = edges + [(last[w], t)]
                if junction_tree(len(words), trial).treewidth <= max_treewidth:
                    edges = trial
            last[w] = t
    return edges


def skip_chain(sentence):
    """(tokens, edges, edge features) of the skip-chain graph of a sentence: chain edges with
    the feature [1, 0], skip edges (:func:`skip_edges`) with [0, 1], so that the two kinds
    have their own pairwise weights (a transition and a label agreement)."""
    edges = skip_edges([w for w, *_ in sentence])
    feats = np.array([[1.0, 0.0] if v == u + 1 else [0.0, 1.0] for u, v in edges])
    return sentence, edges, feats.reshape(-1, 2)


def task_skip_chain(ctx, cfg: Config) -> None:
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from zbound.estimators import ChainCRF, GraphCRF
    from zbound.models.crf import ChainCRFLoss
    from zbound.models.graph_crf import GraphCRFLoss
    from zbound.structured.features import encode_labels, featurize
    from zbound.utils.extras import require
    from zbound_benchmarks.suites.crf.runs import load, scores

    data = ctx.load("conll2002", load, "conll2002", *cfg.corpus)
    if data is None:
        return
    train, test = data
    ctx.start("skip-chain CRF on CoNLL-2002", 4)
    Xc = [x for x, _ in train]
    y = [t for _, t in train]
    chains = [(x, [(t, t + 1) for t in range(len(x) - 1)]) for x in Xc]
    skips = [skip_chain(x) for x in Xc]
    Xt = [x for x, _ in test]
    yt = [t for _, t in test]
    n_skip = sum(len(e) - (len(x) - 1) for x, e, _ in skips)
    graphs_with = sum(len(e) > len(x) - 1 for x, e, _ in skips)
    fits = {
        "chaincrf": lambda: ChainCRF(c2=cfg.c2, max_iter=cfg.max_iter).fit(Xc, y),
        "chaincrf-lbfgs": lambda: ChainCRF(c2=cfg.c2, solver="lbfgs",
                                           max_iter=cfg.max_iter).fit(Xc, y),
        "graphcrf-chain": lambda: GraphCRF(c2=cfg.c2, max_iter=cfg.max_iter).fit(chains, y),
        "graphcrf-skip": lambda: GraphCRF(c2=cfg.c2, max_iter=cfg.max_iter).fit(skips, y),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = time_alternating(fits, repeats=cfg.repeats)
    ctx.advance("fits")
    common = dict(task="skip-chain", dataset="conll2002",
                  setting=f"c2={cfg.c2},n={len(train)}")
    size = dict(n_train=len(train), n_test=len(test), n_tokens=sum(len(x) for x in Xc),
                skip_edges=n_skip, graphs_with_skip_edges=graphs_with)
    for name, entry in res.items():
        est = entry["result"]
        Xtest = ([skip_chain(x) for x in Xt] if name == "graphcrf-skip"
                 else [(x, [(t, t + 1) for t in range(len(x) - 1)]) for x in Xt]
                 if name == "graphcrf-chain" else Xt)
        acc, f1 = scores(est.predict(Xtest), yt, True)
        evals = int(est.solver_result_.n_evals)
        ctx.writer.add_record(BenchRecord(
            **common, method=name, default=name in ("chaincrf", "graphcrf-skip"),
            reached=bool(est.solver_result_.converged), time_to_target_s=entry["median_s"],
            evaluations=evals, final_objective=float(est.objective_),
            metrics={**size, "f1": f1, "test_accuracy": acc, "fit_s": entry["median_s"],
                     "times": entry["times"], "iterations": int(est.n_iter_),
                     "s_per_evaluation": entry["median_s"] / max(evals, 1)}))
    ctx.advance("scores")
    # one evaluation of each loss on the same chains
    M, lengths, _ = featurize(Xc, None, grow=True)
    yi, classes = encode_labels(y, lengths)
    chain_loss = ChainCRFLoss(M, lengths, yi, len(classes))
    graph_loss = GraphCRFLoss(M, lengths, [e for _, e in chains], yi, len(classes))
    theta = np.random.default_rng(0).normal(scale=0.01, size=chain_loss.n_params)
    ev = time_alternating({"chaincrf": lambda: chain_loss.value_and_grad(theta),
                           "graphcrf-chain": lambda: graph_loss.value_and_grad(theta)},
                          repeats=max(5, cfg.repeats))
    for name, entry in ev.items():
        ctx.writer.add_record(BenchRecord(
            task="evaluation", dataset="conll2002", setting=common["setting"], method=name,
            default=name == "graphcrf-chain", reached=True, time_to_target_s=entry["median_s"],
            final_objective=None,
            metrics={**size, "value_and_grad_s": entry["median_s"],
                     "ratio": entry["median_s"] / ev["chaincrf"]["median_s"]}))
    ctx.advance("evaluations")
    try:
        require("pycrfsuite", "the CRFsuite peer of the graphcrf suite")
    except ImportError as exc:
        ctx.log(f"CRFsuite peer skipped: {exc}")
        return
    _crfsuite(ctx, cfg, Xc, y, Xt, yt, common, size)
    ctx.advance("CRFsuite")


def _crfsuite(ctx, cfg, Xc, y, Xt, yt, common, size) -> None:
    import tempfile

    import pycrfsuite

    from zbound.structured.features import attributes, token_features
    from zbound_benchmarks.suites.crf.runs import crfsuite_run, pycrfsuite_items, scores

    def tokens(seq):        # the templates the estimators apply to (word, POS) tuples
        return token_features([w for w, *_ in seq], [t[1] for t in seq])

    def items(seq):
        return [dict(attributes(tok)) for tok in tokens(seq)]

    train_items = [items(x) for x in Xc]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        path, trace, total = crfsuite_run(train_items, y, cfg.c2, "lbfgs", cfg.max_iter, tmp)
        seconds = time.perf_counter() - t0
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        pred = [tagger.tag(pycrfsuite_items(tokens(x))) for x in Xt]
    acc, f1 = scores(pred, yt, True)
    ctx.writer.add_record(BenchRecord(
        **common, method="crfsuite-lbfgs", peer=True, reached=True, time_to_target_s=seconds,
        evaluations=len(trace), final_objective=trace[-1][1] if trace else None,
        metrics={**size, "f1": f1, "test_accuracy": acc, "fit_s": seconds, "times": [seconds],
                 "iterations": len(trace),
                 "s_per_evaluation": seconds / max(len(trace), 1)}))


# ------------------------------------------------------------------------ scaling
def grid_edges(r: int, c: int):
    idx = np.arange(r * c).reshape(r, c)
    return ([(int(idx[i, j]), int(idx[i, j + 1])) for i in range(r) for j in range(c - 1)]
            + [(int(idx[i, j]), int(idx[i + 1, j])) for i in range(r - 1) for j in range(c)])


def task_scaling(ctx, cfg: Config) -> None:
    from zbound.structured.graph import JunctionForest, junction_tree

    m = 5
    cells = [(r, L) for r in cfg.scaling_widths for L in cfg.scaling_lengths]
    ctx.start("scaling with treewidth and size", len(cells))
    rng = np.random.default_rng(1)
    for r, L in cells:
        edges = grid_edges(r, L)
        tree = junction_tree(r * L, edges)
        G = cfg.scaling_graphs
        n, E = r * L, len(edges)
        forest = JunctionForest([tree] * G, np.arange(G) * n, np.arange(G) * E)
        S = rng.normal(size=(G * n, m))
        T = rng.normal(size=(G * E, m, m))
        entry = time_alternating({"pass": lambda f=forest, S=S, T=T: f.sum_product(S, T)},
                                 repeats=3)["pass"]
        ctx.writer.add_record(BenchRecord(
            task="scaling", dataset=f"grid/{r}x{L}", setting=f"m={m}", method="junction-tree",
            default=True, reached=True, time_to_target_s=entry["median_s"] / G,
            final_objective=None,
            metrics={"rows": r, "length": L, "nodes": n, "edges": E,
                     "treewidth": tree.treewidth, "cliques": tree.n_cliques, "graphs": G,
                     "labels": m, "seconds_per_graph": entry["median_s"] / G,
                     "times": entry["times"]}))
        ctx.advance(f"grid {r}x{L}")


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    task_inference(ctx, cfg)
    task_inference_medium(ctx, cfg)
    task_skip_chain(ctx, cfg)
    task_scaling(ctx, cfg)
