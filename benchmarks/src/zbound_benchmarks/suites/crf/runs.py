"""Runs of the ``crf`` suite: same features, same objective, same target for every method.

Objective: sum_j -log p(y_j | x_j) + c2 ||theta||^2, CRFsuite's L-BFGS objective (library
``reg = 2 c2``). Feature space: every (attribute, label) pair and every transition, for both
sides (CRFsuite with ``feature.possible_states`` and ``feature.possible_transitions``; the
attributes are the strings of :func:`zbound.structured.attributes`, passed to CRFsuite as
``{attribute: weight}`` items). The mapping is checked by evaluating CRFsuite's final weights
under the library's objective and comparing with CRFsuite's own last loss.

Target: CRFsuite L-BFGS's final objective times (1 + 1e-3), the same for every method; the
library's solvers stop there, CRFsuite runs to its own convergence and its time to target is
read off its per-iteration trace. Time to target is wall time from the start of training:
CRFsuite's includes its feature generation from the items, the library's the construction of
the objective (``setup_s``); the featurization shared by both is recorded as ``featurize_s``.
The fast methods (CRFsuite L-BFGS, zbound lbfgs-bound with 1 and with 2 threads, zbound lbfgs)
alternate over ``repeats`` rounds and the median is reported; the slow ones (plain Alg. 2,
Newton-bound) run once under ``time_limit_s``. A ``forward-backward`` task times one
value-and-gradient evaluation with 1 and 2 threads (each on an objective built for that
number of threads: the chunks are cut per thread).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from zbound_benchmarks.harness import Curve, suite_config, timed
from zbound_benchmarks.records import BenchRecord
from zbound_benchmarks.timing import time_alternating

SUITE = "crf"
OPTIONS = ("config",)
REL_TARGET = 1e-3


@dataclass
class Config:
    corpora: dict = field(default_factory=lambda: {
        "conll2000": (None, None), "conll2002": (None, None), "treebank": (1000, None)})
    c2: float = 1.0
    lbfgs_iter: int = 300
    bound_iter: int = 100
    newton_iter: int = 100
    cg_maxiter: int = 5
    sgd_epochs: int = 10
    stream_epochs: int = 3
    batch_size: int = 8
    time_limit_s: float = 600.0
    repeats: int = 3
    n_jobs: int = 2
    memory_corpora: tuple = ("conll2000", "conll2002", "treebank")
    memory_iter: int = 15


def config(quick: bool) -> Config:
    if not quick:
        return Config()
    return Config(corpora={"conll2000": (400, 300), "conll2002": (400, 300),
                           "treebank": (300, 200)},
                  lbfgs_iter=300, bound_iter=8, newton_iter=40, sgd_epochs=3, stream_epochs=3,
                  time_limit_s=8.0, repeats=3, n_jobs=1, memory_corpora=("conll2000",))
    # n_jobs=1: on the quick corpora (7-12k tokens) a position step of a chunk is a few
    # microsecond-sized numpy calls, so a second thread only adds contention (the
    # forward-backward task measures 1 against 2 threads)


def tiny() -> Config:
    return Config(corpora={"conll2000": (40, 30)}, lbfgs_iter=20, bound_iter=2, newton_iter=3,
                  cg_maxiter=2, sgd_epochs=1, stream_epochs=1, batch_size=8, time_limit_s=10.0,
                  repeats=1)


# ------------------------------------------------------------------------ data
def load(name: str, n_train, n_test):
    """(train, test) as lists of (tokens, labels) with tokens raw (word, pos) tuples."""
    from zbound.datasets.sequences import load_conll2000, load_conll2002, load_treebank
    if name == "conll2000":
        tr, te = load_conll2000("train"), load_conll2000("test")
        conv = lambda s: ([(w, p) for w, p, _ in s], [c for *_, c in s])  # noqa: E731
    elif name == "conll2002":
        tr, te = load_conll2002("train", pos=True), load_conll2002("testb", pos=True)
        conv = lambda s: ([(w, p) for w, p, _ in s], [c for *_, c in s])  # noqa: E731
    elif name == "treebank":
        sents = load_treebank(traces=False)
        tr, te = sents[:3000], sents[3000:]
        conv = lambda s: ([(w,) for w, _ in s], [t for _, t in s])  # noqa: E731
    else:
        raise ValueError(f"unknown corpus {name!r}")
    tr = [conv(s) for s in tr[:n_train]]
    te = [conv(s) for s in te[:n_test]]
    return tr, te


def chunks_of(tags):
    """conlleval chunks (type, start, end) from IOB1/IOB2 tags."""
    out, start, typ = set(), None, None
    for i, t in enumerate(list(tags) + ["O"]):
        pre, _, ty = t.partition("-")
        begin = pre == "B" or (pre == "I" and (typ != ty or start is None))
        if start is not None and (pre == "O" or begin or ty != typ):
            out.add((typ, start, i))
            start, typ = None, None
        if pre in ("B", "I") and start is None:
            start, typ = i, ty
    return out


def scores(pred, gold, chunked: bool):
    tok = sum(a == b for p, g in zip(pred, gold) for a, b in zip(p, g))
    n = sum(len(g) for g in gold)
    if not chunked:
        return tok / n, None
    tp = npred = ngold = 0
    for p, g in zip(pred, gold):
        cp, cg = chunks_of(p), chunks_of(g)
        tp += len(cp & cg)
        npred += len(cp)
        ngold += len(cg)
    prec = tp / npred if npred else 0.0
    rec = tp / ngold if ngold else 0.0
    return tok / n, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


class PeakRSS:
    """Peak resident memory above the start, sampled every 10 ms (sees C allocations)."""

    def __enter__(self):
        self.base = self._rss()
        self.peak = self.base
        self._stop = False
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()
        return self

    @staticmethod
    def _rss():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _loop(self):
        while not self._stop:
            self.peak = max(self.peak, self._rss())
            time.sleep(0.01)

    def __exit__(self, *exc):
        self._stop = True
        self._t.join()
        self.peak = max(self.peak, self._rss())

    @property
    def mb(self):
        return self.peak - self.base


# ------------------------------------------------------------------------ CRFsuite
def crfsuite_run(items, labels, c2, algorithm, max_iter, tmp):
    import pycrfsuite

    trace = []

    class Trainer(pycrfsuite.Trainer):
        def on_iteration(self, log, info):
            trace.append((time.perf_counter(), float(info["loss"])))

    tr = Trainer(verbose=True)          # the iteration callbacks need the log parser
    for x, y in zip(items, labels):
        tr.append(pycrfsuite.ItemSequence(x), y)
    tr.select(algorithm)
    params = {"c2": c2, "max_iterations": max_iter, "feature.possible_states": True,
              "feature.possible_transitions": True}
    if algorithm == "lbfgs":
        params["c1"] = 0.0
    tr.set_params(params)
    path = os.path.join(tmp, f"{algorithm}.crfsuite")
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        tr.train(path)
    total = time.perf_counter() - t0
    return path, [(t - t0, f) for t, f in trace], total


def crfsuite_theta(path, crf):
    """CRFsuite's weights in the library's parameter layout (attributes via the vocabulary)."""
    import pycrfsuite
    tg = pycrfsuite.Tagger()
    tg.open(path)
    info = tg.info()
    m = len(crf.classes_)
    lab = {c: i for i, c in enumerate(crf.classes_)}
    W = np.zeros((crf.index_.n_features, m))
    for (attr, label), w in info.state_features.items():
        j = crf.index_.vocabulary_.get(attr)
        if j is not None:
            W[j, lab[label]] = w
    T = np.zeros((m, m))
    for (a, b), w in info.transitions.items():
        T[lab[a], lab[b]] = w
    return tg, np.concatenate([W.ravel(), T.ravel()])


# ------------------------------------------------------------------------ one corpus
#: the library's methods: (solver, options); the first is the estimator's default
ZBOUND_METHODS = {
    "lbfgs-bound": {"precision": "single"},     # as ChainCRF runs it (and its evaluation)
    "lbfgs": {},
    "newton-bound": {"inner": "cg"},
    "bound": {"inner": "cg", "cg_rtol": 1e-3},
}
#: timed over ``repeats`` alternating rounds (the others run once: they are far slower)
REPEATED = ("crfsuite-lbfgs", "zbound-lbfgs-bound", "zbound-lbfgs-bound-2threads",
            "zbound-lbfgs")


def _median(xs):
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def fb_timing(objs, theta, repeats=7):
    """Median seconds of one value-and-gradient evaluation per objective (``{n_jobs: obj}``),
    the objectives alternating."""
    out = time_alternating({k: lambda obj=obj: obj.value_and_grad(theta)
                            for k, obj in objs.items()}, repeats)
    return {k: float(e["median_s"]) for k, e in out.items()}


def run_corpus(ctx, name, cfg: Config):
    from threadpoolctl import threadpool_limits

    from zbound.estimators.crf import ChainCRF
    from zbound.models.crf import chain_crf_objective
    from zbound.structured.features import attributes

    n_train, n_test = cfg.corpora[name]
    data = ctx.load(name, load, name, n_train, n_test)
    if data is None:                                # no benchmark data: skipped, said once
        return
    train, test = data
    chunked = name != "treebank"
    featurize_s, (feats, ytr, M, lengths, index, yi, classes) = timed(lambda: _featurize(train))
    crf = ChainCRF(c2=cfg.c2, n_jobs=cfg.n_jobs)     # predicts at a given theta (coef_)
    crf.index_, crf.classes_, crf.n_features_in_ = index, classes, M.shape[1]
    test_feats = [_tokens(x) for x, _ in test]
    ytest = [y for _, y in test]
    # setup_s is added to the library's times to target; obj2 has chunks for 2 threads
    setup_s, obj = timed(lambda: chain_crf_objective(M, lengths, yi, len(classes), cfg.c2,
                                                     cfg.n_jobs))
    setup2_s, obj2 = timed(lambda: chain_crf_objective(M, lengths, yi, len(classes), cfg.c2, 2))
    items = [[dict(attributes(tok)) for tok in seq] for seq in feats]
    common = dict(task="train", dataset=name,
                  setting=f"c2={cfg.c2},n={len(train)},m={len(crf.classes_)}")
    size = dict(n_train=len(train), n_test=len(test), n_tokens=int(lengths.sum()),
                n_params=obj.n_params, n_labels=len(crf.classes_), featurize_s=featurize_s,
                setup_s=setup_s)

    def test_scores(theta):
        crf.coef_ = theta
        return scores(crf.predict(test_feats), ytest, chunked)

    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        state = {}

        runs = _rounds(ctx, name, cfg, (obj, setup_s), (obj2, setup2_s), state,
                       lambda first: _crfsuite_lbfgs(items, ytr, cfg, tmp, state, first, crf, obj,
                                                     (test_feats, ytest, chunked)))
        target = state["target"]
        _crfsuite_record(ctx, runs["crfsuite-lbfgs"], state, common, size)
        ctx.log(f"{name}: CRFsuite l2sgd")
        with PeakRSS() as mem:
            path, trace, total = crfsuite_run(items, ytr, cfg.c2, "l2sgd", cfg.sgd_epochs, tmp)
        tg, th = crfsuite_theta(path, crf)
        fin = obj.value(th)
        acc, f1 = scores([tg.tag(pycrfsuite_items(x)) for x in test_feats], ytest, chunked)
        ctx.writer.add_record(BenchRecord(**common, method="crfsuite-l2sgd", peer=True,
                                          reached=fin <= target, time_to_target_s=total
                                          if fin <= target else None, evaluations=len(trace),
                                          final_objective=fin, target_objective=target,
                                          metrics={**size, "iterations": len(trace),
                                                   "epochs": cfg.sgd_epochs,
                                                   "total_time_s": total, "test_accuracy": acc,
                                                   "f1": f1, "peak_memory_mb": mem.mb}))
        for method in ("newton-bound", "bound"):
            ctx.log(f"{name}: zbound {method}")
            runs[f"zbound-{method}"] = [_zbound_run(
                obj, method, cfg.newton_iter if method == "newton-bound" else cfg.bound_iter,
                state["target"], setup_s, cfg)]
        for method in [*ZBOUND_METHODS, "lbfgs-bound-2threads"]:
            _zbound_record(ctx, method, runs[f"zbound-{method}"], test_scores, target, cfg,
                           common, size)
        ctx.log(f"{name}: forward-backward with 1 and 2 threads")
        fb = fb_timing({1: obj, 2: obj2}, state["theta"])
        for k, sec in fb.items():
            ctx.writer.add_record(BenchRecord(
                task="forward-backward", dataset=name, setting=common["setting"],
                method=f"n_jobs={k}", reached=True, final_objective=None,
                metrics={**size, "value_and_grad_s": sec, "speedup": fb[1] / sec}))
        if name in cfg.memory_corpora:
            record_memory(ctx, name, n_train, cfg, common, size)
        ctx.log(f"{name}: zbound sgd and partial_fit")
        for method in ("sgd", "partial_fit"):
            _stochastic_record(ctx, name, cfg, method, crf, obj, (feats, ytr),
                               (test_feats, ytest, chunked), common, size, target)


def _rounds(ctx, name, cfg, one, two, state, crfsuite) -> dict[str, list[dict]]:
    """The alternating rounds: CRFsuite L-BFGS (the first sets the target), then the
    library's lbfgs-bound and lbfgs on one thread (``one``: objective, set-up seconds) and
    lbfgs-bound on two (``two``)."""
    runs: dict[str, list[dict]] = {k: [] for k in REPEATED}
    for rep in range(cfg.repeats):
        ctx.log(f"{name}: round {rep + 1}/{cfg.repeats}: CRFsuite L-BFGS, zbound "
                "lbfgs-bound (1 and 2 threads), zbound lbfgs")
        runs["crfsuite-lbfgs"].append(crfsuite(rep == 0))
        for method in ("lbfgs-bound", "lbfgs"):
            runs[f"zbound-{method}"].append(_zbound_run(one[0], method, cfg.lbfgs_iter,
                                                        state["target"], one[1], cfg))
        runs["zbound-lbfgs-bound-2threads"].append(
            _zbound_run(two[0], "lbfgs-bound", cfg.lbfgs_iter, state["target"], two[1], cfg))
    return runs


def _crfsuite_lbfgs(items, ytr, cfg, tmp, state, first, crf, obj, test) -> dict:
    """One CRFsuite L-BFGS training; the first also sets the shared target (its objective
    under ours, times 1 + REL_TARGET) and its test scores in ``state``."""
    with PeakRSS() as mem:
        path, trace, total = crfsuite_run(items, ytr, cfg.c2, "lbfgs", cfg.lbfgs_iter, tmp)
    if first:
        test_feats, ytest, chunked = test
        tg, th_cs = crfsuite_theta(path, crf)
        f_ours = obj.value(th_cs)
        state.update(target=f_ours * (1 + REL_TARGET), f_ours=f_ours, theta=th_cs,
                     f_cs=trace[-1][1],
                     scores=scores([tg.tag(pycrfsuite_items(x)) for x in test_feats],
                                   ytest, chunked))
    target = state["target"]
    t_hit = next((t for t, f in trace if f <= target), None)
    return dict(t_hit=t_hit, total=total, iterations=len(trace), mem=mem.mb, trace=trace,
                iter_hit=next((i + 1 for i, (_, f) in enumerate(trace) if f <= target), None))


def _zbound_run(objective, method, max_iter, target, setup, cfg) -> dict:
    """One of the library's solvers from zero to ``target`` (``setup``, the objective's
    construction, added to its times), its curve and counts."""
    from zbound.solvers import SolverPolicy, minimize
    from zbound.solvers.quasi_newton import LBFGSBound

    curve = Curve()
    opts = dict(ZBOUND_METHODS[method])
    if method == "lbfgs-bound":
        # as ChainCRF(precision="auto") evaluates it
        opts["evaluation"] = SolverPolicy.crf_evaluation(objective, method, "auto")

    def cb(x, f):
        curve(f)
        return curve.points[-1][0] > cfg.time_limit_s

    with PeakRSS() as mem:
        curve.restart()
        res = minimize(objective, np.zeros(objective.n_params),
                       method=LBFGSBound if method == "lbfgs-bound" else method,
                       target=target, max_iter=max_iter, tol=1e-10, ftol=0.0,
                       callback=cb, **opts)
        total = curve.elapsed()
    trace = curve.points
    if res.target_reached and (not trace or trace[-1][1] > res.fun):
        trace.append((total, res.fun))     # SciPy stops on the target before the callback
    # a run that reached the target stopped there (float32 values early in the trace are
    # estimates: the target is decided in float64)
    t_hit = total + setup if res.target_reached else \
        next((t + setup for t, f in trace if f <= target), None)
    return dict(t_hit=t_hit, total=total + setup, iterations=res.nit, mem=mem.mb,
                res=res, trace=trace, counts=res.counts, info=res.info)


def _tokens(x):
    """The token features of one sentence (words, and tags where the corpus has them)."""
    from zbound.structured.features import token_features

    return token_features([w[0] for w in x], [w[1] for w in x] if len(x[0]) > 1 else None)


def _featurize(train):
    """(token features, labels, feature matrix, lengths, index, label codes, classes)."""
    from zbound.structured.features import encode_labels, featurize

    feats = [_tokens(x) for x, _ in train]
    ytr = [y for _, y in train]
    M, lengths, index = featurize(feats, None, grow=True)
    yi, classes = encode_labels(ytr, lengths)
    return feats, ytr, M, lengths, index, yi, classes


def _crfsuite_record(ctx, cs, state, common, size) -> None:
    """CRFsuite L-BFGS over the timed rounds, its first round's trace and test scores."""
    acc, f1 = state["scores"]
    ctx.writer.add_record(BenchRecord(
        **common, method="crfsuite-lbfgs", peer=True, reached=cs[0]["t_hit"] is not None,
        time_to_target_s=_median([r["t_hit"] for r in cs]), evaluations=cs[0]["iterations"],
        final_objective=state["f_ours"], target_objective=state["target"],
        metrics={**size, "iterations": cs[0]["iterations"],
                 "iterations_to_target": cs[0]["iter_hit"],
                 "times_to_target_s": [r["t_hit"] for r in cs],
                 "total_time_s": _median([r["total"] for r in cs]), "test_accuracy": acc,
                 "f1": f1, "peak_memory_mb": cs[0]["mem"], "crfsuite_loss": state["f_cs"],
                 "objective_check_rel": abs(state["f_ours"] - state["f_cs"])
                 / abs(state["f_cs"]),
                 "trace": [[t, f] for t, f in cs[0]["trace"]]}))


