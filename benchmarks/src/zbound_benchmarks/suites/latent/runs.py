"""Running ``latent``: every method on the same objective, split and start, and the toy.

Per (data set, m) cell and per split, the same random starts (N(0, start_scale^2) per
parameter) go to every method in turn (the order rotates from start to start). Each run stops
by the paper's rule (objective change below ``ftol`` relative) or at ``max_iter`` or the wall
budget. A record holds the mean over splits x starts of the test latent log-likelihood summed
over the test rows (the paper's scale: Table 5 averages over 10 starts), its median, the test
accuracy, the training objective, iterations, seconds, and how runs ended.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from zbound_benchmarks.harness import suite_config, timed
from zbound_benchmarks.records import BenchRecord
from zbound_benchmarks.suites.latent.config import PAPER_M, PAPER_TABLE5, PAPER_TOY, Config, config
from zbound_benchmarks.suites.latent.figures import toy_figure
from zbound_benchmarks.suites.latent.problems import Split, load_split, stripes
from zbound_benchmarks.timing import budget_callback, thread_limit


def fit_once(X, y, n_classes, M, reg, method: str, x0, cfg: Config) -> dict[str, Any]:
    """One run from x0: the result and its wall time (model construction included).
    "bound-long" is Alg. 2 with ``cfg.toy_long_ftol``, 10x the iterations and 4x the time."""
    from zbound.models.latent import latent_objective
    from zbound.solvers import minimize

    budget, ftol, max_iter = cfg.time_budget_s, cfg.ftol, cfg.max_iter
    if method == "bound-long":
        method, ftol, max_iter, budget = "bound", cfg.toy_long_ftol, 10 * max_iter, 4 * budget
    def fit():
        stop = budget_callback(budget)
        model = latent_objective(X, y, M, reg, n_classes)
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            return model, minimize(model, x0, method=method, ftol=ftol, tol=1e-10,
                                   max_iter=max_iter, callback=stop)

    seconds, (model, res) = timed(fit)
    return {"res": res, "model": model, "seconds": seconds}


def polish(run, cfg: Config) -> Any:
    """Continue from a run's endpoint with ``cfg.polish_method`` (a monotone descent method)
    to the stationary point of the basin the run ended in: the local optimum it found,
    whatever its stopping rule. Gradient tolerance 1e-9 (relative), at most
    ``cfg.polish_max_iter`` iterations and ``cfg.time_budget_s`` seconds."""
    from zbound.solvers import minimize

    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        return minimize(run["model"], run["res"].x, method=cfg.polish_method, tol=1e-9,
                        max_iter=cfg.polish_max_iter,
                        callback=budget_callback(cfg.time_budget_s))


def _evaluate(run, Xt, yt) -> dict[str, Any]:
    res, model = run["res"], run["model"]
    lp = model.loss.log_proba(res.x, Xt)
    ll = float(lp[np.arange(yt.size), yt].sum())
    mass = model.loss.pair_mass(res.x)
    share = mass / np.maximum(mass.sum(axis=1, keepdims=True), 1e-300)
    status = res.status.name.lower()
    if status == "callback":
        status = "time_budget"
    return {"test_loglik": ll if math.isfinite(ll) else -1e300,
            "test_accuracy": float(np.mean(lp.argmax(axis=1) == yt)),
            "train_objective": float(res.fun), "iterations": int(res.nit),
            "seconds": run["seconds"], "status": status,
            "theta_norm": float(np.linalg.norm(res.x)),
            "collapsed": int(np.sum(share < 1e-6)), "converged": bool(res.converged)}


def _record(ctx, task, dataset, setting, method, rows, extra) -> dict[str, Any]:
    ll = [r["test_loglik"] for r in rows]
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    metrics = {
        "test_loglik": statistics.fmean(ll),
        "test_loglik_median": statistics.median(ll),
        "test_loglik_best": max(ll),
        "test_loglik_per_row": statistics.fmean(ll) / extra["t_test"],
        "test_accuracy": statistics.fmean(r["test_accuracy"] for r in rows),
        "train_objective_mean": statistics.fmean(r["train_objective"] for r in rows),
        "iterations": statistics.fmean(r["iterations"] for r in rows),
        "seconds_median": statistics.median(r["seconds"] for r in rows),
        "theta_norm_mean": statistics.fmean(r["theta_norm"] for r in rows),
        "collapsed_mean": statistics.fmean(r["collapsed"] for r in rows),
        "runs": len(rows), "status_counts": statuses,
        "test_logliks": ll,
        "theta_norms": [r["theta_norm"] for r in rows],
        "train_objectives": [r["train_objective"] for r in rows],
        "test_accuracies": [r["test_accuracy"] for r in rows],
        "statuses": [r["status"] for r in rows],
        **extra,
    }
    if rows and "polished_objective" in rows[0]:
        metrics["polished_objectives"] = [r["polished_objective"] for r in rows]
        metrics["polished_test_logliks"] = [r["polished_test_loglik"] for r in rows]
        metrics["polished_objective_mean"] = statistics.fmean(metrics["polished_objectives"])
    rec = BenchRecord(task=task, dataset=dataset, setting=setting, method=method,
                      peer=method != "bound", default=False,
                      reached=all(r["converged"] for r in rows),
                      time_to_target_s=statistics.median(r["seconds"] for r in rows),
                      evaluations=None, final_objective=metrics["train_objective_mean"],
                      target_objective=None, metrics=metrics)
    ctx.writer.add_record(rec)
    return metrics


def _splits(ctx, cfg: Config, cache: dict | None = None) -> dict[str, list[Split]]:
    """The splits of every data set that loads (the others are skipped by ``ctx.load``)."""
    cache = {} if cache is None else cache
    for dataset in cfg.datasets:
        if dataset not in cache and dataset not in ctx.skipped_data:
            got = ctx.load(dataset, lambda d=dataset: [load_split(d, s, cfg)
                                                       for s in range(cfg.splits)])
            if got is not None:
                cache[dataset] = got
    return cache


def _starts(cfg: Config, sp: Split, M: int) -> list[np.ndarray]:
    """The random starts of one (split, m): the same for every method and every lambda."""
    p = sp.n_classes * M * (sp.X.shape[1] + 1)
    rng = np.random.default_rng(cfg.seed + 7919 * sp.split + 31 * M)
    return [cfg.start_scale * rng.standard_normal(p) for _ in range(cfg.starts)]


def _extra(sp: Split, M: int, lam: float, dataset: str, method: str) -> dict[str, Any]:
    paper = PAPER_TABLE5.get(dataset, {}).get(method)
    return {"m": M, "lambda": lam, "t_train": int(sp.X.shape[0]),
            "t_test": int(sp.Xt.shape[0]), "d": int(sp.X.shape[1]),
            "n_classes": sp.n_classes, "preprocessing": sp.note or "standardized",
            "paper_m": PAPER_M.get(dataset),
            "paper_test_loglik": paper[M - 1] if paper is not None and M <= 4 else None}


def _polished(run, sp: Split, cfg: Config) -> dict[str, float]:
    """The endpoint polished (:func:`polish`): the local optimum's objective and test
    log-likelihood."""
    pol = polish(run, cfg)
    lp = run["model"].loss.log_proba(pol.x, sp.Xt)
    ll = float(lp[np.arange(sp.yt.size), sp.yt].sum())
    return {"polished_objective": float(pol.fun),
            "polished_test_loglik": ll if math.isfinite(ll) else -1e300}


def _run_cells(ctx, cfg: Config, task: str, cells, splits, polished: bool) -> None:
    """Every method from the same starts on every split of each (data set, m, lambda) cell,
    the order of the methods rotating from start to start; one record per method."""
    ctx.start(f"latent: {task} cells", len(cells))
    for dataset, M, lam in cells:
        rows: dict[str, list] = {m: [] for m in cfg.methods}
        for sp in splits[dataset]:
            reg = lam * sp.X.shape[0]
            for s, x0 in enumerate(_starts(cfg, sp, M)):
                order = list(cfg.methods)
                k = s % len(order)
                for method in order[k:] + order[:k]:
                    run = fit_once(sp.X, sp.y, sp.n_classes, M, reg, method, x0, cfg)
                    row = _evaluate(run, sp.Xt, sp.yt)
                    if polished:
                        row.update(_polished(run, sp, cfg))
                    rows[method].append(row)
        for method in cfg.methods:
            _record(ctx, task, dataset, f"m={M},lambda={lam:g}", method, rows[method],
                    _extra(splits[dataset][0], M, lam, dataset, method))
        ctx.advance(f"latent: {task} {dataset} m={M} lambda={lam:g}")


def run_table5(ctx, cfg: Config, cache: dict | None = None) -> None:
    """Table 5: every method at every m, lambda = ``cfg.lam``."""
    splits = _splits(ctx, cfg, cache)
    cells = [(d, m, cfg.lam) for d in cfg.datasets if d in splits for m in cfg.components]
    _run_cells(ctx, cfg, "table5", cells, splits, polished=False)


def run_ridge(ctx, cfg: Config, cache: dict | None = None) -> None:
    """The Table 5 protocol at the paper's m with a ridge: for each lambda in
    ``cfg.ridge_lams`` the same splits and starts as Table 5, every method, then each
    endpoint polished (:func:`polish`) so that the local optimum each method found can be
    compared from the same start."""
    splits = _splits(ctx, cfg, cache)
    cells = [(d, PAPER_M[d], lam) for d in cfg.datasets for lam in cfg.ridge_lams
             if d in PAPER_M and d in splits]
    _run_cells(ctx, cfg, "ridge", cells, splits, polished=True)


def run_toy(ctx, cfg: Config) -> None:
    X, y = stripes(cfg.toy_train, cfg.seed + 11)
    Xt, yt = stripes(cfg.toy_test, cfg.seed + 12)
    M = 2
    reg = cfg.lam * X.shape[0]
    rng = np.random.default_rng(cfg.seed + 13)
    p = 2 * M * 3
    ctx.start("latent: toy", cfg.toy_starts)
    rows: dict[str, list] = {m: [] for m in cfg.toy_methods}
    first: dict[str, np.ndarray] = {}
    for s in range(cfg.toy_starts):
        x0 = cfg.start_scale * rng.standard_normal(p)
        for method in cfg.toy_methods:
            run = fit_once(X, y, 2, M, reg, method, x0, cfg)
            row = _evaluate(run, Xt, yt)
            rows[method].append(row)
            if s == 0:
                first[method] = run["res"].x
        ctx.advance()
    for method in cfg.toy_methods:
        _record(ctx, "toy", "stripes-8-gaussians", f"m={M},lambda={cfg.lam:g}", method,
                rows[method], {"m": M, "lambda": cfg.lam, "t_train": int(X.shape[0]),
                               "t_test": int(Xt.shape[0]), "d": 2, "n_classes": 2,
                               "paper_test_loglik": PAPER_TOY.get(method)})
    # decision boundaries of the first start (the same start for every method)
    try:
        shown = ("bound", "bound-long", "em-joint", "em")
        toy_figure(X, y, {m: first[m] for m in shown if m in first},
                   ctx.out / "latent_toy.png")
    except Exception as exc:  # pragma: no cover - a plot must not lose the records
        ctx.log(f"latent: toy figure failed: {exc}")


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    ctx.out.mkdir(parents=True, exist_ok=True)
    ctx.writer.set_extra("config", {k: (list(v) if isinstance(v, tuple) else v)
                                    for k, v in vars(cfg).items()})
    with thread_limit(cfg.blas_threads):
        if cfg.toy:
            run_toy(ctx, cfg)
        cache: dict = {}
        if cfg.datasets:
            run_table5(ctx, cfg, cache)
        if cfg.datasets and cfg.ridge_lams:
            run_ridge(ctx, cfg, cache)
