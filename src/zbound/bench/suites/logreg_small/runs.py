"""Running ``logreg-small``: the method plan, the timed runs of every cell, the untimed SQUAREM
count check, and :func:`run`, the suite's entry point.

Methods
    The library's plain Alg. 2 ("bound"), its accelerations ("squarem", "newton-bound") and the
    default solver (``zbound.solvers.DEFAULT_METHOD``, record flag ``default``), plus any
    ``Config.extra_methods`` (names registered in ``zbound.solvers.METHODS``). Peers: the
    library's baselines (SciPy BFGS, CG, L-BFGS-B, Newton-CG; own steepest descent and Newton,
    all on the same objective and the same start points, stopping at the same target) and
    scikit-learn's ``LogisticRegression`` (lbfgs, newton-cg, newton-cholesky) on the same design
    matrix (``fit_intercept=False``), with C chosen so that its objective is ours (see
    :func:`~zbound.bench.suites.logreg_small.problems.sklearn_C`). Whether a method run through
    ``zbound.solvers.minimize`` is a peer is ``zbound.solvers.METHODS[name].peer``.
    scikit-learn cannot start from a given point nor stop at a target: for every cell it gets
    the loosest ``tol`` in 1e-2 ... 1e-10 at which its solution (mapped to our theta, our
    objective) reaches the target, and that fit is timed.

Timing
    Each repeat runs every start point, and for each start all methods round-robin
    (``time_alternating``); each (method, start) keeps the median over ``repeats``, and
    ``time_to_target_s`` is the median over the start points of those medians (robust to bursts
    of load on a shared machine; the mean, which the paper reports, is in
    ``metrics.time_mean_over_starts_s``). The time includes
    everything a user pays: building the model for the library's methods, the estimator's
    ``fit`` for scikit-learn. A method that misses the target in its first round is not repeated.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from zbound.bench.harness import timed
from zbound.bench.suites.logreg_small.config import (
    REL_TARGET,
    SQUAREM_FACTOR,
    START_SCALE,
    Config,
    config,
)
from zbound.bench.suites.logreg_small.problems import (
    Problem,
    build_problem,
    cells,
    load_design,
    sklearn_C,
    sklearn_theta,
    start_points,
)
from zbound.bench.timing import budget_callback, downsample, thread_limit, time_alternating

#: Options :func:`run` takes through ``run_suite(..., options=...)``: ``config``, a
#: :class:`Config` replacing ``config(quick)`` (e.g. ``tiny()`` in tests).
OPTIONS = ("config",)


def default_method() -> str:
    """The method ``zbound.solvers.minimize`` uses when none is chosen."""
    import inspect

    from zbound import solvers

    name = getattr(solvers, "DEFAULT_METHOD", None) or getattr(solvers, "DEFAULT", None)
    if name is None:
        default = inspect.signature(solvers.minimize).parameters["method"].default
        name = default if isinstance(default, str) else "newton-bound"
    return str(name)


def method_plan(cfg: Config) -> tuple[list[str], dict[str, str], str]:
    """(library record names, ``minimize`` method of each record name, default record name).

    Record names in run order: ``cfg.library_methods`` and the default, then
    ``cfg.extra_methods`` (skipping one already run under another record name), then the
    ``cfg.solver_peers`` whose method is registered. The library ones are those with
    ``zbound.solvers.METHODS[method].peer`` false. ``cfg.methods``, if given, keeps only those
    record names. Raises ValueError for a library or extra method that is not registered.
    """
    from zbound import solvers

    registry = solvers.METHODS
    default = default_method()
    own = list(cfg.library_methods)
    if default not in own:
        own.append(default)
    solver_of = {m: m for m in own}
    for m in cfg.extra_methods:
        if m not in solver_of and m not in cfg.solver_peers.values():
            solver_of[m] = m
    unknown = [m for m in solver_of if m not in registry]
    if unknown:
        raise ValueError(f"logreg-small: methods {unknown} are not registered in "
                         f"zbound.solvers.METHODS (registered: {sorted(registry)})")
    solver_of.update({k: v for k, v in cfg.solver_peers.items() if v in registry})
    library = [n for n, m in solver_of.items() if not registry[m].peer]
    if cfg.methods is not None:
        keep = set(cfg.methods)
        library = [m for m in library if m in keep]
        solver_of = {k: v for k, v in solver_of.items() if k in keep}
    return library, solver_of, default


def _library_fn(problem: Problem, method: str, x0: np.ndarray, cfg: Config):
    from zbound.solvers import minimize

    def fn():
        return minimize(problem.model(), x0, method=method, target=problem.target, tol=1e-12,
                        max_iter=cfg.max_iter, callback=budget_callback(cfg.time_budget_s))

    return fn


def _sklearn_fn(problem: Problem, solver: str, tol: float, cfg: Config):
    from sklearn.linear_model import LogisticRegression

    C = sklearn_C(problem.reg, problem.n_classes)

    def fn():
        return LogisticRegression(C=C, fit_intercept=False, tol=tol, solver=solver,
                                  max_iter=cfg.sklearn_max_iter).fit(problem.X, problem.y)

    return fn


def choose_sklearn_tol(problem: Problem, solver: str, cfg: Config,
                       evaluate: Callable[[np.ndarray], float]) -> dict[str, Any]:
    """Loosest tol at which scikit-learn's solution reaches the target (our objective)."""
    tried = []
    for tol in cfg.sklearn_tols:
        clf = _sklearn_fn(problem, solver, tol, cfg)()
        f = evaluate(sklearn_theta(clf.coef_, problem.n_classes))
        tried.append((tol, f))
        if f <= problem.target:
            return {"tol": tol, "reached": True, "final_objective": f, "tried": tried}
    return {"tol": cfg.sklearn_tols[-1], "reached": False, "final_objective": tried[-1][1],
            "tried": tried}


