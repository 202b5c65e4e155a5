"""Running ``logreg-small``: the method plan, the timed runs of every cell (the shared runner of
:mod:`zbound_benchmarks.suites.logreg`), the untimed SQUAREM count check, and :func:`run`.

Methods
    The library's plain Alg. 2 ("bound"), its accelerations ("squarem", "newton-bound") and the
    default solver, plus any ``Config.extra_methods`` (names registered in
    ``zbound.solvers.METHODS``). Peers: the library's baselines (SciPy BFGS, CG, L-BFGS-B,
    Newton-CG; own steepest descent and Newton, all on the same objective and start points,
    stopping at the same target) and scikit-learn's ``LogisticRegression`` (lbfgs, newton-cg,
    newton-cholesky) on the same design matrix (``fit_intercept=False``, C chosen so that its
    objective is ours: ``Problem.sklearn_C``), at the loosest ``tol`` in 1e-2 ... 1e-10 whose
    solution reaches the target. Whether a method run through ``zbound.solvers.minimize`` is a
    peer is ``zbound.solvers.METHODS[name].peer``.

The times include everything a user pays: building the model for the library's methods, the
estimator's ``fit`` for scikit-learn; ``time_to_target_s`` is the median over the start points
of each start's median over the repeats (the paper's mean is ``time_mean_over_starts_s``).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from zbound.solvers import DEFAULT_METHOD
from zbound_benchmarks.harness import suite_config, timed
from zbound_benchmarks.suites.logreg import (
    START_SCALE,
    Method,
    Problem,
    cell_default,
    run_cell,
    start_points,
)
from zbound_benchmarks.suites.logreg_small.config import REL_TARGET, SQUAREM_FACTOR, Config, config
from zbound_benchmarks.suites.logreg_small.problems import build_problem, cells, load_design
from zbound_benchmarks.timing import budget_callback, thread_limit

#: Options :func:`run` takes through ``run_suite(..., options=...)``: ``config``, a
#: :class:`Config` replacing ``config(quick)`` (e.g. ``tiny()`` in tests).
OPTIONS = ("config",)


def method_plan(cfg: Config) -> list[Method]:
    """The methods of every cell, in run order: ``cfg.library_methods`` and the default, then
    ``cfg.extra_methods`` (one already run under another record name is not run twice), the
    ``cfg.solver_peers`` whose method is registered, and ``cfg.sklearn_peers``; ``cfg.methods``,
    if given, keeps only those record names. Raises ValueError for a library or extra method
    that is not registered."""
    from zbound import solvers

    registry = solvers.METHODS
    solver_of = {m: m for m in dict.fromkeys((*cfg.library_methods, DEFAULT_METHOD))}
    for m in cfg.extra_methods:
        if m not in solver_of and m not in cfg.solver_peers.values():
            solver_of[m] = m
    unknown = [m for m in solver_of if m not in registry]
    if unknown:
        raise ValueError(f"logreg-small: methods {unknown} are not registered in "
                         f"zbound.solvers.METHODS (registered: {sorted(registry)})")
    solver_of.update({k: v for k, v in cfg.solver_peers.items() if v in registry})
    methods = [Method(n, "solver", m, registry[m].peer) for n, m in solver_of.items()]
    methods += [Method(n, "sklearn", s, True) for n, s in cfg.sklearn_peers.items()]
    return [m for m in methods if cfg.methods is None or m.name in cfg.methods]


def with_default(methods: list[Method], problem: Problem) -> list[Method]:
    """``methods`` with the one a user gets on this cell marked default
    (``zbound.solvers.choose_method``, where that method runs here; else ``DEFAULT_METHOD``)."""
    names = {m.name for m in methods if m.kind == "solver" and m.name == m.spec}
    chosen = cell_default(problem)
    default = chosen if chosen in names else DEFAULT_METHOD
    return [replace(m, default=m.name == default) for m in methods]


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


def _per_start(rec: dict) -> dict[str, list]:
    """A record's per-start outcome: reached (a time), bound evaluations."""
    m = rec["metrics"]
    return {"reached": [t is not None for t in m["time_per_start_s"]],
            "bound_evals": m.get("bound_evaluations_per_start") or []}


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


