"""Running ``logreg-large``: the method plan of a cell, the Table 4 rank sweep, and
:func:`run`, the suite's entry point.

Methods
    Library: ``newton-bound`` (``zbound.solvers.DEFAULT_METHOD``), ``lbfgs-precond`` (the
    default of the large multiclass cells: :func:`cell_default`), ``bound``
    (plain Alg. 2), ``squarem`` and, when the low-rank bound exists
    (``"rank" in zbound.solvers.BoundMM.options``), ``bound`` with rank 10 (``bound-rank10``);
    on the larger data also the estimator ``BoundLogisticRegression(C).fit``
    (``zbound-estimator``, fitted like scikit-learn: whole ``fit`` timed, loosest tol that
    reaches the target). Peers: SciPy L-BFGS-B, CG, Newton-CG through ``zbound.solvers.minimize``
    on the same objective (Table 1 also the library's steepest descent, the paper's SD column);
    scikit-learn ``LogisticRegression`` (lbfgs, newton-cg, newton-cholesky, saga); glum's
    binomial ``GeneralizedLinearRegressor`` (irls-cd, lbfgs) on two-class problems.


The timing and memory protocol is :mod:`zbound_benchmarks.suites.logreg`'s; one BLAS thread.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from zbound.solvers import DEFAULT_METHOD
from zbound_benchmarks.harness import stopwatch, suite_config, timed
from zbound_benchmarks.suites.logreg import (
    START_SCALE,
    Method,
    Problem,
    cell_default,
    run_cell,
    start_points,
)
from zbound_benchmarks.suites.logreg_large.config import (
    ESTIMATOR,
    ESTIMATOR_DOUBLE,
    ESTIMATOR_MIXED,
    PAPER_LAMBDA,
    Config,
    config,
)
from zbound_benchmarks.suites.logreg_large.problems import (
    build,
    large_problem,
    load_large,
    load_paper,
    paper_problem,
)
from zbound_benchmarks.timing import thread_limit

#: Options :func:`run` takes through ``run_suite(..., options=...)``: ``config``, a
#: :class:`Config` replacing ``config(quick)`` (e.g. ``tiny()`` in tests).
OPTIONS = ("config",)
#: scikit-learn's newton-cholesky forms and factors a dense (p x p) Hessian: above this many
#: parameters it is not run (SRBCT, p = 9236: 148 s for one fit at tol 1e-4 in a trial run,
#: Text, p = 11961: 85 s for one iteration; both far beyond the time budget).
DENSE_HESSIAN_MAX_PARAMS = 3000

LOWRANK_MISSING = "skipped: low-rank bound not available (no 'rank' option in BoundMM.options)"


def lowrank_available() -> bool:
    """Whether ``minimize(model, x0, method="bound", rank=k)`` exists in this tree."""
    from zbound.solvers import BoundMM

    return "rank" in getattr(BoundMM, "options", {})


def glum_status() -> str | None:
    """None if glum imports, else the reason it is skipped."""
    try:
        import glum  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the environment
        return f"skipped: glum is not installed ({type(exc).__name__}: {exc})"
    return None





def _sklearn_methods(cfg: Config, problem: Problem, skipped: dict[str, str]) -> list[Method]:
    """The scikit-learn peers of a cell; newton-cholesky above ``DENSE_HESSIAN_MAX_PARAMS``
    goes to ``skipped`` with the reason."""
    methods = []
    for n, s in cfg.sklearn_peers.items():
        p = problem.n_params if problem.n_classes > 2 else problem.X.shape[1]
        if s == "newton-cholesky" and p > DENSE_HESSIAN_MAX_PARAMS:
            skipped[n] = (f"skipped: newton-cholesky forms and factors a dense {p} x {p} "
                          f"Hessian ({8 * p * p / 2**20:.0f} MB, O(p^3) per iteration; "
                          f"limit {DENSE_HESSIAN_MAX_PARAMS} parameters), far beyond the "
                          "time budget")
            continue
        methods.append(Method(n, "sklearn", s, True))
    return methods


def _estimator_methods(cfg: Config) -> list[Method]:
    if not cfg.estimator:
        return []
    return [Method(ESTIMATOR, "estimator", "auto", False),
            Method(ESTIMATOR_MIXED, "estimator", "mixed", False),
            Method(ESTIMATOR_DOUBLE, "estimator", "double", False)]


def _estimator_plan(cfg: Config, problem: Problem):
    """An estimator-only cell: the estimator's variants and scikit-learn's solvers."""
    skipped: dict[str, str] = {}
    methods = _estimator_methods(cfg) + _sklearn_methods(cfg, problem, skipped)
    methods = [m for m in methods if cfg.keep(m.name)]
    return methods, {k: v for k, v in skipped.items() if cfg.keep(k)}, {}


def method_plan(cfg: Config, problem: Problem
                ) -> tuple[list[Method], dict[str, str], dict[str, str]]:
    """(methods to run, skipped methods with a record: name -> reason, notes: methods left out
    of this cell without a record: name -> reason)."""
    if problem.task == "estimator":     # the estimator against scikit-learn only
        return _estimator_plan(cfg, problem)
    default = cell_default(problem)
    own = list(cfg.library_methods) + ([default] if default not in cfg.library_methods else [])
    methods = [Method(m, "solver", m, False, m == default) for m in own]
    skipped: dict[str, str] = {}
    notes: dict[str, str] = {}
    if lowrank_available():
        methods += [Method(n, "solver", "bound", False, options={"rank": k})
                    for n, k in cfg.lowrank_methods.items()]
    else:
        notes.update({n: LOWRANK_MISSING for n in cfg.lowrank_methods})
    if problem.paper:  # d >> t: Newton / Alg. 2 solved in sample space (solvers.sample_space)
        methods += [Method(n, "solver", n, False) for n in ("sample-newton", "sample-bound")]
    peers = dict(cfg.solver_peers)
    if problem.paper:
        peers.update(cfg.paper_solver_peers)
    methods += [Method(n, "solver", m, True) for n, m in peers.items()]
    methods += _sklearn_methods(cfg, problem, skipped)
    if problem.n_classes == 2:
        reason = glum_status()
        p = problem.X.shape[1]
        for n, s in cfg.glum_peers.items():
            if reason is not None:
                skipped[n] = reason
            elif s.startswith("irls") and p > DENSE_HESSIAN_MAX_PARAMS:
                skipped[n] = (f"skipped: glum's {s} forms a dense {p} x {p} Hessian "
                              f"({8 * p * p / 2**20:.0f} MB) every iteration (limit "
                              f"{DENSE_HESSIAN_MAX_PARAMS} parameters); a trial fit on Text "
                              "ran for minutes")
            else:
                methods.append(Method(n, "glum", s, True))
    else:
        notes.update({n: "glum has no multinomial family: left out of multiclass cells"
                      for n in cfg.glum_peers})
    if not problem.paper:
        methods += _estimator_methods(cfg)
    methods = [m for m in methods if cfg.keep(m.name)]
    skipped = {k: v for k, v in skipped.items() if cfg.keep(k)}
    return methods, skipped, notes


# -- the suite -------------------------------------------------------------------------------

def rank_sweep(problem: Problem, starts: np.ndarray, cfg: Config, writer, log) -> dict:
    """Table 4: the low-rank bound at every rank on the Table 1 cell (same target, starts)."""
    if not lowrank_available():
        return {"skipped": LOWRANK_MISSING}
    curves = {}
    for k in cfg.ranks:
        cell = replace(problem, task="table4", setting=f"k={k}")
        m = Method("bound-lowrank", "solver", "bound", False, options={"rank": k})
        _, c = run_cell(cell, starts, cfg, [m], {}, writer, log)
        curves[f"k={k}"] = c.get(m.name)
    return {"curves": curves}


def run(ctx) -> None:
    """Entry point for :func:`zbound_benchmarks.runner.run_suite`."""
    from sklearn.exceptions import ConvergenceWarning

    cfg = suite_config(ctx, config, Config)
    writer = ctx.writer
    writer.set_extra("config", {
        "paper_sets": list(cfg.paper_sets), "large_sets": list(cfg.large_sets),
        "C_values": list(cfg.C_values), "C_by_set": {k: list(v) for k, v in cfg.C_by_set.items()},
        "paper_starts": cfg.paper_starts, "rank_starts": cfg.rank_starts,
        "ranks": list(cfg.ranks), "repeats": cfg.repeats, "slow_unit_s": cfg.slow_unit_s,
        "time_budget_s": cfg.time_budget_s,
        "memory_budget_s": cfg.memory_budget_s, "tols": list(cfg.tols),
        "lowrank_limit_s": cfg.lowrank_limit_s, "probe_rows": list(cfg.probe_rows),
        "synthetic_rows": cfg.synthetic_rows, "kmnist_rows": cfg.kmnist_rows,
        "blas_threads": cfg.blas_threads, "default_method": DEFAULT_METHOD,
        "lowrank_available": lowrank_available(), "glum": glum_status() or "available",
        "start_scale": START_SCALE,
    })
    notes: dict[str, Any] = {}
    references: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    datasets: dict[str, str] = {}
    cell_seconds: dict[str, Any] = {}
    todo = [("paper", d, None) for d in cfg.paper_sets]
    todo += [("large", d, C) for d in cfg.large_sets for C in cfg.Cs(d)]
    todo += [("estimator", d, C) for d in cfg.estimator_sets for C in cfg.estimator_C]
    ctx.start("logreg-large", total=len(todo) + (1 if "srbct" in cfg.paper_sets else 0))
    loaded: dict[str, Any] = {}
    run_seconds: dict[str, float] = {}
    with warnings.catch_warnings(), thread_limit(cfg.blas_threads), \
            stopwatch(run_seconds, "run"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message=".*converge.*")
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        for kind, name, C in todo:
            if name in ctx.skipped_data:
                ctx.advance()
                continue
            if name not in loaded:
                got = ctx.load(name, load_paper, name, cfg.seed) if name in PAPER_LAMBDA else \
                    ctx.load(name, load_large, name, cfg.synthetic_rows, cfg.kmnist_rows,
                             cfg.seed)
                if got is None:
                    ctx.advance()
                    continue
                loaded[name] = got
                datasets[name] = loaded[name].note
                writer.set_extra("datasets", datasets)
            data = loaded[name]
            problem = paper_problem(data) if kind == "paper" else \
                large_problem(data, C, "estimator" if kind == "estimator" else "large")
            problem = build(problem, 2 * cfg.time_budget_s)
            references[problem.group] = {"f_star": problem.f_star, "targets": problem.targets,
                                         "shape": list(problem.X.shape),
                                         "n_params": problem.n_params, **problem.reference}
            writer.set_extra("references", references)
            methods, skipped, cell_notes = method_plan(cfg, problem)
            notes.update(cell_notes)
            writer.set_extra("notes", notes)
            n_starts = cfg.paper_starts if problem.paper else 1
            starts = start_points(name, n_starts, problem.n_params) if problem.paper else \
                np.zeros((1, problem.n_params))
            seconds, (_, cell_curves) = timed(partial(run_cell, problem, starts, cfg, methods,
                                                      skipped, writer, ctx.log))
            cell_seconds[problem.group] = {"total": seconds, **cell_curves.pop("_seconds")}
            writer.set_extra("cell_seconds", cell_seconds)
            curves[problem.group] = {"task": problem.task, "dataset": name,
                                     "setting": problem.setting, "f_star": problem.f_star,
                                     "targets": problem.targets, "methods": cell_curves}
            writer.set_extra("curves", curves)
            ctx.advance(f"logreg-large {name} {problem.setting}")
            if kind == "paper" and name == "srbct":
                sweep = rank_sweep(problem, starts[:cfg.rank_starts], cfg, writer, ctx.log)
                writer.set_extra("rank_sweep", sweep)
                ctx.advance("logreg-large srbct rank sweep")
    writer.set_extra("run_seconds", run_seconds["run"])