def _zbound_record(ctx, method, rs, test_scores, target, cfg, common, size) -> None:
    """One of the library's methods over its rounds (the first round's result scored)."""
    r0 = rs[0]
    acc, f1 = test_scores(r0["res"].x)
    ctx.writer.add_record(BenchRecord(
        **common, method=f"zbound-{method}", default=method == "lbfgs-bound",
        reached=r0["t_hit"] is not None,
        time_to_target_s=_median([r["t_hit"] for r in rs])
        if all(r["t_hit"] is not None for r in rs) else None,
        evaluations=sum(r0["counts"].values()), final_objective=r0["res"].fun,
        target_objective=target,
        metrics={**size, "iterations": r0["iterations"],
                 "times_to_target_s": [r["t_hit"] for r in rs],
                 "total_time_s": _median([r["total"] for r in rs]),
                 "test_accuracy": acc, "f1": f1, "peak_memory_mb": r0["mem"],
                 "counts": r0["counts"], "info": r0["info"],
                 "n_jobs": 2 if method.endswith("2threads") else cfg.n_jobs,
                 "trace": [[t, f] for t, f in r0["trace"]]}))


def _stochastic_record(ctx, name, cfg, method, crf, obj, train, test, common, size, target):
    """``ChainCRF(solver="adagrad")``: ``fit`` on the corpus, or ``partial_fit`` over a
    stream of it, scored on the shared objective in the training vocabulary."""
    from zbound.estimators.crf import ChainCRF

    (feats, ytr), (test_feats, ytest, chunked) = train, test
    n_train = len(ytr)
    est = ChainCRF(c2=cfg.c2, solver="adagrad", max_iter=cfg.sgd_epochs, n_jobs=cfg.n_jobs,
                   batch_size=cfg.batch_size, random_state=0, n_samples_hint=n_train)

    def train_it():
        if method == "sgd":
            est.fit(feats, ytr)
            return
        for _ in range(cfg.stream_epochs):
            for X_b, y_b in stream(name, cfg.corpora[name][0], 64):
                est.partial_fit(X_b, y_b, classes=crf.classes_)

    with PeakRSS() as mem:
        total, _ = timed(train_it)
    acc, f1 = scores(est.predict(test_feats), ytest, chunked)
    fin = obj.value(_in_vocabulary(est, crf))
    ctx.writer.add_record(BenchRecord(
        **common, method=f"zbound-{method}", reached=fin <= target,
        time_to_target_s=total if fin <= target else None, final_objective=fin,
        target_objective=target,
        metrics={**size, "total_time_s": total, "test_accuracy": acc, "f1": f1,
                 "peak_memory_mb": mem.mb,
                 "epochs": cfg.stream_epochs if method == "partial_fit" else cfg.sgd_epochs}))


