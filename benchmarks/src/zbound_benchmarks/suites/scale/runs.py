"""Timed runs of the ``scale`` suite on one LocalCluster: the library on dask arrays, dask-ml,
scikit-learn, Spark and the NumPy path, same objective, same data, same target."""

from __future__ import annotations

import statistics
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from zbound_benchmarks.harness import suite_config
from zbound_benchmarks.suites.scale import peers as P
from zbound_benchmarks.suites.scale import problems as Q
from zbound_benchmarks.suites.scale.config import (
    DASK_ML_SOLVERS,
    LIBRARY,
    LIBRARY_EXACT,
    SUITE,
    Config,
    config,
)
from zbound_benchmarks.timing import thread_limit

OPTIONS = ("config", "processes")
#: relative agreement required between the dask and NumPy paths at the optimum
EQUAL_RTOL = 1e-10


# -- memory of the worker processes -----------------------------------------------------------

def _reset_peak():
    """Reset this process's peak resident memory (Linux: VmHWM := VmRSS)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _memory_mb():
    """(resident MB, peak resident MB) of this process."""
    out = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = float(rest.split()[0]) / 1024
    except OSError:
        return (None, None)
    return (out.get("VmRSS"), out.get("VmHWM"))


@dataclass
class Outcome:
    seconds: float
    reached: bool
    final: float | None = None
    iterations: int | None = None
    passes: int | None = None
    peak_mb: list | None = None
    base_mb: list | None = None
    info: dict = field(default_factory=dict)


class Cell:
    """One (task, t): the problem on the workers, its reference, target and the runs."""

    def __init__(self, ctx, cfg: Config, client, problem: Q.Problem, processes: bool):
        self.ctx, self.cfg, self.client, self.problem = ctx, cfg, client, problem
        self.processes = processes
        self.gathered = None
        if problem.t <= cfg.gather_max:
            self.gathered = (np.asarray(problem.X.compute()), np.asarray(problem.y.compute()))
        self.setting = f"t={problem.t}"
        self.k = 1 if problem.n_classes == 2 else problem.n_classes

    # -- measurement --------------------------------------------------------------------------
    def measured(self, fn, workers: bool = True) -> Outcome:
        client = self.client
        if workers:
            client.run(_reset_peak)
            base = client.run(_memory_mb)
        out = fn()
        if workers:
            mem = client.run(_memory_mb)
            out.peak_mb = [m[1] for m in mem.values()]
            out.base_mb = [base[w][0] for w in mem]
        return out

    def objective_at(self, W) -> float:
        return float(self.obj.value(np.asarray(W, dtype=np.float64).ravel()))

    # -- reference and equality with the NumPy path -------------------------------------------
    def reference(self):
        cfg, pb = self.cfg, self.problem
        from zbound.solvers import choose_method, minimize

        # the exact Hessian (the NumPy path's iterations), except for the large 10-class
        # cells, where only the library's default settings run
        sampled = pb.n_classes > 2 and pb.t > cfg.exact_max
        self.obj = Q.objective(pb, cfg.C, hessian_sample=cfg.hessian_sample if sampled
                               else None)
        # one method on both paths (minimize's automatic choice may differ between the Dask
        # and the in-memory objective: lbfgs-precond needs the in-memory Gram)
        method = choose_method(self.obj)
        t0 = time.perf_counter()
        res = minimize(self.obj, np.zeros(pb.n_params), method=method, tol=1e-10)
        seconds = time.perf_counter() - t0
        ref = {"f": res.fun, "nit": res.nit, "seconds": seconds, "passes": self.obj.passes,
               "curvature": self.obj.loss.curvature}
        f_star = res.fun
        if self.gathered is not None:
            X, y = self.gathered
            with thread_limit(1):
                res0 = minimize(Q.numpy_objective(X, y, pb.n_classes, cfg.C),
                                np.zeros(pb.n_params), method=method, tol=1e-10)
            ref.update(numpy_f=res0.fun, numpy_nit=res0.nit,
                       rel_diff=abs(res.fun - res0.fun) / abs(res0.fun))
            f_star = min(f_star, res0.fun)
        self.f_star = f_star
        self.target = f_star + cfg.rtol * abs(f_star)
        self.ref = ref
        mapping = None
        if pb.n_classes == 2:
            mapping = Q.check_mapping(pb, self.obj, cfg.C)
        self.ref["mapping_rel_diff"] = mapping
        self.ref["train_accuracy"] = self.accuracy(res.x)
        self.ctx.writer.add(
            task=pb.task, dataset=pb.dataset, setting=self.setting, method="numpy-equality",
            peer=False, default=False,
            reached=ref.get("rel_diff") is not None and ref["rel_diff"] <= EQUAL_RTOL,
            final_objective=res.fun, time_to_target_s=seconds,
            metrics={"iterations": res.nit, "numpy_iterations": ref.get("numpy_nit"),
                     "numpy_objective": ref.get("numpy_f"),
                     "rel_diff": ref.get("rel_diff"), "t": pb.t, "curvature": ref["curvature"],
                     "mapping_rel_diff": mapping, "train_accuracy": self.ref["train_accuracy"],
                     "seconds": seconds, "method": method,
                     "note": "tol 1e-10 fits, dask vs NumPy, same method"})

    # -- methods ------------------------------------------------------------------------------
    def ours(self, hessian_sample: float | str | None = "auto") -> Outcome:
        """The library from the raw dask arrays: the objective's setup (input check, chunk
        records on the workers, the label count of ``hessian_sample="auto"``) is inside the
        timing, as dask-ml's is."""
        from zbound.solvers import minimize

        t0 = time.perf_counter()
        obj = Q.objective(self.problem, self.cfg.C, hessian_sample=hessian_sample)
        setup = time.perf_counter() - t0
        passes0 = obj.passes
        res = minimize(obj, np.zeros(self.problem.n_params), target=self.target, tol=1e-12)
        seconds = time.perf_counter() - t0
        return Outcome(seconds, res.fun <= self.target, res.fun, res.nit,
                       obj.passes - passes0,
                       info={"status": res.status.name, "curvature": obj.loss.curvature,
                             "setup_s": setup, "seconds_per_pass":
                             (seconds - setup) / max(1, obj.passes - passes0),
                             "hessian_sample": obj.loss.hessian_fraction or 1.0,
                             "chunks": obj.loss.n_chunks, **res.info})

    def numpy_path(self) -> Outcome:
        from zbound.solvers import minimize

        X, y = self.gathered
        with thread_limit(1):
            t0 = time.perf_counter()
            obj = Q.numpy_objective(X, y, self.problem.n_classes, self.cfg.C)
            res = minimize(obj, np.zeros(self.problem.n_params), target=self.target,
                           tol=1e-12)
            seconds = time.perf_counter() - t0
        return Outcome(seconds, res.fun <= self.target, res.fun, res.nit,
                       res.nfev if hasattr(res, "nfev") else None)

    def dask_lbfgs(self) -> Outcome:
        pb = self.problem
        beta, seconds, trace, _ = P.dask_ml_fit("lbfgs", pb.X, pb.y, self.cfg.C,
                                                self.cfg.lbfgs_max_iter, 1e-12, self.target)
        hit = next((s for s, f in trace if f <= self.target), None)
        final = trace[-1][1] if trace else None
        return Outcome(hit if hit is not None else seconds, hit is not None, final,
                       len(trace), len(trace))

    def dask_rung(self, solver: str, max_iter: int) -> Outcome:
        pb = self.problem
        beta, seconds, _, _ = P.dask_ml_fit(solver, pb.X, pb.y, self.cfg.C, max_iter)
        f = self.objective_at(beta)
        return Outcome(seconds, f <= self.target, f, max_iter, None,
                       info={"max_iter": max_iter})

    def sklearn_rung(self, tol: float) -> Outcome:
        X, y = self.gathered
        with thread_limit(1):
            coef, seconds, nit = P.sklearn_fit(X, y, self.cfg.C, tol)
        f = self.objective_at(coef)
        return Outcome(seconds, f <= self.target, f, nit, None, info={"tol": tol})

    def spark_rung(self, tol: float) -> Outcome:
        if getattr(self, "_spark_df", None) is None:
            self._spark_df = P.spark_frame(*self.gathered)
        W, seconds, nit = P.spark_fit(self._spark_df, self.problem.t, self.problem.n_classes,
                                      self.cfg.C, tol, self.cfg.spark_max_iter)
        f = self.objective_at(W)
        return Outcome(seconds, f <= self.target, f, nit, None,
                       info={"tol": tol, "model_note": "MLlib's own intercept (unpenalized): "
                             "without one it zeroes the ones column"})

    def accuracy(self, W) -> float:
        import dask.array as da

        pb = self.problem
        W = np.asarray(W, dtype=np.float64).reshape(self.k, -1)
        S = pb.X @ W.T
        pred = (S[:, 0] > 0).astype(np.int64) if self.k == 1 else da.argmax(S, axis=1)
        return float((pred == pb.y).mean().compute())


