"""Speed of the quantum relaxation (paper 001) against its targets and the CVXPY peer.

    python scripts/bench/quantum_speed.py [--quick] [--out FILE.json]

Measures, on this machine (report the load and core count with the numbers):
1. Chambolle-Pock alone (polish=False) to relative gap 1e-6, features (1, x), complete graph,
   Gaussian parameters, d = 50, 100, 200, 400: iterations and median seconds.
2. quantum_bound (default, with Newton polish where n <= 128) against cvxpy_quantum_bound
   (Clarabel and SCS), alternating, median of repeats, where CVXPY returns a solution.
3. greedy_features(k=10) at d = 10.
4. ``--parts scale``: quantum_bound (default: Newton with temperature continuation on the
   diagonal dual for n > 128) against plain Chambolle-Pock (polish=False, what the default was
   for n > 128 before) at d = 200, 400, 700, 1000 (``--scale-d``), alternating; Chambolle-Pock
   is skipped above ``--cp-max-d``. Reports seconds, iterations, Newton steps, eigensolves.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

from zbound.ising.cvxpy_quantum import cvxpy_quantum_bound
from zbound.ising.features import default_features, degree_features, edge_features
from zbound.ising.hierarchy import greedy_features
from zbound.ising.model import IsingModel
from zbound.ising.quantum import quantum_bound


def gaussian_model(d: int, seed: int, eps: float = 1.0) -> IsingModel:
    rng = np.random.default_rng(seed)
    J = np.triu(rng.standard_normal((d, d)), 1)
    return IsingModel(rng.standard_normal(d), J + J.T, eps)


def median_time(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def bench_cp(dims, repeats, seeds):
    rows = []
    for d in dims:
        for seed in seeds:
            model = gaussian_model(d, seed)
            reps = repeats if d <= 200 else 1
            quantum_bound(model, max_iter=5, polish=False)  # warm caches (feature classes)
            sec, r = median_time(lambda m=model: quantum_bound(m, tol=1e-6, polish=False), reps)
            c0 = time.process_time()
            quantum_bound(model, tol=1e-6, polish=False)
            cpu = time.process_time() - c0
            rows.append({"d": d, "seed": seed, "iterations": r.iterations, "seconds": sec,
                         "cpu_seconds_one_run": cpu, "gap": r.gap, "converged": r.converged})
            print(f"CP d={d} seed={seed}: {r.iterations} it, {sec:.3f} s, gap {r.gap:.1e}",
                  flush=True)
    return rows


def bench_peer(cases, repeats):
    rows = []
    for d, feats, seed in cases:
        model = gaussian_model(d, seed)
        if feats == "(1,x)":
            fs = default_features(d)
        elif feats == "chain":
            fs = edge_features(d, [(i, i + 1) for i in range(d - 1)])
        else:
            fs = degree_features(d, 2)
        ours, peers = [], {"CLARABEL": [], "SCS": []}
        res = {}
        for _ in range(repeats):  # alternate methods; ours is cheap, so time it 5x per round
            for _ in range(5):
                t = time.perf_counter()
                res["ours"] = quantum_bound(model, fs, tol=1e-6)
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                res["cp"] = quantum_bound(model, fs, tol=1e-6, polish=False)
                res.setdefault("cp_t", []).append(time.perf_counter() - t)
            for s in peers:
                t = time.perf_counter()
                res[s] = cvxpy_quantum_bound(model, fs, solver=s)
                peers[s].append(time.perf_counter() - t)
        row = {"d": d, "features": feats, "n": fs.n, "seed": seed,
               "ours_s": statistics.median(ours), "ours_bound": res["ours"].bound,
               "cp_only_s": statistics.median(res["cp_t"]), "cp_only_bound": res["cp"].bound}
        for s in peers:
            row[f"{s}_s"] = statistics.median(peers[s])
            row[f"{s}_bound"] = res[s].bound
            row[f"{s}_status"] = res[s].status
            row[f"{s}_speedup"] = (statistics.median(peers[s]) / row["ours_s"]
                                   if res[s].bound is not None else None)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def bench_greedy(repeats, seeds):
    rows = []
    for seed in seeds:
        model = gaussian_model(10, seed)
        sec, g = median_time(lambda m=model: greedy_features(m, 10), repeats)
        rows.append({"d": 10, "k": 10, "seed": seed, "seconds": sec, "bound": g.bound,
                     "plain_bound": quantum_bound(model).bound})
        print(f"greedy d=10 k=10 seed={seed}: {sec:.2f} s, bound {g.bound:.4f}", flush=True)
    return rows


def bench_scale(dims, repeats, cp_max_d):
    from zbound.bench.timing import time_alternating
    from zbound.ising.generators import gaussian_model as paper_gaussian

    rows = []
    for d in dims:
        model = paper_gaussian(d, random_state=0)
        methods = {"newton": lambda m=model: quantum_bound(m, tol=1e-6)}
        if d <= cp_max_d:
            methods["cp"] = lambda m=model: quantum_bound(m, tol=1e-6, polish=False,
                                                          max_iter=50000)
        res = time_alternating(methods, repeats=repeats if d <= 400 else 1)
        for name, entry in res.items():
            r = entry["result"]
            row = {"d": d, "method": name, "seconds": entry["median_s"], "times": entry["times"],
                   "iterations": r.iterations, "newton_steps": r.newton_steps,
                   "eigendecompositions": r.eigendecompositions, "gap": r.gap,
                   "bound": r.bound, "converged": r.converged,
                   "load": os.getloadavg()[0]}
            rows.append(row)
            print(json.dumps(row, default=float), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--parts", default="cp,peer,greedy",
                    help="comma list of cp, peer, greedy, scale")
    ap.add_argument("--scale-d", default="200,400,700,1000")
    ap.add_argument("--cp-max-d", type=int, default=1000)
    args = ap.parse_args()
    quick = args.quick
    parts = set(args.parts.split(","))
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "load_before": os.getloadavg()},
        "cp": [] if "cp" not in parts else bench_cp(
            [50, 100, 200] if quick else [50, 100, 200, 400], 3, [0] if quick else [0, 1, 2]),
        "peer": [] if "peer" not in parts else bench_peer(
            [(3, "(1,x)", 0), (5, "(1,x)", 0), (5, "chain", 0), (8, "(1,x)", 0),
             (10, "(1,x)", 0)] + ([] if quick else [(5, "(1,x)", 1), (4, "degree2", 0),
                                                     (5, "degree2", 0), (8, "chain", 0),
                                                     (15, "(1,x)", 0)]),
            3,
        ),
        "greedy": [] if "greedy" not in parts else bench_greedy(1, [0] if quick else [0, 1]),
    }
    if "scale" in parts:
        out["scale"] = bench_scale([int(v) for v in args.scale_d.split(",")], 3, args.cp_max_d)
    out["machine"]["load_after"] = os.getloadavg()
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