def eval_costs(problem: Problem, x0: np.ndarray, n: int = 15) -> dict[str, float]:
    """Median seconds of one model construction, value+gradient, value+gradient+Hessian and
    Alg. 1 bound (majorizer) at ``x0``: what one iteration of each method family costs."""
    m = problem.model()
    calls = {
        "construct": problem.model,
        "value_and_grad": lambda: m.value_and_grad(x0),
        "value_grad_hessian": lambda: m.value_grad_hessian(x0),
        "hessian_dense": lambda: m.value_grad_hessian(x0)[2].to_dense(),
        "bound": lambda: m.majorizer(x0),
    }
    return {name: statistics.median(timed(fn)[0] for _ in range(n))
            for name, fn in calls.items()}


def _curve(trace, f_star: float, k: int) -> dict[str, list[float]]:
    obj = np.asarray(trace.objective, dtype=np.float64)
    idx = downsample(obj.shape[0], k)
    return {"iteration": idx.tolist(), "seconds": np.asarray(trace.seconds)[idx].tolist(),
            "gap": (obj[idx] - f_star).tolist()}


def _mean(xs: list[float]) -> float | None:
    return float(statistics.fmean(xs)) if xs else None


def run_cell(problem: Problem, starts: np.ndarray, cfg: Config, plan, writer=None,
             log: Callable[[str], None] | None = None) -> tuple[list[dict], dict]:
    """Time every method on one cell; returns (records, curves of the first start)."""
    library, solver_of, default = plan
    check = problem.model()
    # what a user gets on this cell: zbound.solvers.choose_method (lbfgs-precond for large
    # multiclass objectives), when that method runs here, else the plan's default
    from zbound.solvers import choose_method

    chosen = choose_method(check)
    if chosen != default and solver_of.get(chosen) == chosen:
        default = chosen

    def evaluate(theta):
        return float(check.value(theta))

    sk_names = [n for n in cfg.sklearn_peers if cfg.methods is None or n in cfg.methods]
    sk_choice = {name: choose_sklearn_tol(problem, cfg.sklearn_peers[name], cfg, evaluate)
                 for name in sk_names}
    names = list(solver_of) + sk_names

    def reached(n, r):
        if n in sk_choice:
            return sk_choice[n]["reached"]
        return bool(r.fun <= problem.target)

    fns = []
    for x0 in starts:
        f_i = {n: _library_fn(problem, m, x0, cfg) for n, m in solver_of.items()}
        f_i.update({n: _sklearn_fn(problem, cfg.sklearn_peers[n], sk_choice[n]["tol"], cfg)
                    for n in sk_names})
        fns.append(f_i)
    times, results = _time_over_starts(fns, names, cfg.repeats, reached)
    per, curves = _per_method(problem, cfg, names, sk_choice, times, results, reached,
                              evaluate)
    count_check = None
    if ("bound" in per and "squarem" in per and cfg.count_check_starts > 0
            and not (all(per["bound"]["reached"]) and all(per["squarem"]["reached"]))):
        count_check = squarem_count_check(problem, starts, per["squarem"], per["bound"], cfg)
        if log is not None:
            log(f"  {problem.group}: plain Alg. 2 bound-evaluation count check: "
                f"{count_check['verdict']}")
    records = []
    for n in names:
        rec = _cell_record(problem, cfg, n, per[n], library, default, solver_of,
                           sk_choice.get(n), len(starts))
        if n == "bound" and count_check is not None:
            rec["metrics"]["count_check"] = count_check
        if writer is not None:
            rec = writer.add(**rec)
        records.append(rec)
        if log is not None and not rec["reached"]:
            log(f"  {problem.group}: {n} reached the target from {sum(per[n]['reached'])}/"
                f"{len(starts)} starts")
    return records, curves


