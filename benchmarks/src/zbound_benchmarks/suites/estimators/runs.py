"""Running ``estimators``: each of the library's estimators against the tool its user would
otherwise pick, on the same rows, with one BLAS thread, methods alternating over repeats,
medians.

Tasks
    ``latent``: ``LatentLogisticRegression()`` (2 components per class) against one
    ``LogisticRegression()`` fit on scaled digits and breast_cancer. Times on a 75 / 25 split;
    test accuracy by 5-fold cross-validation (out-of-fold, every row once:
    ``metrics["cv_accuracy"]``) beside the split's.
    ``moe``: ``MixtureOfExperts(k)`` on class labels (k = 2, 4) against the same.
    ``sgd``: ``BoundSGDClassifier()`` against ``SGDClassifier(loss="log_loss")`` on scaled
    digits and breast_cancer, with ``LogisticRegression()``'s test accuracy as the reference
    (one pass before the finish, ``max_iter=1``, and the epochs alone, ``finish_tol=None``,
    beside them), and on tf-idf rows (``Config.sgd_sparse``; the split's test accuracy).
    ``partial-fit``: rows per second of ``partial_fit`` over a stream of chunks, against
    ``SGDClassifier.partial_fit``.
    ``stream-gap``: ``BoundSGDClassifier()`` and ``SGDClassifier(loss="log_loss")`` streamed
    by ``partial_fit`` over a few chunks of two-class draws in raw units and standardized:
    the objective's relative gap to the batch optimum (``metrics["objective_gap"]``).
    ``sparse``: ``BoundLogisticRegression()`` against liblinear (two classes), lbfgs,
    newton-cg and saga on tf-idf rows (synthetic shapes; SSL Text where its data is there).
    ``small``: ``BoundLogisticRegression()`` against lbfgs on digits and a 5-class synthetic
    problem, weak to strong regularization.

Matched objective (``sparse``, ``small``): every fit is scored on the one objective both
minimize (:func:`.problems.logistic_objective`). The library's fit records its trace, so its
time to reach each peer's final objective (within ``MATCH_RTOL`` of the best objective, the
precision at which two converged fits agree) is read off it (where its default ``tol``
stopped above, off the trace of a fit with ``tol=1e-8``, what a user asking for that
objective would run) (the fit's set-up time plus the
trace's seconds to that objective): ``metrics["time_to_peer_objective_s"]``. liblinear
penalizes the intercept, so its objective is another one; its time is tabulated all the same.
Peak memory: tracemalloc in a separate, untimed fit (what NumPy and SciPy allocate; compiled
code's own buffers, liblinear's copy of the data among them, are not seen).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from zbound_benchmarks.harness import Cell, Method, fit, run_cells, suite_config
from zbound_benchmarks.suites.estimators.config import STREAM_GAP_MAX, Config, config
from zbound_benchmarks.suites.estimators.problems import (
    cv_accuracy,
    logistic_objective,
    scaled_split,
    stream,
    synthetic_multiclass,
    two_class_draw,
    zipf_text,
)
from zbound_benchmarks.timing import thread_limit, time_alternating

#: ``ctx.options`` this suite reads: ``config``, a :class:`Config` replacing the run's own
OPTIONS = ("config",)
#: Two objectives within this relative difference count as the same (``sparse``, ``small``).
MATCH_RTOL = 1e-6
#: The library's default in each ratio task (``latent``, ``moe``, ``sgd``, ``partial-fit``).
DEFAULTS = ("zbound-latent", "zbound-moe", "zbound-sgd")


def _accuracy(est, Xt, yt) -> float:
    return float(np.mean(est.predict(Xt) == yt))


def _methods(calls: dict[str, Any]) -> list[Method]:
    return [Method(n, c, peer=n.startswith("sklearn"), default=n in DEFAULTS)
            for n, c in calls.items()]


# -- a small multiple of the tool a user would otherwise pick ----------------------------------
def _ratio_cell(task, dataset, setting, makers, X, y, Xt, yt, peer, cv_data=None,
                cv_methods=None, memory=True) -> Cell:
    """Every maker fitted on (X, y): its time as a multiple of ``peer``'s, its test accuracy
    on (Xt, yt) and, on a bundled ``cv_data`` set, by cross-validation (of ``cv_methods``,
    default all), the peer's beside it."""
    def score(timing):
        cv = {n: cv_accuracy(m, cv_data) for n, m in makers.items()
              if cv_methods is None or n in cv_methods} if cv_data else {}
        base, base_acc = timing[peer]["median_s"], _accuracy(timing[peer]["result"], Xt, yt)
        out = {}
        for name, entry in timing.items():
            est = entry["result"]
            metrics = {"test_accuracy": _accuracy(est, Xt, yt),
                       "ratio_to_peer": entry["median_s"] / base, "peer_accuracy": base_acc,
                       "cv_accuracy": cv.get(name), "peer_cv_accuracy": cv.get(peer)}
            for attr in ("n_iter_", "converged_", "objective_", "solver_", "expert_"):
                val = getattr(est, attr, None)
                if val is not None:
                    metrics[attr.rstrip("_")] = val.item() if hasattr(val, "item") else val
            out[name] = {"metrics": metrics, "final_objective": metrics.get("objective")}
        return out
    return Cell(task, dataset, setting, _methods({n: fit(m, X, y) for n, m in makers.items()}),
                score, memory)


