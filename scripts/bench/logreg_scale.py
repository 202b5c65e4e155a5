"""Fit time and peak memory of BoundLogisticRegression (default solver) against scikit-learn.

One BLAS thread, methods alternated within one process, medians of the repeats; peak memory
from tracemalloc in a separate pass (numpy allocations are traced). Usage:

    ZBOUND_DATA=... python scripts/bench/logreg_scale.py [problem ...] [--repeats N]

problems: srbct1 srbct001 synth digits adult (default: all).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
import warnings

import numpy as np
import scipy.optimize  # noqa: F401  (loaded before threadpoolctl)
import sklearn.linear_model
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import zbound.datasets
from zbound import BoundLogisticRegression


def _std(X):
    return StandardScaler().fit_transform(X)


def problems(names):
    out = {}
    if {"srbct1", "srbct001"} & set(names):
        ds = zbound.datasets.load_srbct()
        Xtr, _, ytr, _ = train_test_split(ds.X, ds.y, test_size=0.2, random_state=0,
                                          stratify=ds.y)
        Xtr = _std(Xtr)
        if "srbct1" in names:
            out["srbct1"] = (Xtr, ytr, 1.0, 1e-6, ["lbfgs"])
        if "srbct001" in names:
            out["srbct001"] = (Xtr, ytr, 0.01, 1e-6, ["lbfgs"])
    if "synth" in names:
        X, y = make_classification(n_samples=4000, n_features=80, n_informative=40,
                                   n_classes=6, n_clusters_per_class=1, random_state=0)
        out["synth"] = (_std(X), y, 1.0, 1e-8, ["lbfgs"])
    if "digits" in names:
        ds = zbound.datasets.load_digits()
        out["digits"] = (_std(ds.X), ds.y, 1.0, 1e-4, ["lbfgs"])
    if "adult" in names:
        ds = zbound.datasets.load_adult()
        X = ds.X.toarray() if hasattr(ds.X, "toarray") else np.asarray(ds.X)
        out["adult"] = (_std(X), ds.y, 1.0, 1e-6, ["lbfgs", "newton-cholesky"])
    return out


def fitters(X, y, C, tol, peers):
    fs = {"zbound": lambda: BoundLogisticRegression(C=C, tol=tol, max_iter=10000).fit(X, y)}
    for s in peers:
        fs[s] = (lambda s=s: sklearn.linear_model.LogisticRegression(
            C=C, tol=tol, solver=s, max_iter=100000).fit(X, y))
    return fs


def objective(est, X, y, C):
    P = est.predict_log_proba(X)
    idx = np.searchsorted(est.classes_, y)
    return float(-P[np.arange(len(y)), idx].sum() + 0.5 / C * (est.coef_ ** 2).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*",
                    default=["srbct1", "srbct001", "synth", "digits", "adult"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    probs = problems(args.names)
    with threadpool_limits(1):
        for name in args.names:
            X, y, C, tol, peers = probs[name]
            fs = fitters(X, y, C, tol, peers)
            times = {k: [] for k in fs}
            objs = {}
            for _ in range(args.repeats):
                for k, f in fs.items():
                    gc.collect()
                    t0 = time.perf_counter()
                    est = f()
                    times[k].append(time.perf_counter() - t0)
                    objs[k] = objective(est, X, y, C)
            mem = {}
            if not args.no_memory:
                for k, f in fs.items():
                    gc.collect()
                    tracemalloc.start()
                    f()
                    mem[k] = tracemalloc.get_traced_memory()[1] / 2**20
                    tracemalloc.stop()
            med = {k: statistics.median(v) for k, v in times.items()}
            line = f"{name:9s} {X.shape[0]}x{X.shape[1]} C={C:g} tol={tol:g}: "
            line += "  ".join(f"{k} {med[k]:.3f}s" + (f"/{mem[k]:.0f}MB" if mem else "")
                              + f" J={objs[k]:.6f}" for k in fs)
            ref = min(v for k, v in med.items() if k != "zbound")
            line += f"  ratio zbound/best-peer {med['zbound'] / ref:.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