def _time_over_starts(fns: list[dict[str, Callable[[], Any]]], names: list[str], repeats: int,
                      reached: Callable[[str, Any], bool]) -> tuple[list[dict], list[dict]]:
    """Repeats are the outer loop and start points the inner one, so a burst of machine load
    lands on one repeat of several starts (which the medians absorb) rather than on every
    repeat of one start; within each (repeat, start) the methods run round-robin, and a
    method that misses the target in the first repeat is not timed again. Returns the times
    and the last results, per start and method."""
    times: list[dict[str, list[float]]] = [{n: [] for n in names} for _ in fns]
    results: list[dict[str, Any]] = [{} for _ in fns]
    alive = [list(names) for _ in fns]
    for rep in range(repeats):
        for i, f_i in enumerate(fns):
            if not alive[i]:
                continue
            out = time_alternating({n: f_i[n] for n in alive[i]}, 1)
            for n, e in out.items():
                times[i][n].extend(e["times"])
                results[i][n] = e["result"]
            if rep == 0:
                alive[i] = [n for n in names if reached(n, results[i][n])]
    return times, results


def _per_method(problem, cfg, names, sk_choice, times, results, reached, evaluate):
    """Per method, over the starts: median time, whether it reached, iterations,
    evaluations, final objective; and the first start's curve of each."""
    per = {n: {"times": [], "reached": [], "nit": [], "evals": [], "bound_evals": [],
               "final": [], "message": None} for n in names}
    curves: dict[str, Any] = {}
    for i in range(len(times)):
        for n in names:
            r = results[i][n]
            p = per[n]
            p["reached"].append(reached(n, r))
            p["times"].append(statistics.median(times[i][n]))
            if n in sk_choice:
                f = evaluate(sklearn_theta(r.coef_, problem.n_classes))
                p["final"].append(f)
                p["nit"].append(int(np.max(r.n_iter_)))
                p["evals"].append(None)
                if i == 0:
                    curves[n] = {"point": True, "seconds": [p["times"][-1]],
                                 "iteration": [int(np.max(r.n_iter_))],
                                 "gap": [f - problem.f_star]}
            else:
                p["final"].append(float(r.fun))
                p["nit"].append(int(r.nit))
                p["evals"].append(int(r.n_evals))
                p["bound_evals"].append(int(r.counts.get("bound", 0)))
                p["message"] = r.message
                if i == 0:
                    curves[n] = _curve(r.trace, problem.f_star, cfg.curve_points)
    return per, curves