def _plan(cell: Cell):
    """(method, peer, default, runner or ladder) of the cell; a ladder is a list of
    (setting, runner) tried in order on the first repeat."""
    cfg, pb = cell.cfg, cell.problem
    plan = []
    plan.append((LIBRARY, False, True, lambda: cell.ours(cfg.hessian_sample)))
    if pb.n_classes == 2 or pb.t <= cfg.exact_max:
        plan.append((LIBRARY_EXACT, False, False, lambda: cell.ours(None)))
    if cell.gathered is not None:
        plan.append(("zbound-numpy", False, False, cell.numpy_path))
        plan.append(("sklearn-lbfgs", True, False,
                     [(tol, lambda tol=tol: cell.sklearn_rung(tol)) for tol in cfg.tol_ladder]))
        if cfg.spark and P.local_spark() is not None:
            plan.append(("spark-lbfgs", True, False,
                         [(tol, lambda tol=tol: cell.spark_rung(tol))
                          for tol in cfg.spark_tol_ladder or cfg.tol_ladder]))
    if pb.n_classes == 2 and pb.t <= cfg.dask_ml_max:
        ladders = cfg.adult_ladders if pb.task == "adult" and cfg.adult_ladders else \
            cfg.ladders
        for solver in _dask_ml_solvers(cfg, pb):
            name = f"dask-ml-{solver}"
            if solver == "lbfgs":
                plan.append((name, True, False, cell.dask_lbfgs))
            else:
                plan.append((name, True, False,
                             [(m, lambda s=solver, m=m: cell.dask_rung(s, m))
                              for m in ladders[solver]]))
    return plan