def _in_vocabulary(est, crf) -> np.ndarray:
    """``est``'s weights in ``crf``'s training vocabulary and label order (streaming grows a
    vocabulary of its own)."""
    ours = est.index_.vocabulary_
    perm = [list(est.classes_).index(c) for c in crf.classes_]
    W = np.zeros((crf.index_.n_features, len(crf.classes_)))
    for a, j in crf.index_.vocabulary_.items():
        k = ours.get(a)
        if k is not None and k < est.state_weights_.shape[0]:
            W[j] = est.state_weights_[k, perm]
    return np.concatenate([W.ravel(), est.transitions_[np.ix_(perm, perm)].ravel()])


def _load_kernels() -> None:
    """Load every compiled chain kernel (where they run) on a tiny chain, as importing a module
    would: value and gradient in float64 and float32, the Hessian and bound products,
    Viterbi. Their runtime (Numba and its LLVM) and their loading or compiling are a fixed
    cost of the process, not of the data: timed runs and memory probes start after it (the
    memory probes report it apart)."""
    import scipy.sparse as sp

    from zbound.models.crf import ChainCRFLoss
    from zbound.structured import compiled

    if not compiled.available():
        return
    X = sp.identity(3, format="csr")
    loss = ChainCRFLoss(X, [2, 1], [0, 1, 0], 2)
    theta = np.zeros(loss.n_params)
    loss.single_precision().value_and_grad(theta)
    loss.hessian(theta).matvec(theta)
    loss.majorizer(theta).curvature.matvec(theta)
    loss.predict(theta, X, [2, 1])


