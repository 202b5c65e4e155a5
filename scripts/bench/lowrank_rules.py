"""The three low-rank update rules (``zbound.bounds.lowrank``) against the full Alg. 1 curvature.

Part 1, bounds: N random problems (n 3-9 configurations, d 3-8, rank 1-4, feature scales
0.1-10, theta standard normal, descending order). Per rule: how often the low-rank curvature
fails to dominate the full one (min eigenvalue of the difference < -1e-9 max|Sigma|), how often
the bound falls below log Z at 48 points along the worst direction, and the trace ratios to the
full curvature. Part 2, learning: iterations of ``minimize(method="bound", rank=k)`` on a small
softmax regression. Usage:

    python scripts/bench/lowrank_rules.py [--cases N] [--seed S]

The numbers in docs/lowrank.md come from the defaults (N = 2000, seed 0); the same sweep runs
as tests/bounds/test_lowrank.py::test_measured_rule_comparison.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from zbound.bounds.enumerate import quadratic_bound
from zbound.bounds.lowrank import RULES, lowrank_bound
from zbound.models.multinomial import MultinomialLogistic
from zbound.solvers import minimize


def sweep(n_cases: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {rule: {"not_dominating": 0, "below_log_z": 0, "trace_ratio": []} for rule in RULES}
    for _ in range(n_cases):
        n, d, k = int(rng.integers(3, 10)), int(rng.integers(3, 9)), int(rng.integers(1, 5))
        F = 10.0 ** rng.uniform(-1, 1) * rng.standard_normal((n, d))
        theta = rng.standard_normal(d)
        full = quadratic_bound(F, theta)
        tol = 1e-9 * max(1.0, float(np.abs(full.curvature).max()))
        for rule in RULES:
            b = lowrank_bound(F, theta, rank=k, rule=rule)
            w, U = np.linalg.eigh(b.curvature.to_dense() - full.curvature)
            rec = out[rule]
            rec["trace_ratio"].append(b.curvature.trace() / np.trace(full.curvature))
            if w[0] < -tol:
                rec["not_dominating"] += 1
                xs = theta + np.outer(np.geomspace(1e-2, 1e2, 24), U[:, 0])
                xs = np.vstack([xs, 2 * theta - xs])
                lz = np.array([np.logaddexp.reduce(F @ x) for x in xs])
                if np.any(b.evaluate(xs) < lz - 1e-9 * (1 + np.abs(lz))):
                    rec["below_log_z"] += 1
    for rule in RULES:
        out[rule]["trace_ratio"] = np.array(out[rule]["trace_ratio"])
    return out


def learning(seed: int = 0, t: int = 40, d: int = 3, n: int = 3, reg: float = 1.0):
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.standard_normal((t, d - 1)), np.ones((t, 1))])
    y = rng.integers(0, n, t)
    model = MultinomialLogistic(X, y, n_classes=n, reg=reg)
    x0 = np.random.default_rng(1).standard_normal(model.n_params)
    rows = []
    for rank, rule in [(None, "-"), (1, "sgb"), (1, "exact"), (4, "sgb"), (4, "exact")]:
        t0 = time.perf_counter()
        kw = {} if rank is None else {"rank": rank, "lowrank_rule": rule}
        res = minimize(model, x0, method="bound", tol=1e-7, max_iter=5000, **kw)
        rows.append((rank, rule, res.nit, res.fun, time.perf_counter() - t0))
    return model.n_params, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = sweep(args.cases, args.seed)
    print(f"{args.cases} random problems ({time.perf_counter() - t0:.1f} s)")
    print("| rule | not dominating | below log Z | trace / full: median | mean | max |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for rule in RULES:
        r = res[rule]
        tr = r["trace_ratio"]
        print(f"| {rule} | {r['not_dominating']} | {r['below_log_z']} | {np.median(tr):.3f} | "
              f"{tr.mean():.3f} | {tr.max():.3f} |")
    ratio = res["exact"]["trace_ratio"] / res["sgb"]["trace_ratio"]
    worse = int(np.sum(ratio > 1 + 1e-12))
    print(f"trace exact / sgb: median {np.median(ratio):.3f}, max {ratio.max():.4f}, "
          f"exact larger in {worse} of {args.cases}")
    p, rows = learning()
    print(f"\nAlg. 2 on softmax regression (t = 40, 3 classes, p = {p}, reg = 1, tol 1e-7)")
    print("| rank | rule | iterations | objective | seconds |")
    print("| --- | --- | ---: | ---: | ---: |")
    for rank, rule, nit, fun, sec in rows:
        print(f"| {'full' if rank is None else rank} | {rule} | {nit} | {fun:.10f} | {sec:.2f} |")


if __name__ == "__main__":
    main()