def _dask_ml_solvers(cfg: Config, pb) -> tuple[str, ...]:
    if pb.t > cfg.gather_max:
        return tuple(s for s in DASK_ML_SOLVERS if s in cfg.dask_ml_large)
    return DASK_ML_SOLVERS


def _record_skips(cell: Cell) -> None:
    """Records (not reached, with the reason) for what a large cell leaves out."""
    cfg, pb = cell.cfg, cell.problem
    skipped = []
    if pb.n_classes == 2 and pb.t <= cfg.dask_ml_max:
        skipped = [(f"dask-ml-{s}", True, f"skipped above t = {cfg.gather_max}: several times "
                    "slower than dask-ml lbfgs at t = 1e6 (see that row)")
                   for s in DASK_ML_SOLVERS if s not in _dask_ml_solvers(cfg, pb)]
    if pb.n_classes > 2 and pb.t > cfg.exact_max:
        skipped.append((LIBRARY_EXACT, False, f"exact Hessian skipped above t = "
                        f"{cfg.exact_max} for {pb.n_classes} classes (operator CG passes over "
                        f"all rows: minutes on 2 cores); {LIBRARY} (sampled) is timed"))
    for name, peer, note in skipped:
        cell.ctx.writer.add(task=pb.task, dataset=pb.dataset, setting=cell.setting,
                            method=name, peer=peer, default=name == LIBRARY, reached=False,
                            target_objective=cell.target,
                            metrics={"t": pb.t, "skipped": True, "note": note})


def _workers_of(name: str) -> bool:
    return name in (LIBRARY, LIBRARY_EXACT) or name.startswith("dask-ml")


def run_cell(cell: Cell) -> None:
    ctx, cfg, pb = cell.ctx, cell.cfg, cell.problem
    cell.reference()
    _record_skips(cell)
    plan = _plan(cell)
    chosen: dict[str, object] = {}
    outcomes: dict[str, list[Outcome]] = {name: [] for name, *_ in plan}
    for rep in range(cfg.repeats):
        for name, _, _, how in plan:
            if isinstance(how, list):
                if rep == 0:
                    out = None
                    for setting, runner in how:
                        out = cell.measured(runner, _workers_of(name))
                        chosen[name] = (setting, runner)
                        if out.reached:
                            break
                    outcomes[name].append(out)
                    continue
                if not outcomes[name][0].reached:
                    continue        # capped at its last setting: not repeated (no time to
                                    # target to take a median of; the cap is recorded)
                runner = chosen[name][1]
            else:
                runner = how
            outcomes[name].append(cell.measured(runner, _workers_of(name)))
        ctx.advance()
    for name, peer, default, _ in plan:
        outs = outcomes[name]
        last = outs[-1]
        reached = all(o.reached for o in outs)
        capped = name in chosen and not reached
        seconds = statistics.median(o.seconds for o in outs)
        peaks = [max(o.peak_mb) for o in outs if o.peak_mb and None not in o.peak_mb]
        bases = [max(o.base_mb) for o in outs if o.base_mb and None not in o.base_mb]
        peak = max(peaks) if peaks else None
        base = max(bases) if bases else None
        p = pb.n_params
        budget = None if base is None else base + 4 * pb.chunk_mb + 64 + 16 * 8 * p * p / 2**20
        metrics = {
            "iterations": last.iterations, "passes": last.passes, "t": pb.t,
            "chunk_rows": pb.chunk_rows, "chunk_mb": pb.chunk_mb,
            "times_s": [o.seconds for o in outs], "rel_gap": None if last.final is None else
            (last.final - cell.f_star) / abs(cell.f_star),
            "peak_memory_mb": peak, "baseline_memory_mb": base, "budget_mb": budget,
            "within_budget": None if peak is None else peak <= budget,
            "memory_scope": ("worker processes" if cell.processes else "one process")
            if _workers_of(name) else None,
            **({"setting_used": chosen[name][0]} if name in chosen else {}),
            **({"note": f"capped: not reached at its last setting ({chosen[name][0]}), "
                        "run once"} if capped else {}),
            **{k: v for k, v in last.info.items() if isinstance(v, int | float | str)},
        }
        ctx.writer.add(task=pb.task, dataset=pb.dataset, setting=cell.setting, method=name,
                       peer=peer, default=default, reached=reached,
                       time_to_target_s=seconds, evaluations=last.passes,
                       final_objective=last.final, target_objective=cell.target,
                       metrics=metrics)