def latent_cells(cfg: Config) -> Iterator[Cell]:
    from sklearn.linear_model import LogisticRegression

    from zbound import LatentLogisticRegression

    for name in ("digits", "breast_cancer"):
        makers = {"sklearn-logistic": LogisticRegression}
        for solver in cfg.latent_solvers:
            if solver == "squarem" and name == "digits":
                continue              # over 1000 LogisticRegression fits (docs/latent.md)
            kw = {} if solver is None else {"solver": solver}
            makers["zbound-latent" + ("" if solver is None else f"-{solver}")] = \
                lambda kw=kw: LatentLogisticRegression(random_state=0, **kw)
        yield _ratio_cell("latent", name, "n_components=2", makers, *_split(name),
                          "sklearn-logistic", name, memory=cfg.memory)


def _split(name):
    X, Xt, y, yt = scaled_split(name)
    return X, y, Xt, yt


def moe_cells(cfg: Config) -> Iterator[Cell]:
    from sklearn.linear_model import LogisticRegression

    from zbound import MixtureOfExperts

    for k in cfg.moe_experts:
        makers = {"sklearn-logistic": LogisticRegression}
        for method in cfg.moe_methods:
            kw = {} if method is None else {"solver": method}
            makers["zbound-moe" + ("" if method is None else f"-{method}")] = \
                lambda kw=kw, k=k: MixtureOfExperts(k, random_state=0, **kw)
        yield _ratio_cell("moe", "digits", f"k={k}", makers, *_split("digits"),
                          "sklearn-logistic", "digits", ("sklearn-logistic", "zbound-moe"),
                          memory=cfg.memory)


def sgd_cells(cfg: Config) -> Iterator[Cell]:
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.model_selection import train_test_split

    from zbound import BoundSGDClassifier

    makers = {"sklearn-sgd": lambda: SGDClassifier(loss="log_loss", random_state=0),
              "sklearn-logistic": LogisticRegression, "zbound-sgd": BoundSGDClassifier,
              # one stochastic pass as the finish's warm start (the default runs none)
              "zbound-sgd-pass": lambda: BoundSGDClassifier(max_iter=1),
              # the epochs alone, without the full-batch finish (the papers' method)
              "zbound-sgd-epochs": lambda: BoundSGDClassifier(finish_tol=None)}
    # digits, and breast_cancer: a few hundred rows, where SGDClassifier's compiled epochs
    # take about 2 ms and any fit's fixed cost shows
    for name in ("digits", "breast_cancer"):
        yield _ratio_cell("sgd", name, "alpha=1e-4", makers, *_split(name), "sklearn-sgd",
                          name, memory=cfg.memory)
    # wide sparse rows (text): the split's test accuracy
    t, d, k = cfg.sgd_sparse
    Xs, ys = zipf_text(t, d, k, cfg.sparse_nnz)
    X, Xt, y, yt = train_test_split(Xs, ys, test_size=0.25, random_state=0, stratify=ys)
    yield _ratio_cell("sgd", f"zipf-tfidf-{t}x{d}-{k}cls", "alpha=1e-4", makers, X, y, Xt, yt,
                      "sklearn-sgd", memory=cfg.memory)