def _cell_record(problem, cfg, n, p, library, default, solver_of, choice, n_starts) -> dict:
    all_ok = all(p["reached"])
    reached_times = [t for t, ok in zip(p["times"], p["reached"]) if ok]
    metrics: dict[str, Any] = {
        "iterations": int(statistics.median(p["nit"])),
        "n_starts": n_starts,
        "n_reached": int(sum(p["reached"])),
        "repeats": cfg.repeats,
        "time_per_start_s": p["times"],
        "time_mean_over_starts_s": _mean(reached_times) if all_ok else None,
        "max_final_objective": max(p["final"]),
        **problem.describe(),
    }
    rec: dict[str, Any] = {
        "task": problem.task, "dataset": problem.dataset, "setting": problem.setting,
        "method": n, "peer": n not in library, "default": n == default,
        "reached": all_ok,
        "time_to_target_s": statistics.median(p["times"]) if all_ok else None,
        "final_objective": statistics.median(p["final"]),
        "target_objective": problem.target,
    }
    if choice is not None:
        rec["evaluations"] = None
        metrics.update({
            "solver": cfg.sklearn_peers[n],
            "sklearn_C": sklearn_C(problem.reg, problem.n_classes),
            "sklearn_tol": choice["tol"],
            "sklearn_tols_tried": [t for t, _ in choice["tried"]],
            "start_point": "none: scikit-learn always starts at 0 (cannot take x0)",
            "stops_at_target": False,
        })
    else:
        rec["evaluations"] = int(statistics.median(p["evals"]))
        metrics.update({
            "solver": solver_of[n],
            "bound_evaluations": int(statistics.median(p["bound_evals"])),
            "bound_evaluations_per_start": p["bound_evals"],
            "start_point": f"shared N(0, {START_SCALE}^2) starts",
            "stops_at_target": True,
            "message": p["message"],
        })
    rec["metrics"] = metrics
    return rec


def squarem_count_check(problem: Problem, starts: np.ndarray, squarem: dict[str, list],
                        bound: dict[str, list], cfg: Config) -> dict[str, Any]:
    """Does plain Alg. 2 need >= SQUAREM_FACTOR x SQUAREM's bound evaluations? (untimed)

    The SQUAREM target is about counts, so the timed runs' budget must not decide it. From each
    of the first ``cfg.count_check_starts`` starts: SQUAREM's count s from its timed run, or, if
    that was cut by the budget, from an untimed re-run (budget ``count_check_budget_s``; not
    reaching the target even then fails the cell). Plain Alg. 2's count from its timed run if
    it reached the target, else from a re-run capped at cap = ceil(SQUAREM_FACTOR * s) bound
    evaluations: reached with k evaluations gives the factor k / s exactly; not reached after
    cap proves the factor is above SQUAREM_FACTOR without running to the end; cut by the budget
    first leaves only a lower bound. Verdict over the starts checked: "pass" if every factor
    (or its lower bound) is >= SQUAREM_FACTOR, "fail" if SQUAREM never reached the target or
    some exact factor is below it, else "undetermined". ``squarem`` and ``bound`` hold the
    timed runs' per-start "reached" and "bound_evals".
    """
    from zbound.solvers import minimize

    def run(method, x0, max_iter):
        r = minimize(problem.model(), x0, method=method, target=problem.target, tol=1e-12,
                     max_iter=max_iter, callback=budget_callback(cfg.count_check_budget_s))
        return int(r.counts.get("bound", 0)), bool(r.fun <= problem.target)

    rows = []
    for i in range(min(cfg.count_check_starts, len(starts))):
        t0 = time.perf_counter()
        s, s_ok, s_rerun = int(squarem["bound_evals"][i]), bool(squarem["reached"][i]), False
        if not s_ok:
            (s, s_ok), s_rerun = run("squarem", starts[i], cfg.max_iter), True
        cap = int(math.ceil(SQUAREM_FACTOR * s))
        k, reached, rerun = int(bound["bound_evals"][i]), bool(bound["reached"][i]), False
        if not reached and s_ok:
            (k, reached), rerun = run("bound", starts[i], max(cap - 1, 0)), True
        rows.append({"start": i, "squarem_evaluations": s, "squarem_reached": s_ok,
                     "squarem_rerun": s_rerun, "cap": cap, "bound_evaluations": k,
                     "reached": reached, "bound_rerun": rerun, "exact": reached and s_ok,
                     "decided": s_ok and (reached or k >= cap),
                     "factor": k / s if s else None, "seconds": time.perf_counter() - t0})
    if any(not r["squarem_reached"] for r in rows) or any(
            r["exact"] and r["factor"] < SQUAREM_FACTOR for r in rows):
        verdict = "fail"
    elif rows and all(r["decided"] and r["factor"] >= SQUAREM_FACTOR for r in rows):
        verdict = "pass"
    else:
        verdict = "undetermined"
    return {"starts": rows, "verdict": verdict, "factor_target": SQUAREM_FACTOR,
            "budget_s": cfg.count_check_budget_s}


