"""Running ``sparse``: one :class:`~zbound_benchmarks.harness.Cell` with a
:class:`~zbound_benchmarks.harness.Target` per data set and strength.

The objective is scikit-learn's L1 logistic regression without intercept,
``C sum_j log-loss_j + ||W||_1`` (celer fits no intercept, so none of the methods does),
computed by :func:`objective` from each method's coefficients. Two-class cells: the
library's default (``BoundLogisticRegression(penalty="l1", fit_intercept=False)``), skglm's
``SparseLogisticRegression`` (alpha = 1 / (C n), its scaling of the same objective), celer's
``LogisticRegression``, liblinear and saga, their iteration limits raised so that the
tolerance decides where they stop (saga's epochs capped by ``Config.saga_max_iter``; every
search by ``Config.budget_s``). Multinomial cells: the library and saga (skglm,
celer and liblinear fit no multinomial L1 model). A peer that is not installed is left out
and named in the record set's ``extra``.

Strength: C is chosen per data set so that the library's fit has about the configured
fraction of nonzero coefficients: from C_min = 1 / ||X^T (p0 - Y)||_inf (the largest C with
an all-zero fit), by bisection in log C on fits at a loose tolerance.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from zbound_benchmarks.harness import Cell, Method, Target, run_cells, suite_config
from zbound_benchmarks.suites.sparse.config import REL_TARGET, Config, config
from zbound_benchmarks.timing import thread_limit

#: ``ctx.options`` this suite reads: ``config``, a :class:`Config` replacing the run's own
OPTIONS = ("config",)


def objective(coef: np.ndarray, X, y: np.ndarray, C: float) -> float:
    """C sum log-loss + ||coef||_1 (no intercept): binary (coef (1, d), y in {0, 1}) or
    multinomial (coef (m, d), y class indices)."""
    S = np.asarray(X @ coef.T)
    if coef.shape[0] == 1:
        z = S[:, 0]
        loss = float(np.sum(np.logaddexp(0.0, z) - y * z))
    else:
        loss = float(np.sum(logsumexp(S, axis=1) - S[np.arange(S.shape[0]), y]))
    return C * loss + float(np.abs(coef).sum())


def tfidf(rows: int, cols: int, per_row: int, seed: int = 0):
    """A synthetic tf-idf shape: Zipf-distributed columns, rows of unit norm, labels from a
    sparse linear rule over the frequent columns plus noise."""
    rng = np.random.default_rng(seed)
    r = np.repeat(np.arange(rows), per_row)
    c = np.minimum(rng.zipf(1.3, size=rows * per_row) - 1, cols - 1)
    X = sp.csr_matrix((rng.random(rows * per_row), (r, c)), shape=(rows, cols))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    w = np.zeros(cols)
    top = min(2000, cols)
    idx = rng.choice(top, min(100, top), replace=False)
    w[idx] = 5.0 * rng.normal(size=idx.size)
    y = (np.asarray(X @ w).ravel() + 0.3 * rng.normal(size=rows) > 0).astype(np.int64)
    return X, y


def load(ctx, name: str, cfg: Config):
    """(X, y as class indices) of a data set, or None where its data is missing."""
    from sklearn.preprocessing import StandardScaler

    from zbound import datasets

    if name == "tfidf":
        return tfidf(*cfg.tfidf)
    loader = {"ssl-text": datasets.load_ssl_text, "adult": datasets.load_adult,
              "srbct": datasets.load_srbct, "kmnist": datasets.load_kmnist}[name]
    d = ctx.load(name, loader)
    if d is None:
        return None
    X = d.X
    if not sp.issparse(X) or name == "adult":
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        X = StandardScaler().fit_transform(X)
    _, y = np.unique(np.asarray(d.y), return_inverse=True)
    return X, y.astype(np.int64)


def _zbound(X, y, C):
    from zbound import BoundLogisticRegression

    return lambda tol: BoundLogisticRegression(C=C, penalty="l1", fit_intercept=False, tol=tol,
                                               max_iter=10_000).fit(X, y).coef_


def _peers(X, y, C, multinomial: bool, cfg: Config) -> tuple[dict, list[str]]:
    """{name: call(tol) -> coef}, and the peers that are not installed."""
    from sklearn.linear_model import LogisticRegression

    n = X.shape[0]
    out, missing = {}, []
    out["saga"] = lambda tol: LogisticRegression(
        C=C, l1_ratio=1.0, solver="saga", fit_intercept=False, tol=tol,
        max_iter=cfg.saga_max_iter).fit(X, y).coef_
    if multinomial:
        return out, missing
    out["liblinear"] = lambda tol: LogisticRegression(
        C=C, l1_ratio=1.0, solver="liblinear", fit_intercept=False, tol=tol,
        max_iter=10_000).fit(X, y).coef_
    try:
        from skglm import SparseLogisticRegression

        out["skglm"] = lambda tol: SparseLogisticRegression(
            alpha=1.0 / (C * n), fit_intercept=False, tol=tol, max_iter=1000).fit(
            X, y).coef_.reshape(1, -1)
    except ImportError:
        missing.append("skglm")
    try:
        from celer import LogisticRegression as CelerLogistic

        out["celer"] = lambda tol: CelerLogistic(C=C, tol=tol, max_iter=1000).fit(
            X, y).coef_.reshape(1, -1)
    except ImportError:
        missing.append("celer")
    return out, missing


def c_min(X, y, m: int) -> float:
    """The largest C whose L1 fit (no intercept) is all zero."""
    Y = np.zeros((X.shape[0], m))
    Y[np.arange(X.shape[0]), y] = 1.0
    P0 = np.full_like(Y, 1.0 / m)
    R = (P0 - Y)[:, 1:] if m == 2 else P0 - Y
    return 1.0 / float(np.abs(np.asarray(X.T @ R)).max())


def reachable(X, m: int, fraction: float) -> bool:
    """Whether an L1 fit can have that share of nonzeros: it has at most n per class."""
    return fraction * X.shape[1] <= X.shape[0]


def strength(X, y, m: int, fraction: float) -> float:
    """C whose fit has about ``fraction`` of its coefficients nonzero (bisection in log C)."""
    fit = None
    lo = c_min(X, y, m)
    hi = lo * 1e4
    size = X.shape[1] * (1 if m == 2 else m)
    for _ in range(14):
        mid = float(np.sqrt(lo * hi))
        fit = _zbound(X, y, mid)(1e-6)
        share = np.count_nonzero(fit) / size
        if abs(share - fraction) <= 0.2 * fraction:
            return mid
        lo, hi = (mid, hi) if share < fraction else (lo, mid)
    return float(np.sqrt(lo * hi))


def cells(ctx, cfg: Config):
    skipped: dict[str, str] = {}
    for name in (*cfg.binary, *cfg.multinomial):
        data = load(ctx, name, cfg)
        multinomial = name in cfg.multinomial
        for fraction in cfg.fractions:
            if data is None:
                ctx.advance()
                continue
            X, y = data
            m = int(y.max()) + 1
            if not reachable(X, m, fraction):
                skipped[f"{name} nonzeros~{fraction:g}"] = (
                    f"an L1 fit has at most n = {X.shape[0]} nonzeros per class, under "
                    f"{fraction:g} of {X.shape[1]} features")
                ctx.writer.set_extra("unreachable_cells", skipped)
                ctx.advance()
                continue
            C = strength(X, y, m, fraction)
            peers, missing = _peers(X, y, C, multinomial, cfg)
            if missing:
                ctx.writer.set_extra("missing_peers", missing)
            methods = [Method("zbound", _zbound(X, y, C), default=True)]
            methods += [Method(k, v, peer=True) for k, v in peers.items()]
            yield Cell("binary" if not multinomial else "multinomial", name,
                       f"nonzeros~{fraction:g} C={C:.4g}", methods, memory=cfg.memory,
                       target=Target(objective=lambda coef, X=X, y=y, C=C: objective(
                           np.atleast_2d(coef), X, y, C), rel=REL_TARGET,
                           budget_s=cfg.budget_s,
                           extra=lambda coef: {"nonzeros": int(np.count_nonzero(coef)),
                                               "coefficients": int(np.size(coef))}))


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    total = len(cfg.fractions) * (len(cfg.binary) + len(cfg.multinomial))
    ctx.start("sparse", total)
    t0 = time.perf_counter()
    with thread_limit(1):
        run_cells(ctx, cells(ctx, cfg), cfg.repeats, cfg.min_time)
    info: dict[str, Any] = {"quick": ctx.quick, "repeats": cfg.repeats,
                            "rel_target": REL_TARGET, "tfidf": list(cfg.tfidf),
                            "elapsed_s": time.perf_counter() - t0}
    ctx.writer.set_extra("config", info)