def run_multiclass_dask_ml(cell: Cell) -> None:
    """What dask-ml does with 10 classes: the plain fit (binary code on multiclass labels) and
    one-vs-rest with its lbfgs, each once; neither minimizes the multinomial objective."""
    ctx, pb, cfg = cell.ctx, cell.problem, cell.cfg
    if pb.t > min(cfg.dask_ml_max, cfg.gather_max):
        return
    beta, seconds, _, est = P.dask_ml_fit("lbfgs", pb.X, pb.y, cfg.C, 100, 1e-4)
    pred = np.asarray(est.predict(pb.X[:1000]))
    ctx.writer.add(
        task=pb.task, dataset=pb.dataset, setting=cell.setting, method="dask-ml-lbfgs-as-is",
        peer=True, reached=False, time_to_target_s=seconds, target_objective=cell.target,
        metrics={"coef_shape": list(np.shape(est.coef_)), "predict_values":
                 sorted({str(v) for v in np.unique(pred)}), "t": pb.t,
                 "note": "10 labels fed to the binary logistic family"})
    out = cell.measured(lambda: _ovr(cell))
    ctx.writer.add(
        task=pb.task, dataset=pb.dataset, setting=cell.setting, method="dask-ml-lbfgs-ovr",
        peer=True, reached=out.reached, time_to_target_s=out.seconds,
        final_objective=out.final, target_objective=cell.target,
        metrics={"t": pb.t, "rel_gap": (out.final - cell.f_star) / abs(cell.f_star),
                 "max_iter": cfg.ovr_max_iter,
                 "peak_memory_mb": max(out.peak_mb) if out.peak_mb and None not in out.peak_mb
                 else None, **out.info})


def _ovr(cell: Cell) -> Outcome:
    pb = cell.problem
    W, seconds = P.dask_ml_ovr(pb.X, pb.y, pb.n_classes, cell.cfg.C, cell.cfg.ovr_max_iter,
                               1e-4)
    f = cell.objective_at(W)
    return Outcome(seconds, f <= cell.target, f, None, None,
                   info={"train_accuracy": cell.accuracy(W)})


def run(ctx) -> None:
    from distributed import Client, LocalCluster

    cfg = suite_config(ctx, config, Config)
    processes = bool(ctx.options.get("processes", True))
    cells = [(task, t) for t in cfg.sizes for task in ("multiclass", "binary")
             if task in cfg.tasks and (task == "binary" or t <= cfg.multiclass_max)]
    if cfg.adult:
        cells.append(("adult", None))
    ctx.start(f"{SUITE}: cells x repeats", len(cells) * cfg.repeats)
    ctx.writer.set_extra("config", {"sizes": list(cfg.sizes), "C": cfg.C, "rtol": cfg.rtol,
                                    "repeats": cfg.repeats, "workers": cfg.workers,
                                    "n_features": cfg.n_features, "n_classes": cfg.n_classes,
                                    "processes": processes})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=cfg.workers, threads_per_worker=1,
                               processes=processes, dashboard_address=":0",
                               memory_limit="8GiB" if processes else None)
    try:
        with Client(cluster) as client:
            if cfg.spark:
                P.local_spark()
                reason = P.spark_skip_reason()
                ctx.writer.set_extra("spark", {"available": reason is None, "reason": reason})
            for task, t in cells:
                if task == "adult":
                    problem = ctx.load("adult", Q.adult, cfg, client)
                    if problem is None:
                        continue
                else:
                    problem = Q.synthetic(cfg, t, task == "binary", client)
                cell = Cell(ctx, cfg, client, problem, processes)
                run_cell(cell)
                if task == "multiclass":
                    run_multiclass_dask_ml(cell)
                # drop the references: the persisted blocks are released with them (an
                # explicit client.cancel here tripped an assertion in the scheduler)
                del cell, problem
    finally:
        cluster.close()
        P.spark_stop()