def suite_config(ctx) -> Config:
    """The run's :class:`Config`: ``ctx.options["config"]`` if given, else ``config(ctx.quick)``;
    names in ``ctx.methods`` are added to its ``extra_methods``."""
    options = dict(getattr(ctx, "options", None) or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"logreg-small: unknown options {unknown}; known: {list(OPTIONS)}")
    cfg = options.get("config")
    if cfg is None:
        cfg = config(ctx.quick)
    elif not isinstance(cfg, Config):
        raise TypeError(f"logreg-small: option 'config' must be a Config, got "
                        f"{type(cfg).__name__}")
    extra = tuple(m for m in (getattr(ctx, "methods", None) or ()) if m not in cfg.extra_methods)
    if extra:
        cfg = replace(cfg, extra_methods=tuple(cfg.extra_methods) + extra)
    return cfg


def run(ctx) -> None:
    """Entry point for :func:`zbound.bench.runner.run_suite`."""
    from sklearn.exceptions import ConvergenceWarning

    cfg = suite_config(ctx)
    plan = method_plan(cfg)
    writer = ctx.writer
    todo = cells(cfg)
    writer.set_extra("config", {
        "starts_table3": cfg.starts_table3, "starts_weak": cfg.starts_weak,
        "repeats": cfg.repeats, "max_iter": cfg.max_iter, "time_budget_s": cfg.time_budget_s,
        "sklearn_tols": list(cfg.sklearn_tols), "rel_target": REL_TARGET,
        "start_scale": START_SCALE, "default_method": plan[2],
        "blas_threads": cfg.blas_threads,
        "methods": list(plan[1]) + [n for n in cfg.sklearn_peers
                                    if cfg.methods is None or n in cfg.methods],
        "extra_methods": list(cfg.extra_methods),
    })
    data: dict[str, Any] = {}
    references: dict[str, Any] = {}
    costs: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    ctx.start("logreg-small", total=len(todo))
    with warnings.catch_warnings(), thread_limit(cfg.blas_threads):
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message=".*lbfgs failed to converge.*")
        for task, dataset, setting, lam, C in todo:
            if dataset in ctx.skipped_data:
                ctx.advance()
                continue
            if dataset not in data:
                loaded = ctx.load(dataset, load_design, dataset)
                if loaded is None:
                    ctx.advance()
                    continue
                data[dataset] = loaded
            problem = build_problem(task, dataset, setting, lam, C, data[dataset])
            references[problem.group] = {"f_star": problem.f_star, "target": problem.target,
                                         "reg": problem.reg, "shape": list(problem.X.shape),
                                         "n_classes": problem.n_classes, **problem.reference}
            writer.set_extra("references", references)
            n_starts = cfg.starts_table3 if task == "table3" else cfg.starts_weak
            starts = start_points(dataset, n_starts, problem.n_classes * problem.X.shape[1])
            if dataset not in costs:
                costs[dataset] = {"shape": list(problem.X.shape),
                                  "n_classes": problem.n_classes,
                                  **eval_costs(problem, starts[0])}
                writer.set_extra("eval_costs", costs)
            _, cell_curves = run_cell(problem, starts, cfg, plan, writer, ctx.log)
            curves[problem.group] = {"task": task, "dataset": dataset, "setting": setting,
                                     "f_star": problem.f_star,
                                     "target_gap": problem.target - problem.f_star,
                                     "methods": cell_curves}
            writer.set_extra("curves", curves)
            ctx.advance(f"logreg-small {dataset} {setting}")