def _memory_probe(name, n_train, method, c2, lbfgs_iter, stream_epochs, batch_size):
    """Peak resident memory (MB) of one training run in this (fresh) process, above the
    resident memory once the corpus is loaded and featurized into feature dicts (for
    ``partial_fit``: once the modules are imported; it reads the corpus through
    :func:`stream`). The library's runs load the compiled kernels first and print their
    runtime's resident memory as a line of JSON before the result."""
    from threadpoolctl import threadpool_limits

    from zbound.estimators.crf import ChainCRF
    from zbound.structured.features import attributes, token_features
    if method != "crfsuite-lbfgs":
        runtime = PeakRSS._rss()
        _load_kernels()
        runtime = PeakRSS._rss() - runtime
        print(json.dumps({"kernel_runtime_mb": runtime}))
    with threadpool_limits(1):
        if method == "partial_fit":
            est = ChainCRF(c2=c2, solver="adagrad", batch_size=batch_size, n_samples_hint=n_train,
                           random_state=0)
            classes = sorted({t for _, y in load(name, n_train, 0)[0] for t in y}, key=str)
            with PeakRSS() as mem:
                for _ in range(stream_epochs):
                    for X_b, y_b in stream(name, n_train, 64):
                        est.partial_fit(X_b, y_b, classes=classes)
            return mem.mb
        train, _ = load(name, n_train, 0)
        feats = [token_features([w[0] for w in x], [w[1] for w in x] if len(x[0]) > 1
                                else None) for x, _ in train]
        ytr = [y for _, y in train]
        if method == "crfsuite-lbfgs":
            items = [[dict(attributes(tok)) for tok in seq] for seq in feats]
            with tempfile.TemporaryDirectory() as tmp, PeakRSS() as mem:
                crfsuite_run(items, ytr, c2, "lbfgs", lbfgs_iter, tmp)
            return mem.mb
        with PeakRSS() as mem:
            ChainCRF(c2=c2, max_iter=lbfgs_iter).fit(feats, ytr)
        return mem.mb


