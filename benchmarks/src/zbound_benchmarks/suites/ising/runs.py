"""The tasks of the suite (one per group of figures of Beyler & Bach) and the records they write.

Records are aggregated over the random draws of one problem (see the package docstring for the
fields); every record's ``metrics`` carries the explicit problem description (``d``,
``params``, ``coupling``, ``graph``, ``w``, ``eps``, and ``n`` / ``features`` where the feature
set varies) that the report groups by.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from zbound.ising.exact import enumerate_exact
from zbound.ising.logdet import logdet_bound
from zbound.ising.metrics import l1_marginal_error
from zbound.ising.model import IsingModel
from zbound_benchmarks.harness import stopwatch, timed
from zbound_benchmarks.suites.ising.config import BOUND_TOL, EXACT_MAX_D, Config
from zbound_benchmarks.suites.ising.methods import competitors
from zbound_benchmarks.suites.ising.problems import Problem
from zbound_benchmarks.timing import time_alternating


def mean_std(values) -> tuple[float | None, float | None]:
    """Mean and standard deviation of the finite values (None, None if there are none)."""
    v = np.array([x for x in values if x is not None and np.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return None, None
    return float(v.mean()), float(v.std())


def new_stats() -> dict[str, Any]:
    return {"checked": defaultdict(int), "violations": defaultdict(int)}


def _gap_curve(history) -> tuple[list[int], list[float]]:
    return ([h[0] for h in history],
            [(h[1] - h[2]) / max(abs(h[1]), abs(h[2]), 1.0) for h in history])


def _attempt(fn, model) -> dict[str, Any]:
    """``fn(model)``; a failed method is a result, not a crash of the suite."""
    try:
        return fn(model)
    except Exception as exc:
        return {"bound": None, "marginals": None, "iterations": None, "converged": False,
                "guaranteed": False, "error": repr(exc)}


def _run_all(models, methods, with_exact):
    """Every method on every model (alternating per model), and the exact values where the
    dimension allows: (exacts, runs per method, seconds of each exact value)."""
    exacts: list[dict | None] = []
    runs: dict[str, list[dict]] = {name: [] for name in methods}
    exact_seconds = []
    for model in models:
        if with_exact:
            seconds, e = timed(lambda model=model: enumerate_exact(model, moments=False))
            exact_seconds.append(seconds)
            exacts.append({"value": e.log_partition, "marginals": e.marginals})
        else:
            exacts.append(None)
        for name, fn in methods.items():
            seconds, out = timed(lambda fn=fn, model=model: _attempt(fn, model))
            out["seconds"] = seconds
            runs[name].append(out)
    return exacts, runs, exact_seconds


def _check_bounds(outs, bounds, exact) -> tuple[int, int]:
    """(certified values checked against an exact one, values below it)."""
    checked = violations = 0
    for o, b, v in zip(outs, bounds, exact):
        if v is None or b is None or not o.get("guaranteed"):
            continue
        checked += 1
        if b < v - BOUND_TOL * max(1.0, abs(v)):
            violations += 1
    return checked, violations


def compare(ctx, task: str, problem: Problem, setting: str, x: float, models: list[IsingModel],
            methods: dict[str, Any], stats: dict[str, Any]) -> dict[str, list[dict]]:
    """Run every method on every model (alternating per model), then write one record each."""
    d = problem.d
    with_exact = d <= EXACT_MAX_D
    exacts, runs, exact_seconds = _run_all(models, methods, with_exact)
    logdet_vals = [r["bound"] for r in runs.get("logdet", [])]
    quantum_vals = [r["bound"] for r in runs.get("quantum", [])]
    for name, outs in runs.items():
        bounds = [o["bound"] for o in outs]
        ex = [e["value"] if e else None for e in exacts]
        err = [(b - v) / d if b is not None and v is not None else None
               for b, v in zip(bounds, ex)]
        l1 = [l1_marginal_error(o["marginals"], e["marginals"])
              if (e and o["marginals"] is not None) else None for o, e in zip(outs, exacts)]
        rel = [(b - ld) / d if (b is not None and ld is not None) else None
               for b, ld in zip(bounds, logdet_vals)] if logdet_vals else []
        gain = [(b - q) / d if (b is not None and q is not None) else None
                for b, q in zip(bounds, quantum_vals)] if quantum_vals else []
        checked, violations = _check_bounds(outs, bounds, ex)
        stats["checked"][name] += checked
        stats["violations"][name] += violations
        its = [o["iterations"] for o in outs if o.get("iterations") is not None]
        em, es = mean_std(err)
        lm, ls = mean_std(l1)
        rm, rs = mean_std(rel)
        gm, gs = mean_std(gain)
        n_conv = sum(bool(o.get("converged")) for o in outs)
        valid = all(b is not None for b in bounds) and violations == 0
        metrics = {
            "x": x,
            **problem.fields(),
            "bound": mean_std(bounds)[0],
            "exact": mean_std(ex)[0],
            "iterations": float(np.mean(its)) if its else None,
            "bounds": bounds,
            "exacts": ex,
            "l1s": l1,
            "error_bound_mean": em, "error_bound_std": es,
            "l1_error_mean": lm, "l1_error_std": ls,
            "rel_logdet_mean": rm, "rel_logdet_std": rs,
            "gain_mean": gm, "gain_std": gs,
            "n_draws": len(models),
            "converged": n_conv,
            "violations": violations,
            "errors": [o["error"] for o in outs if "error" in o],
        }
        ctx.writer.add(
            task=task, dataset=problem.dataset, setting=setting, method=name,
            peer=False, default=(name == "quantum"),
            reached=bool(valid and (name != "trw" or n_conv == len(outs))),
            time_to_target_s=float(np.median([o["seconds"] for o in outs])),
            evaluations=metrics["iterations"],
            final_objective=metrics["bound"], target_objective=metrics["exact"],
            metrics=metrics,
        )
    if with_exact:
        value = mean_std([e["value"] for e in exacts])[0]
        ctx.writer.add(task=task, dataset=problem.dataset, setting=setting, method="exact",
                       reached=True, time_to_target_s=float(np.median(exact_seconds)),
                       final_objective=value,
                       metrics={"x": x, **problem.fields(), "bound": value, "exact": value,
                                "iterations": None, "n_draws": len(models)})
    return runs


# ----------------------------------------------------------------------------------------------
# tasks


def task_hierarchy(ctx, cfg, stats):
    """Fig. 1: bound vs number of features, degree order vs greedy; d = 5, Gaussian."""
    from zbound.ising.features import FeatureSet
    from zbound.ising.hierarchy import degree_hierarchy, greedy_features
    from zbound.ising.quantum import quantum_bound

    d, max_n = 5, cfg.hier_max_n
    graphs = ("independent", "tree", "complete")
    ctx.start("Fig. 1 hierarchies (d=5)", len(graphs) * cfg.draws)
    for g_i, graph in enumerate(graphs):
        problem = Problem(d, "gaussian", graph)
        models = problem.draw(cfg.draws, 100 + g_i)
        curves: dict[str, dict[int, list]] = {"quantum-degree": defaultdict(list),
                                             "quantum-greedy": defaultdict(list)}
        secs: dict[str, list] = {"quantum-degree": [], "quantum-greedy": []}
        exacts = []
        for model in models:
            exacts.append(enumerate_exact(model, moments=False).log_partition)
            seconds = {}
            with stopwatch(seconds, "quantum-degree"):
                for n, r in degree_hierarchy(model, max_features=max_n):
                    curves["quantum-degree"][n].append((r.bound, r.iterations))
            with stopwatch(seconds, "quantum-greedy"):
                g = greedy_features(model, max_n - (d + 1))
                # tight values along the greedy path: re-solve each prefix of the chosen
                # features; a_eps is not monotone in the feature set, so the curve is the best
                # bound so far
                prev, best = None, np.inf
                for n in range(d + 1, g.features.n + 1):
                    prev = quantum_bound(model, FeatureSet(d, g.features.masks[:n]),
                                         warm_start=prev)
                    best = min(best, prev.bound)
                    curves["quantum-greedy"][n].append((best, prev.iterations))
            for method, s in seconds.items():
                secs[method].append(s)
            ctx.advance()
        for method, curve in curves.items():
            for n, vals in sorted(curve.items()):
                b = [v[0] for v in vals]
                err = [(bi - e) / d for bi, e in zip(b, exacts)]
                em, es = mean_std(err)
                viol = sum(bi < e - BOUND_TOL * max(1, abs(e)) for bi, e in zip(b, exacts))
                stats["checked"][method] += len(b)
                stats["violations"][method] += viol
                ctx.writer.add(
                    task="hierarchy", dataset=problem.dataset, setting=f"n={n}",
                    method=method, reached=viol == 0,
                    time_to_target_s=float(np.median(secs[method])) / len(curve),
                    evaluations=float(np.mean([v[1] for v in vals])),
                    final_objective=float(np.mean(b)), target_objective=float(np.mean(exacts)),
                    metrics={"x": n, **problem.fields(), "n": n, "bound": float(np.mean(b)),
                             "exact": float(np.mean(exacts)), "bounds": b, "exacts": exacts,
                             "iterations": float(np.mean([v[1] for v in vals])),
                             "error_bound_mean": em, "error_bound_std": es,
                             "violations": int(viol), "n_draws": len(b)},
                )


def task_coupling(ctx, cfg, stats):
    """Fig. 2, 3, 5, 6, 9, 10: bounds vs coupling strength, log-det and TRW parameters."""
    blocks = cfg.coupling
    total = sum(len(c) * len(ws) for _, _, c, ws in blocks)
    ctx.start("Fig. 2/3/5/6/10 coupling strength", total)
    for b_i, (d, setting, couplings, ws) in enumerate(blocks):
        ks = (3, 10) if d in cfg.greedy10_d else (3,)
        methods = competitors(d, ks)
        for c_i, coupling in enumerate(couplings):
            for w_i, w in enumerate(ws):
                problem = Problem(d, setting, "complete", coupling, w)
                models = problem.draw(cfg.draws, 1000 * b_i + 100 * c_i + w_i)
                compare(ctx, "coupling", problem, f"w={w}", w, models, methods, stats)
                ctx.advance(f"coupling d={d} {setting}-{coupling} w={w}")


def task_relative(ctx, cfg, stats):
    """Suppl. Fig. 11: d = 30 (no exact value), error relative to the log-det bound."""
    d = cfg.relative_d
    couplings = ("attractive", "mixed", "repulsive")
    ws = cfg.relative_w
    ctx.start(f"Fig. 11 relative to log-det (d={d})", len(couplings) * len(ws))
    methods = competitors(d, cfg.relative_ks)
    for c_i, coupling in enumerate(couplings):
        for w_i, w in enumerate(ws):
            problem = Problem(d, "logdet", "complete", coupling, w)
            models = problem.draw(cfg.relative_draws, 5000 + 10 * c_i + w_i)
            compare(ctx, "coupling", problem, f"w={w}", w, models, methods, stats)
            ctx.advance()


def task_temperature(ctx, cfg, stats):
    """Suppl. Fig. 7 and 8: Gaussian parameters, d = 10, varying temperature; greedy gains."""
    from zbound.ising.features import FeatureSet
    from zbound.ising.quantum import quantum_bound

    d = 10
    temps = cfg.temperatures
    kmax = max(cfg.gain_ks)
    ctx.start("Fig. 7/8 temperature (d=10)", len(temps))
    base_models = Problem(d, "gaussian", "complete").draw(cfg.draws, 7000)
    for eps in temps:
        problem = Problem(d, "gaussian", "complete", epsilon=eps)
        models = [m.with_epsilon(eps) for m in base_models]
        methods = competitors(d, (kmax,))
        runs = compare(ctx, "temperature", problem, f"eps={eps}", eps, models, methods, stats)
        # gains for k = 1, 2, ... along each draw's greedy path (tight re-solves of prefixes)
        gains: dict[int, list] = defaultdict(list)
        for model, q, g in zip(models, runs["quantum"], runs[f"quantum-greedy-k{kmax}"]):
            greedy = g.get("greedy")
            if greedy is None or q["bound"] is None:
                continue
            masks = greedy.features.masks
            for k in cfg.gain_ks:
                r = quantum_bound(model, FeatureSet(d, masks[: d + 1 + k]))
                gains[k].append((r.bound - q["bound"]) / d)
        for k, vals in gains.items():
            gm, gs = mean_std(vals)
            ctx.writer.add(task="greedy-gain", dataset=problem.dataset,
                           setting=f"eps={eps}", method=f"quantum-greedy-k{k}",
                           reached=True, final_objective=gm,
                           metrics={"x": eps, "k": k, **problem.fields(), "bound": None,
                                    "exact": None, "iterations": None, "gain_mean": gm,
                                    "gain_std": gs, "gains": vals, "n_draws": len(vals)})
        ctx.advance(f"temperature eps={eps}")


def task_zero_temperature(ctx, cfg, stats):
    """Sec. 6 and Suppl. B: at eps = 0 the relaxations bound max f; tight for trees with edge
    features and for independent variables. On trees, (1, x) and tree features are compared on
    the same draws, and the log-det SDP is solved once per draw."""
    from zbound.ising.exact import max_energy
    from zbound.ising.features import tree_features
    from zbound.ising.quantum import zero_temperature_bound

    # (graph, seed of the draws, feature sets: "tree" = (1, x) plus the tree's edges)
    cases = [("independent", 9000, (None,)), ("tree", 9001, ("tree", None)),
             ("complete", 9003, (None,))]
    ctx.start("Sec. 6 zero temperature", len(cases))
    for graph, seed, feature_sets in cases:
        problem = Problem(8, "gaussian", graph, epsilon=0.0)
        models = problem.draw(cfg.draws, seed)
        tops = [max_energy(m)[0] for m in models]
        values: dict[str, list] = {}
        seconds: dict[str, float] = {}
        features: dict[str, str | None] = {}
        for feats in feature_sets:
            name = "quantum-tree-features" if feats else "quantum"
            s, values[name] = timed(lambda f=feats, ms=models: [
                zero_temperature_bound(m, tree_features(m) if f else None).bound for m in ms])
            seconds[name] = s / len(models)
            features[name] = "(1, x) + tree edges" if feats else "(1, x)"
        s, values["logdet-sdp"] = timed(lambda ms=models: [logdet_bound(m).bound for m in ms])
        seconds["logdet-sdp"] = s / len(models)
        features["logdet-sdp"] = None
        for method, b in values.items():
            gap = [(bi - t) / problem.d for bi, t in zip(b, tops)]
            viol = sum(bi < t - 1e-6 * max(1, abs(t)) for bi, t in zip(b, tops))
            gm, gs = mean_std(gap)
            ctx.writer.add(task="zero-temperature", dataset=problem.dataset,
                           setting="eps=0", method=method, reached=viol == 0,
                           time_to_target_s=seconds[method], final_objective=float(np.mean(b)),
                           target_objective=float(np.mean(tops)),
                           metrics={**problem.fields(), "features": features[method],
                                    "bound": float(np.mean(b)), "exact": float(np.mean(tops)),
                                    "iterations": None,
                                    "error_bound_mean": gm, "error_bound_std": gs,
                                    "violations": int(viol), "bounds": b, "exacts": tops})
        ctx.advance()


def task_speed(ctx, cfg, stats):
    """Speed: Chambolle-Pock vs the CVXPY formulation (peer) on the same relaxation; CP at
    d = 100 / 400; greedy k = 10 at d = 10."""
    from zbound.ising.cvxpy_quantum import cvxpy_quantum_bound
    from zbound.ising.hierarchy import greedy_features
    from zbound.ising.quantum import quantum_bound

    ds = cfg.speed_d
    ctx.start("speed: Chambolle-Pock vs CVXPY", len(ds) + len(cfg.cp_d) + 1)
    for d in ds:
        problem = Problem(d)
        model = problem.one(11 + d)
        res = time_alternating({
            "quantum-cp": lambda model=model: quantum_bound(model, tol=1e-6),
            "quantum-cp-plain": lambda model=model: quantum_bound(model, tol=1e-6, polish=False),
            "cvxpy-clarabel": lambda model=model: cvxpy_quantum_bound(model, solver="CLARABEL",
                                                                       time_limit=120),
            "cvxpy-scs": lambda model=model: cvxpy_quantum_bound(model, solver="SCS",
                                                                 time_limit=120),
        }, repeats=7)
        target = res["quantum-cp"]["result"].bound
        for name, entry in res.items():
            r = entry["result"]
            b = r.bound
            # "the same bound value": within the CP stopping tolerance (relative 1e-6) + 1e-6
            same = b is not None and abs(b - target) <= 1e-6 * max(1.0, abs(target)) + 1e-6
            ctx.writer.add(
                task="speed", dataset=problem.dataset, setting="rel-gap=1e-6",
                method=name, peer=name.startswith("cvxpy"), default=(name == "quantum-cp"),
                reached=bool(same), time_to_target_s=entry["median_s"] if same else None,
                evaluations=getattr(r, "iterations", None), final_objective=b,
                target_objective=target,
                metrics={**problem.fields(), "bound": b, "exact": None, "status": r.message,
                         "iterations": getattr(r, "iterations", None), "times": entry["times"],
                         "abs_diff_to_cp": None if b is None else b - target},
            )
        ctx.advance(f"speed d={d}")
    for d in cfg.cp_d:
        problem = Problem(d)
        model = problem.one(21 + d)
        reps = 3
        res = time_alternating({
            "quantum-cp": lambda model=model: quantum_bound(model, tol=1e-6, max_iter=50000),
            "quantum-cp-plain": lambda model=model: quantum_bound(model, tol=1e-6,
                                                                  max_iter=50000, polish=False),
        }, repeats=reps)
        for name, entry in res.items():
            r = entry["result"]
            ctx.writer.add(task="speed", dataset=problem.dataset,
                           setting="rel-gap=1e-6", method=name, default=(name == "quantum-cp"),
                           reached=bool(r.converged), time_to_target_s=entry["median_s"],
                           evaluations=r.iterations, final_objective=r.bound,
                           metrics={**problem.fields(), "bound": r.bound, "exact": None,
                                    "iterations": r.iterations, "gap": r.gap,
                                    "status": r.message, "times": entry["times"]})
        ctx.advance(f"Chambolle-Pock d={d}")
    if cfg.greedy_k10_repeats < 1:
        return
    problem = Problem(10)
    model = problem.one(31)
    res = time_alternating({"quantum-greedy-k10": lambda: greedy_features(model, 10)},
                           repeats=cfg.greedy_k10_repeats)["quantum-greedy-k10"]
    g = res["result"]
    ctx.writer.add(task="speed", dataset=problem.dataset, setting="greedy k=10",
                   method="quantum-greedy-k10", reached=True, time_to_target_s=res["median_s"],
                   final_objective=g.bound,
                   metrics={**problem.fields(), "bound": g.bound, "exact": None,
                            "iterations": None, "status": g.message, "times": res["times"],
                            "features_added": [h["added"] for h in g.history]})
    ctx.advance("greedy k=10")


def task_convergence(ctx, cfg, stats):
    """Suppl. Fig. 12-15: duality gap along Chambolle-Pock iterations; iterations vs d and n."""
    from zbound.ising.features import FeatureSet, degree_features
    from zbound.ising.quantum import quantum_bound

    ctx.start("Fig. 12-15 convergence", 3)
    curves = []
    problem = Problem(cfg.curve_d)
    for s in range(cfg.curve_draws):
        model = problem.one(41 + s)
        for tau, sig in ((3.0, 0.3), (1.0, 0.9), (10.0, 0.09)):
            # plain Chambolle-Pock as in the paper (the default Newton polish would end the
            # curve after a few dozen iterations)
            r = quantum_bound(model, tol=1e-10, tau=tau, sigma=sig, max_iter=5000,
                              check_every=10, polish=False)
            its, gap = _gap_curve(r.history)
            curves.append({"draw": s, "tau": tau, "sigma": sig, "d": problem.d,
                           "n": problem.d + 1, "iterations": its, "gap": gap})
    ctx.writer.set_extra("cp_gap_curves", curves)
    ctx.advance()
    for d in cfg.cp_iter_d:
        problem = Problem(d)
        its = []
        for s in range(3 if ctx.quick else 5):
            r = quantum_bound(problem.one(51 + s), tol=1e-8, max_iter=20000, check_every=10,
                              polish=False)
            its.append(r.iterations if r.converged else None)
        ctx.writer.add(task="cp-iterations", dataset="gaussian/complete", setting=f"d={d}",
                       method="quantum", default=True, reached=all(i is not None for i in its),
                       evaluations=mean_std(its)[0],
                       metrics={"x": d, **problem.fields(), "n": d + 1, "bound": None,
                                "exact": None, "iterations": mean_std(its)[0], "per_draw": its,
                                "tol": 1e-8})
    ctx.advance()
    problem = Problem(10)
    full = degree_features(problem.d, 3).masks
    general = []
    n_curve = cfg.general_curve_n
    for s in range(cfg.curve_draws):
        model = problem.one(71 + s)
        for tau, sig in ((3.0, 0.3), (1.0, 0.9)):
            r = quantum_bound(model, FeatureSet(problem.d, full[:n_curve]), tol=1e-8,
                              tau=tau, sigma=sig, max_iter=cfg.general_curve_iter,
                              check_every=10, polish=False)
            its, gap = _gap_curve(r.history)
            general.append({"draw": s, "tau": tau, "sigma": sig, "d": problem.d, "n": n_curve,
                            "iterations": its, "gap": gap})
    ctx.writer.set_extra("cp_gap_curves_general", general)
    for n in cfg.cp_general_n:
        its = []
        for s in range(3 if ctx.quick else 5):
            r = quantum_bound(problem.one(61 + s), FeatureSet(problem.d, full[:n]), tol=1e-2,
                              max_iter=20000, check_every=10, polish=False)
            its.append(r.iterations if r.converged else None)
        ctx.writer.add(task="cp-iterations-general", dataset=problem.dataset,
                       setting=f"n={n}", method="quantum", reached=all(i is not None for i in its),
                       evaluations=mean_std(its)[0],
                       metrics={"x": n, **problem.fields(), "n": n, "features": "degree order",
                                "bound": None, "exact": None, "iterations": mean_std(its)[0],
                                "per_draw": its, "tol": 1e-2})
    ctx.advance()


SCALE_TARGET_D = 1000
SCALE_TARGET_S = 60.0
#: the quantum bound on ``SCALE_THREADS`` BLAS threads: (d, target seconds)
SCALE_THREAD_TARGETS = ((2000, 60.0), (4000, 600.0))
SCALE_THREADS = 2


def task_scale(ctx, cfg, stats):
    """Scale: the library's quantum bound (features (1, x), relative gap 1e-6) and
    TRW (rho = 2/d) on complete graphs with Gaussian parameters, d in ``cfg.scale_d``, and the
    quantum bound alone on ``SCALE_THREADS`` BLAS threads for d in ``cfg.scale_threads_d``
    (method "quantum-2threads"); one record per (d, method) with seconds, iterations,
    eigendecompositions, bound and gap."""
    import warnings

    from zbound.ising.quantum import quantum_bound
    from zbound.ising.trw import trw_bound

    ds = tuple(cfg.scale_d)
    threads_ds = tuple(cfg.scale_threads_d)
    if not ds and not threads_ds:
        return
    ctx.start("scale: quantum and TRW vs d", len(ds) + len(threads_ds))

    def trw(model, trw_iter):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)   # recorded via ``converged``
            return trw_bound(model, rho="uniform", max_iter=trw_iter)

    for d in ds:
        problem = Problem(d)
        model = problem.one(81)
        # alternate the two methods; big instances once (they take seconds to a minute)
        reps = cfg.scale_repeats if d <= 200 else 1
        # a TRW sweep costs O(d^2) (0.3 s at d = 1000): the sweep limit shrinks like 1/d^2
        trw_iter = min(cfg.scale_trw_max_iter, max(200, int(cfg.scale_trw_work / d**2)))
        res = time_alternating({"quantum": lambda model=model: quantum_bound(model, tol=1e-6),
                                "trw": lambda model=model, k=trw_iter: trw(model, k)},
                               repeats=reps)
        for name, entry in res.items():
            _scale_record(ctx, problem, name, entry, trw_iter, 1)
        ctx.advance(f"scale d={d}")
    for d in threads_ds:
        problem = Problem(d)
        model = problem.one(81)
        entry = time_alternating(
            {"quantum": lambda model=model: quantum_bound(model, tol=1e-6,
                                                          blas_threads=SCALE_THREADS)},
            repeats=1)["quantum"]
        _scale_record(ctx, problem, f"quantum-{SCALE_THREADS}threads", entry, None,
                      SCALE_THREADS)
        ctx.advance(f"scale d={d}, {SCALE_THREADS} threads")


def _scale_record(ctx, problem, name: str, entry: dict, trw_iter, threads: int) -> None:
    """One record of the scale task (a quantum or a TRW solve at one d)."""
    r = entry["result"]
    q = name.startswith("quantum")
    d = problem.d
    metrics = {
        "x": d, **problem.fields(), "n": d + 1 if q else None,
        "bound": r.bound, "exact": None, "primal": r.primal, "gap": r.gap,
        "iterations": r.iterations, "converged": bool(r.converged),
        "certified": True if q else bool(r.certified), "status": r.message,
        "seconds": entry["median_s"], "times": entry["times"],
        "newton_steps": r.newton_steps if q else None,
        "eigendecompositions": r.eigendecompositions if q else None,
        "max_iter": None if q else trw_iter, "tol": 1e-6, "blas_threads": threads,
    }
    ctx.writer.add(task="scale", dataset=problem.dataset, setting="rel-gap=1e-6",
                   method=name, default=name == "quantum", reached=bool(r.converged),
                   time_to_target_s=entry["median_s"] if r.converged else None,
                   evaluations=r.iterations, final_objective=r.bound, metrics=metrics)


def task_metric(ctx, cfg, stats):
    """Suppl. C: diagonal metric learning (eq. (10), Kelley's method) against the plain quantum
    relaxation (1, x) and three greedy features, Gaussian parameters, complete graph."""
    from zbound_benchmarks.suites.ising.methods import m_greedy, m_metric, m_quantum

    cells = [(d, eps) for d in cfg.metric_d for eps in cfg.metric_eps]
    ctx.start("Suppl. C metric learning", len(cells))
    for d, eps in cells:
        problem = Problem(d, "gaussian", "complete", epsilon=eps)
        base = Problem(d, "gaussian", "complete").draw(cfg.metric_draws, 9000 + d)
        models = [m.with_epsilon(eps) for m in base]
        methods = {"quantum": m_quantum, "quantum-metric": m_metric(cfg.metric_max_iter),
                   "quantum-greedy-k3": m_greedy(3)}
        compare(ctx, "metric", problem, f"d={d} eps={eps}", eps, models, methods, stats)
        ctx.advance(f"metric d={d} eps={eps}")


TASKS = (task_hierarchy, task_coupling, task_temperature, task_relative, task_zero_temperature,
         task_speed, task_convergence, task_scale, task_metric)


def run_all(ctx, cfg: Config) -> None:
    """Run every task with configuration ``cfg``; store the bound-validity counts as extra."""
    ctx.writer.set_extra("config", asdict(cfg))
    stats = new_stats()
    for task in TASKS:
        task(ctx, cfg, stats)
    ctx.writer.set_extra("bound_checks", {"checked": dict(stats["checked"]),
                                          "violations": dict(stats["violations"])})