def run_problem(problem: Problem, starts: np.ndarray, cfg: Config, methods: list[Method],
                writer, log) -> dict[str, Any]:
    """Time every method on one cell (records written as they come); where plain Alg. 2 or
    SQUAREM missed the target, the untimed count check goes into plain Alg. 2's record.
    Returns the first start's curves."""
    records, curves = run_cell(problem, starts, cfg, with_default(methods, problem), {})
    by = {r["method"]: r for r in records}
    if ("bound" in by and "squarem" in by and cfg.count_check_starts > 0
            and not (by["bound"]["reached"] and by["squarem"]["reached"])):
        check = squarem_count_check(problem, starts, _per_start(by["squarem"]),
                                    _per_start(by["bound"]), cfg)
        by["bound"]["metrics"]["count_check"] = check
        log(f"  {problem.group}: plain Alg. 2 bound-evaluation count check: "
            f"{check['verdict']}")
    for rec in records:
        writer.add(**rec)
        if not rec["reached"]:
            log(f"  {problem.group}: {rec['method']} reached the target from "
                f"{rec['metrics']['n_reached']}/{len(starts)} starts")
    curves.pop("_seconds", None)
    return curves


def suite_options(ctx) -> Config:
    """The run's :class:`Config`, with the names in ``ctx.methods`` added to its
    ``extra_methods``."""
    cfg = suite_config(ctx, config, Config)
    extra = tuple(m for m in (getattr(ctx, "methods", None) or ()) if m not in cfg.extra_methods)
    return replace(cfg, extra_methods=tuple(cfg.extra_methods) + extra) if extra else cfg


def run(ctx) -> None:
    """Entry point for :func:`zbound_benchmarks.runner.run_suite`."""
    from sklearn.exceptions import ConvergenceWarning

    cfg = suite_options(ctx)
    methods = method_plan(cfg)
    writer = ctx.writer
    todo = cells(cfg)
    writer.set_extra("config", {
        "starts_table3": cfg.starts_table3, "starts_weak": cfg.starts_weak,
        "repeats": cfg.repeats, "max_iter": cfg.max_iter, "time_budget_s": cfg.time_budget_s,
        "sklearn_tols": list(cfg.tols), "rel_target": REL_TARGET,
        "start_scale": START_SCALE, "default_method": DEFAULT_METHOD,
        "blas_threads": cfg.blas_threads, "methods": [m.name for m in methods],
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
            if dataset not in data:
                data[dataset] = ctx.load(dataset, load_design, dataset)
            if data[dataset] is None:
                ctx.advance()
                continue
            problem = build_problem(task, dataset, setting, lam, C, data[dataset])
            references[problem.group] = {"f_star": problem.f_star, "target": problem.target,
                                         "reg": problem.reg, "shape": list(problem.X.shape),
                                         "n_classes": problem.n_classes, **problem.reference}
            writer.set_extra("references", references)
            n_starts = cfg.starts_table3 if task == "table3" else cfg.starts_weak
            starts = start_points(dataset, n_starts, problem.n_params)
            if dataset not in costs:
                costs[dataset] = {"shape": list(problem.X.shape),
                                  "n_classes": problem.n_classes,
                                  **eval_costs(problem, starts[0])}
                writer.set_extra("eval_costs", costs)
            curves[problem.group] = {
                "task": task, "dataset": dataset, "setting": setting, "f_star": problem.f_star,
                "target_gap": problem.target - problem.f_star,
                "methods": run_problem(problem, starts, cfg, methods, writer, ctx.log)}
            writer.set_extra("curves", curves)
            ctx.advance(f"logreg-small {dataset} {setting}")