def memory_probes(name, n_train, cfg) -> dict:
    """{method: peak MB} for CRFsuite L-BFGS, the default ``fit`` (both ``cfg.memory_iter``
    iterations: the L-BFGS history is full after 10, so the peak is reached) and streaming
    ``partial_fit`` (``cfg.stream_epochs`` passes over :func:`stream`), each in a fresh
    process (in the bench's own process the memory freed by earlier runs is reused, so an
    increase of its resident memory undercounts)."""
    import subprocess
    import sys
    out, runtime = {}, {}
    for method in ("crfsuite-lbfgs", "lbfgs-bound", "partial_fit"):
        code = ("import json, sys; from zbound_benchmarks.suites.crf.runs import _memory_probe; "
                "print(json.dumps(_memory_probe(*json.loads(sys.argv[1]))))")
        args = json.dumps([name, n_train, method, cfg.c2, cfg.memory_iter, cfg.stream_epochs,
                           cfg.batch_size])
        res = subprocess.run([sys.executable, "-c", code, args], capture_output=True,
                             text=True, check=True, env=os.environ.copy())
        lines = res.stdout.strip().splitlines()
        out[method] = float(lines[-1])
        for line in lines[:-1]:
            if line.startswith("{"):
                runtime[method] = json.loads(line).get("kernel_runtime_mb")
    return out, runtime