def _streamed(make, X, y, parts, classes, passes: int = 1):
    """A call that feeds ``make()`` the row blocks ``parts`` of (X, y) by ``partial_fit``,
    ``passes`` times over, and returns the estimator."""
    def run():
        est = make()
        for _ in range(passes):
            for rows in parts:
                est.partial_fit(X[rows], y[rows], classes=classes)
        return est
    return run


def partial_fit_cells(cfg: Config) -> Iterator[Cell]:
    from sklearn.linear_model import SGDClassifier

    from zbound import BoundSGDClassifier

    t, d, k, chunk = cfg.stream
    X, y_all = stream(t, d, k)
    # the multiclass stream, and the same rows with two classes (a binary stream runs another
    # method: the Jaakkola-Jordan bound of one weight vector against SGDClassifier's one
    # binary model, where the multiclass stream pits a softmax against one-vs-rest)
    for n_classes in dict.fromkeys((k, 2)):
        y = y_all if n_classes == k else (y_all >= k // 2).astype(int)
        classes = np.arange(n_classes)

        parts = [slice(a, a + chunk) for a in range(0, t, chunk)]

        def feed(make, y=y, classes=classes, parts=parts):
            return _streamed(make, X, y, parts, classes)

        def score(timing, y=y):
            base = timing["sklearn-sgd"]["median_s"]
            return {n: {"metrics": {
                "rows_per_s": t / e["median_s"], "ratio_to_peer": e["median_s"] / base,
                "train_accuracy": _accuracy(e["result"], X, y)}} for n, e in timing.items()}

        yield Cell("partial-fit", "synthetic-multinomial",
                   f"t={t},d={d},classes={n_classes},chunk={chunk}",
                   _methods({"sklearn-sgd": feed(lambda: SGDClassifier(loss="log_loss",
                                                                       random_state=0)),
                             "zbound-sgd": feed(BoundSGDClassifier)}), score, memory=False)


def _batch_optimum(X, y, alpha: float) -> float:
    """The mean-form objective's minimum: the lower of the library's tight full-batch fit and
    scikit-learn's lbfgs at a tight tol (C = 1 / (alpha n), the same problem)."""
    from sklearn.linear_model import LogisticRegression

    from zbound import BoundSGDClassifier

    ours = fit(lambda: BoundSGDClassifier(alpha=alpha, finish_tol=1e-10, tol=None), X, y)()
    theirs = fit(lambda: LogisticRegression(C=1.0 / (alpha * len(y)), tol=1e-10,
                                            max_iter=10_000), X, y)()
    return min(ours.objective(X, y),
               _mean_objective(X, y, theirs.coef_, theirs.intercept_, alpha))


def _mean_objective(X, y, coef, intercept, alpha: float) -> float:
    """Mean log-loss + alpha/2 ||coef||^2 (SGDClassifier's and BoundSGDClassifier's J)."""
    with np.errstate(all="ignore"):
        return logistic_objective(X, y, coef, intercept, 1.0 / (alpha * len(y))) / len(y)


def stream_gap_cells(cfg: Config) -> Iterator[Cell]:
    """Two-class streams, raw and standardized: ``passes`` over the rows in a few chunks by
    ``partial_fit`` at default settings, the objective's gap to the batch optimum."""
    from sklearn.linear_model import SGDClassifier

    from zbound import BoundSGDClassifier

    t, d, passes = cfg.stream_gap
    alpha = 1e-4                              # both estimators' default
    for seed in range(cfg.stream_gap_draws):
        for raw in (True, False):
            X, y = two_class_draw(t, d, seed, raw)
            best = _batch_optimum(X, y, alpha)
            for n_chunks in cfg.stream_gap_chunks:
                parts = np.array_split(np.arange(t), n_chunks)

                def feed(make, X=X, y=y, parts=parts):
                    return _streamed(make, X, y, parts, [0, 1], passes)

                def score(timing, X=X, y=y, best=best, raw=raw, n_chunks=n_chunks):
                    out = {}
                    for n, e in timing.items():
                        f = _mean_objective(X, y, e["result"].coef_, e["result"].intercept_,
                                            alpha)
                        gap = (f - best) / abs(best) if np.isfinite(f) else None
                        out[n] = {"final_objective": f if np.isfinite(f) else None,
                                  "target_objective": best,
                                  "reached": gap is not None and gap <= STREAM_GAP_MAX,
                                  "metrics": {"objective_gap": gap, "raw": raw,
                                              "chunks": n_chunks, "passes": passes}}
                    return out

                yield Cell("stream-gap", f"two-class-{t}x{d}-{'raw' if raw else 'standard'}",
                           f"draw={seed},chunks={n_chunks}",
                           _methods({"sklearn-sgd": feed(lambda: SGDClassifier(
                               loss="log_loss", alpha=alpha, random_state=0)),
                               "zbound-sgd": feed(BoundSGDClassifier)}), score, memory=False)


# -- logistic regression at a matched objective ---------------------------------------------------
def _logistic_cell(cfg: Config, task: str, dataset: str, X, y, C: float, peers,
                   Xt=None, yt=None) -> Cell:
    from sklearn.linear_model import LogisticRegression

    from zbound import BoundLogisticRegression

    methods = [Method(f"sklearn-{s}", fit(lambda s=s: LogisticRegression(
        C=C, solver=s, max_iter=10_000), X, y), peer=True) for s in peers]
    methods.append(Method("zbound", fit(lambda: BoundLogisticRegression(C=C), X, y),
                          default=True))

    def score(timing):
        objective = {name: logistic_objective(X, y, e["result"].coef_, e["result"].intercept_,
                                              C) for name, e in timing.items()}
        best = min(objective.values())
        fastest = min((e["median_s"], n) for n, e in timing.items() if n != "zbound"
                      and n != "sklearn-liblinear")
        out = {}
        for name, entry in timing.items():
            f = objective[name]
            metrics: dict[str, Any] = {
                "objective_gap": (f - best) / max(1.0, abs(best)),
                "n_iter": int(np.max(getattr(entry["result"], "n_iter_", [0])))}
            if Xt is not None:
                metrics["test_accuracy"] = _accuracy(entry["result"], Xt, yt)
            if name == "zbound":
                metrics.update(_matched(cfg, objective, best, entry, fastest, timing,
                                        fit(lambda: BoundLogisticRegression(C=C, tol=1e-8),
                                            X, y)))
            out[name] = {"metrics": metrics, "final_objective": f, "target_objective": best}
        return out
    return Cell(task, dataset, f"C={C:g}", methods, score, cfg.memory)


def _matched(cfg, objective, best, entry, fastest, timing, tight_fit) -> dict[str, Any]:
    """The library's seconds to each peer's objective, and its ratios to the fastest peer."""
    metrics: dict[str, Any] = {}
    reach = _reach(objective, best, entry)
    if any(v is None for v in reach.values()):
        # the default tol stopped above a peer's objective: the time a user setting a tighter
        # tol takes to reach it
        tight = time_alternating({"tight": tight_fit}, repeats=cfg.repeats,
                                 min_time=cfg.min_time)["tight"]
        for peer, v in _reach(objective, best, tight).items():
            if reach[peer] is None:
                reach[peer] = v
        metrics["tight_tol_s"] = tight["median_s"]
    metrics["time_to_peer_objective_s"] = reach
    metrics["fastest_peer"] = fastest[1]
    hit = reach.get(fastest[1])
    metrics["ratio_to_fastest_peer"] = None if hit is None else hit / fastest[0]
    peak = timing[fastest[1]]["peak_mb"]
    metrics["memory_ratio_to_fastest_peer"] = (
        None if not peak or entry["peak_mb"] is None else entry["peak_mb"] / peak)
    return metrics


def _reach(objective: dict, best: float, entry: dict) -> dict:
    """Seconds the library's timed fit ``entry`` takes to each peer's final objective (within
    ``MATCH_RTOL``): the share of its last fit's wall time that passed before its trace
    reached it (set-up included), times the median fit time; None where it stopped above it.
    The share, not the last fit's own seconds: one fit of a few milliseconds can run 30% slow
    (its neighbours in the back-to-back run did not), and the median is the fit's time."""
    trace = entry["result"].solver_result_.trace
    out = {}
    for peer, fp in objective.items():
        if peer in ("zbound", "sklearn-liblinear"):
            continue
        hit = trace.time_to(fp + MATCH_RTOL * max(1.0, abs(best)))
        after = None if hit is None else float(trace.seconds[-1]) - hit   # solver time past it
        out[peer] = None if hit is None else \
            entry["median_s"] * max(0.0, 1.0 - after / entry["last_s"])
    return out


def sparse_cells(cfg: Config, ctx) -> Iterator[Cell]:
    from zbound.datasets import load_ssl_text

    for t, d, k in cfg.sparse_shapes:
        X, y = zipf_text(t, d, k, cfg.sparse_nnz)
        peers = (("liblinear",) if k == 2 else ()) + ("lbfgs", "newton-cg", "saga")
        if t * k > 1_000_000:
            peers = tuple(p for p in peers if p != "saga")     # minutes per fit
        for C in cfg.sparse_cs:
            yield _logistic_cell(cfg, "sparse", f"zipf-tfidf-{t}x{d}-{k}cls", X, y, C, peers)
    ds = ctx.load("ssl-text", load_ssl_text)
    if ds is not None:
        rows = np.random.default_rng(0).permutation(ds.X.shape[0])[:1200]   # an 80% split
        X, y = ds.X[rows], np.asarray(ds.y)[rows]
        for C in cfg.sparse_cs:
            yield _logistic_cell(cfg, "sparse", "ssl-text", X, y, C,
                                 ("liblinear", "lbfgs", "newton-cg", "saga"))


def small_cells(cfg: Config) -> Iterator[Cell]:
    problems = {"digits": scaled_split("digits"),
                "synthetic-5cls": synthetic_multiclass(3000, 20, 5),
                "synthetic-2cls": synthetic_multiclass(5000, 30, 2)}
    for name, (X, Xt, y, yt) in problems.items():
        for C in cfg.small_cs:
            yield _logistic_cell(cfg, "small", name, X, y, C, ("lbfgs", "newton-cg"), Xt, yt)


#: task -> the cells it declares
TASKS = {"latent": latent_cells, "moe": moe_cells, "sgd": sgd_cells,
         "partial-fit": partial_fit_cells, "stream-gap": stream_gap_cells,
         "sparse": sparse_cells, "small": small_cells}


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    steps = (2 + len(cfg.moe_experts) + 3 + len(dict.fromkeys((cfg.stream[2], 2)))
             + 2 * cfg.stream_gap_draws * len(cfg.stream_gap_chunks)
             + (len(cfg.sparse_shapes) + 1) * len(cfg.sparse_cs) + 3 * len(cfg.small_cs))
    ctx.start("estimators", steps)
    t0 = time.perf_counter()
    with thread_limit(1):
        for task, cells in TASKS.items():
            run_cells(ctx, cells(cfg, ctx) if task == "sparse" else cells(cfg),
                      cfg.repeats, cfg.min_time)
    ctx.writer.set_extra("config", {"quick": ctx.quick, "repeats": cfg.repeats,
                                    "min_time_s": cfg.min_time,
                                    "sparse_shapes": [list(s) for s in cfg.sparse_shapes],
                                    "elapsed_s": time.perf_counter() - t0})