def record_memory(ctx, name, n_train, cfg, common, size):
    ctx.log(f"{name}: peak memory of CRFsuite L-BFGS, fit and partial_fit in fresh processes")
    peaks, runtime = memory_probes(name, n_train, cfg)
    for method, mb in peaks.items():
        extra = {"kernel_runtime_mb": runtime[method]} if method in runtime else {}
        ctx.writer.add_record(BenchRecord(
            task="memory", dataset=name, setting=common["setting"],
            method=method if method.startswith("crfsuite") else f"zbound-{method}",
            peer=method.startswith("crfsuite"), reached=True, final_objective=None,
            metrics={**size, "peak_memory_mb": mb, **extra}))


def pycrfsuite_items(seq):
    import pycrfsuite

    from zbound.structured.features import attributes
    return pycrfsuite.ItemSequence([dict(attributes(tok)) for tok in seq])


def _read_lazily(name, n_train):
    """Training sentences as (tokens, labels), read from the file one at a time (CoNLL-2000,
    CoNLL-2002); the treebank sample (small, with traces to drop) through :func:`load`."""
    if name == "treebank":
        yield from load(name, n_train, 0)[0]
        return
    import gzip

    from zbound.datasets import data_file
    rel = "conll2000/train.txt.gz" if name == "conll2000" else \
        "conll2002/nltk_with_pos/esp.train.gz"
    count, cur = 0, []
    with gzip.open(data_file(rel), "rt", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            if fields:
                cur.append(fields)
                continue
            if cur:
                yield [(w, p) for w, p, _ in cur], [c for *_, c in cur]
                cur = []
                count += 1
                if n_train is not None and count >= n_train:
                    return
    if cur:
        yield [(w, p) for w, p, _ in cur], [c for *_, c in cur]


def stream(name, n_train, batch_size):
    """A generator of mini-batches read from the file and featurized lazily (neither the
    corpus nor its feature dicts are ever held whole)."""
    from zbound.structured.features import token_features
    part = []
    for sent in _read_lazily(name, n_train):
        part.append(sent)
        if len(part) == batch_size:
            yield ([token_features([w[0] for w in x], [w[1] for w in x] if len(x[0]) > 1
                                   else None) for x, _ in part], [y for _, y in part])
            part = []
    if part:
        yield ([token_features([w[0] for w in x], [w[1] for w in x] if len(x[0]) > 1
                               else None) for x, _ in part], [y for _, y in part])


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    _load_kernels()             # compiled once per install (cached), loaded once per process
    ctx.start("crf", len(cfg.corpora))
    for name in cfg.corpora:
        run_corpus(ctx, name, cfg)
        ctx.advance()
