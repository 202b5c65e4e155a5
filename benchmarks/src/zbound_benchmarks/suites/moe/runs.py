"""Runs of the ``moe`` suite: the synthetic symmetric mixtures (Section 6, Figs. 1-2) and the
inverted-image experiment (Tables 1-2), records written as they come."""

from __future__ import annotations

import statistics

import numpy as np

from zbound.moe import (
    MoEProblem,
    SMoLinE,
    SMoLogE,
    fit_adam,
    fit_em,
    fit_em_symmetric,
    fit_gd,
    fit_gradient_em,
)
from zbound_benchmarks.harness import suite_config
from zbound_benchmarks.records import BenchRecord
from zbound_benchmarks.suites.moe.config import SUITE, Config, config
from zbound_benchmarks.timing import first_at_or_below, thread_limit

OPTIONS = ("config",)
SYMMETRIC = {"SMoLinE": SMoLinE, "SMoLogE": SMoLogE}
#: method -> (peer, default)
METHOD_INFO = {
    "em": (False, True),            # EM, M-steps by the library's bound-majorization solvers
    "em-inner-gd": (True, False),   # EM with the paper's inner gradient descent M-steps
    "gradient-em": (True, False),   # Algorithm 1
    "gd": (True, False),            # Algorithm 2
    "adam": (True, False),          # peer beyond the paper
}
_TUNE_SEED = 10_007
#: a tuning run is marked unstable in the report when its objective rose by more than this
#: times max(1, |L|) in one iteration, or diverged (information only: steps are chosen by the
#: mean final objective, and some steps recover from early jumps to the lowest objective)
UNSTABLE_RISE = 0.05


def _final(fit) -> float:
    f = fit.trace.objective[-1]
    return float(f) if np.isfinite(f) else float("inf")


def _walk(score, n: int, start: int) -> dict:
    """Scores of grid indices visited by a walk from ``start``: score the start and both
    neighbours, then keep stepping towards the better neighbour while the score improves. On
    a score that is unimodal in the index this finds the grid's minimum in 3-4 evaluations;
    scoring both neighbours also catches a second dip next to the start (the inner-GD M-step
    on digits scored 0.44, 0.48, 0.44 at steps 0.316, 1, 3.16). Returns {index: score}."""
    seen = {}

    def s(i):
        if i not in seen:
            seen[i] = score(i)
        return seen[i]

    best = start
    s(start)
    steps = [d for d in (1, -1) if 0 <= start + d < n]
    steps.sort(key=lambda d: s(start + d))
    for step in steps:
        j = start + step
        while 0 <= j < n and s(j) < s(best):
            best = j
            j += step
        if best != start:
            break
    return seen


def tune(run_one, grid, search: str = "grid") -> tuple[dict, dict]:
    """Step sizes for each first-order method on the tuning instances.

    ``run_one(method, lr) -> Result``, or a list of them (one per tuning instance): a step
    scores its mean final objective over the instances (inf if one diverged), and the lowest
    score wins. (Scored on a single digits instance, Gradient EM took steps (3.16, 10) that
    diverged on most other instances; averaged over three it takes a steadier pair.) Steps whose
    objective jumped (:func:`_stable`) are listed, not excluded. Gradient EM: coordinate
    search over its two step sizes on the same grid from GD's best, the gate's step first.
    ``search="grid"`` scores every grid value; ``"walk"`` walks the grid from a start (GD and
    Adam: the middle; the inner-GD M-step: GD's choice) towards the better neighbour while
    the score improves (:func:`_walk`). Returns (chosen, table): table[method] maps a step to
    its mean final objective, table["unstable"][method] lists the steps whose objective
    jumped.
    """
    if search not in ("grid", "walk"):
        raise ValueError(f"search must be 'grid' or 'walk', got {search!r}")
    runs = list(run_one) if isinstance(run_one, list | tuple) else [run_one]
    grid = tuple(grid)
    n = len(grid)
    unstable = {}

    def key(lr) -> str:
        return ",".join(f"{v:g}" for v in lr) if isinstance(lr, tuple) else f"{lr:g}"

    def score(method, lr) -> float:
        fits = [r(method, lr) for r in runs]
        if not all(_stable(f) for f in fits):
            unstable.setdefault(method, []).append(key(lr))
        return float(np.mean([_final(f) for f in fits]))

    def scan(f, start) -> dict:
        if search == "grid":
            return {i: f(i) for i in range(n)}
        return _walk(f, n, start)

    chosen, table = {}, {}
    for method in ("gd", "adam", "em-inner-gd"):
        start = grid.index(chosen["gd"]) if method == "em-inner-gd" else (n - 1) // 2
        got = scan(lambda i, m=method: score(m, grid[i]), start)
        chosen[method] = grid[min(got, key=got.get)]
        table[method] = {key(grid[i]): got[i] for i in sorted(got)}
    g = grid.index(chosen["gd"])
    seen = {}

    def pair(i, j):
        if (i, j) not in seen:
            seen[(i, j)] = score("gradient-em", (grid[i], grid[j]))
        return seen[(i, j)]

    best = (g, g)
    pair(*best)
    for axis in (1, 0):                               # gate step first, then the experts'
        cur = best
        scan(lambda i, a=axis, c=cur: pair(i, c[1]) if a == 0 else pair(c[0], i), cur[axis])
        best = min(seen, key=seen.get)
    chosen["gradient-em"] = (grid[best[0]], grid[best[1]])
    table["gradient-em"] = {key((grid[a], grid[b])): v for (a, b), v in seen.items()}
    table["unstable"] = unstable
    return chosen, table


def at_grid_edge(chosen: dict, grid) -> dict:
    """The methods whose chosen step (either of Gradient EM's two) is the grid's smallest or
    largest value: a better step may lie beyond the grid."""
    ends = (min(grid), max(grid))
    out = {}
    for m, lr in chosen.items():
        vals = lr if isinstance(lr, tuple) else (lr,)
        if any(v in ends for v in vals):
            out[m] = list(vals) if isinstance(lr, tuple) else lr
    return out


def _stable(fit) -> bool:
    """No objective rise above :data:`UNSTABLE_RISE` * max(1, |L|), and no divergence."""
    f = np.asarray(fit.trace.objective, dtype=np.float64)
    if f.size < 2:
        return True
    if not np.isfinite(f).all():
        return False
    return bool(np.all(np.diff(f) <= UNSTABLE_RISE * np.maximum(1.0, np.abs(f[:-1]))))


# -- synthetic --------------------------------------------------------------------------------

def _sym_instance(cls, cfg: Config, seed: int):
    X, y, truth = cls.sample(cfg.sym_n, cfg.sym_d, cfg.sym_norm, rng=seed)
    rng = np.random.default_rng(seed + 1)
    theta0 = truth + cfg.sym_init_noise * rng.normal(size=truth.size)
    return cls(X, y), truth, theta0


def _sym_run(model, theta0, method, lr, iters):
    if method == "em":
        return fit_em_symmetric(model, theta0, iters, keep_thetas=True)
    if method == "em-inner-gd":
        return fit_em_symmetric(model, theta0, iters, solver="gd", inner_steps=10,
                                inner_lr=lr, keep_thetas=True)
    if method == "gradient-em":
        return fit_gradient_em(model, theta0, lr[0], lr[1], iters, keep_thetas=True)
    if method == "gd":
        return fit_gd(model, theta0, lr, iters, keep_thetas=True)
    return fit_adam(model, theta0, lr, iters, keep_thetas=True)


def run_symmetric(ctx, cfg: Config, name: str) -> dict:
    cls = SYMMETRIC[name]
    T = cfg.sym_iters
    model, _, theta0 = _sym_instance(cls, cfg, _TUNE_SEED)
    lrs, table = tune(lambda m, lr: _sym_run(model, theta0, m, lr, T), cfg.lr_grid,
                      cfg.tune_search)
    methods = list(METHOD_INFO)
    per = {m: [] for m in methods}
    ctx.start(f"{name}: instances", cfg.sym_instances)
    for i in range(cfg.sym_instances):
        model, truth, theta0 = _sym_instance(cls, cfg, 1000 + i)
        order = methods[i % len(methods):] + methods[: i % len(methods)]
        fits = {m: _sym_run(model, theta0, m, lrs.get(m), T) for m in order}
        # reference optimum: EM continued from the best final point
        best = min(fits.values(), key=_final)
        ref = fit_em_symmetric(model, best.x, 300)
        f_hat = min(ref.fun, min(_final(f) for f in fits.values()))
        target = _final(fits["gd"])
        tol = 1e-12 * max(1.0, abs(target))
        for m, fit in fits.items():
            beta_err = [float(np.linalg.norm(t[: cfg.sym_d] - truth[: cfg.sym_d]) / cfg.sym_norm)
                        for t in fit.info["iterates"]]
            w_err = [float(np.linalg.norm(t[cfg.sym_d:] - truth[cfg.sym_d:]) / cfg.sym_norm)
                     for t in fit.info["iterates"]]
            k = first_at_or_below(fit.trace.objective, target + tol)
            per[m].append({
                "gap": [max(float(f) - f_hat, 0.0) if np.isfinite(f) else None
                        for f in fit.trace.objective],
                "gap_true": float(fit.trace.objective[-1] - model.value(truth)),
                "times": fit.trace.seconds.tolist(), "beta_err": beta_err, "w_err": w_err,
                "final": _final(fit), "iters_to_gd": k,
                "time_to_gd": None if k is None else float(fit.trace.seconds[k]), "target": target,
                "monotone": fit.trace.is_monotone()})
        ctx.advance()
    summary = {}
    for m in methods:
        runs = per[m]
        its = [r["iters_to_gd"] for r in runs]
        reached = [x for x in its if x is not None]
        med_it = statistics.median([x if x is not None else T + 1 for x in its])
        times = [r["time_to_gd"] for r in runs if r["time_to_gd"] is not None]
        peer, default = METHOD_INFO[m]
        lr = lrs.get(m)
        ctx.writer.add_record(BenchRecord(
            task="synthetic", dataset=name,
            setting=f"d={cfg.sym_d},n={cfg.sym_n},T={T}", method=m, peer=peer, default=default,
            reached=len(reached) == len(its),
            time_to_target_s=statistics.median(times) if times else None,
            evaluations=med_it,
            final_objective=statistics.median(r["final"] for r in runs),
            target_objective=statistics.median(r["target"] for r in runs),
            metrics={"iterations": T,
                     "median_iterations_to_gd_final": med_it,
                     "fraction_reaching_gd_final": len(reached) / len(its),
                     "median_final_gap": statistics.median(r["gap"][-1] or 0.0 for r in runs),
                     "median_final_gap_to_truth": statistics.median(r["gap_true"]
                                                                    for r in runs),
                     "median_beta_error": statistics.median(r["beta_err"][-1] for r in runs),
                     "median_w_error": statistics.median(r["w_err"][-1] for r in runs),
                     "median_total_time_s": statistics.median(r["times"][-1] for r in runs),
                     "monotone_all": all(r["monotone"] for r in runs),
                     "step_size": list(lr) if isinstance(lr, tuple) else lr,
                     "instances": len(runs)}))
        summary[m] = {"median_iterations_to_gd_final": med_it,
                      "curve_gap": _mean_curve([r["gap"] for r in runs], log=True),
                      "curve_time": _median_curve([r["times"] for r in runs]),
                      "curve_beta": _mean_curve([r["beta_err"] for r in runs]),
                      "curve_w": _mean_curve([r["w_err"] for r in runs]),
                      "step_size": lr}
    return {"methods": summary, "tuning": table, "iters": T, "instances": cfg.sym_instances,
            "grid_edge": at_grid_edge(lrs, cfg.lr_grid)}


def _mean_curve(curves, log=False):
    out = []
    for vals in zip(*curves, strict=False):
        v = [x for x in vals if x is not None]
        if not v:
            out.append(None)
        elif log:
            out.append(float(np.exp(np.mean(np.log(np.maximum(v, 1e-16))))))
        else:
            out.append(float(np.mean(v)))
    return out


def _median_curve(curves):
    return [float(np.median(v)) for v in zip(*curves, strict=False)]


# -- inverted images ----------------------------------------------------------------------------

def load_split(name: str, seed: int = 0):
    """(X_train, y_train, X_test, y_test), pixels in [0, 1]: KMNIST's test images split 8000 /
    2000 (stratified), or scikit-learn's digits (/ 16) split 80 / 20."""
    if name == "kmnist":
        from zbound.datasets import load_kmnist

        ds = load_kmnist(test_size=0.2, random_state=seed)
        return ds.X, ds.y, ds.X_test, ds.y_test
    from sklearn.model_selection import train_test_split

    from zbound.datasets import load_digits

    ds = load_digits()
    Xtr, Xte, ytr, yte = train_test_split(ds.X / 16.0, ds.y, test_size=0.2, stratify=ds.y,
                                          random_state=seed)
    return Xtr, ytr, Xte, yte


def invert(X, rng):
    """Each image inverted (x -> 1 - x) with probability 1/2."""
    X = X.copy()
    flip = rng.random(X.shape[0]) < 0.5
    X[flip] = 1.0 - X[flip]
    return X


def unit_init(problem: MoEProblem, rng) -> np.ndarray:
    """The paper's start: every linear layer (the gate, each expert) random with unit norm."""
    P = problem.unpack(rng.normal(size=problem.n_params))
    gate = P.gate / max(np.linalg.norm(P.gate), 1e-300) if P.gate.size else P.gate
    coef = np.stack([c / np.linalg.norm(c) for c in P.coef])
    return problem.pack(gate, coef)


def _inv_run(problem, theta0, method, lr, iters, cfg: Config, ds: str, keep: bool = False):
    if method == "em":
        return fit_em(problem, theta0, iters, tol=0.0, mstep_tol=1e-6,
                      mstep_max_iter=cfg.mstep_max_iter.get(ds, 100),
                      mstep_options=cfg.mstep_options.get(ds), keep_thetas=keep)
    if method == "em-inner-gd":
        return fit_em(problem, theta0, iters, tol=0.0, mstep="gd",
                      inner_steps=cfg.inner_steps, inner_lr=lr, keep_thetas=keep)
    if method == "gradient-em":
        return fit_gradient_em(problem, theta0, lr[0], lr[1], iters, keep_thetas=keep)
    if method == "gd":
        return fit_gd(problem, theta0, lr, iters, keep_thetas=keep)
    return fit_adam(problem, theta0, lr, iters, keep_thetas=keep)


def _test_metrics(problem, theta, Xte, yte):
    proba = problem.predict_proba(theta, Xte)
    return float(np.mean(np.argmax(proba, axis=1) == yte)), problem.test_nll(theta, Xte, yte)


def run_inverted(ctx, cfg: Config, ds: str) -> dict | None:
    """The inverted-images experiment on data set ``ds``; None where its data is missing."""
    split = ctx.load(ds, load_split, ds)
    if split is None:
        return None
    Xtr, ytr, Xte, yte = split
    C = int(max(ytr.max(), yte.max())) + 1
    T = cfg.iters
    n_inst = cfg.instances.get(ds, 1)
    ctx.start(f"inverted {ds}: single experts, tuning", 1)
    single = _single_experts(ctx, cfg, ds, split, C)
    # tuning on separate instances
    Tt = cfg.tune_iters.get(ds, T)
    runners = []
    for t in range(cfg.tune_instances.get(ds, 1)):
        rng = np.random.default_rng(_TUNE_SEED + t)
        pb = MoEProblem(invert(Xtr, rng), ytr, 2, "logistic", n_classes=C, reg=cfg.reg)
        theta0 = unit_init(pb, rng)
        runners.append(lambda m, lr, pb=pb, th=theta0: _inv_run(pb, th, m, lr, Tt, cfg, ds))
    lrs, table = tune(runners, cfg.lr_grid, cfg.tune_search)
    ctx.advance()
    ctx.start(f"inverted {ds}: instances", n_inst)
    per = _inverted_instances(ctx, cfg, ds, split, C, lrs)
    summary = {"single": single, "methods": {}, "tuning": table, "iters": T,
               "grid_edge": at_grid_edge(lrs, cfg.lr_grid),
               "tune_instances": len(runners), "tune_search": cfg.tune_search,
               "instances": n_inst}
    for m in METHOD_INFO:
        summary["methods"][m] = _inverted_record(ctx, cfg, ds, m, per, lrs.get(m))
    return summary


def _single_experts(ctx, cfg: Config, ds: str, split, C: int) -> dict:
    """Table 1: one logistic expert (k = 1: EM is one exact M-step), original and inverted."""
    Xtr, ytr, Xte, yte = split
    rng = np.random.default_rng(0)
    Xtr_inv, Xte_inv = invert(Xtr, rng), invert(Xte, rng)
    single = {}
    for label, (A, B) in (("original", (Xtr, Xte)), ("inverted", (Xtr_inv, Xte_inv))):
        pb = MoEProblem(A, ytr, 1, "logistic", n_classes=C, reg=cfg.reg)
        fit = fit_em(pb, np.zeros(pb.n_params), 1, tol=0.0, mstep_tol=1e-6,
                     mstep_max_iter=300)
        acc, ce = _test_metrics(pb, fit.x, B, yte)
        single[label] = {"accuracy": acc, "cross_entropy": ce, "objective": fit.fun}
        ctx.writer.add_record(BenchRecord(
            task="inverted", dataset=ds, setting="k=1", method=f"single-expert-{label}",
            final_objective=fit.fun,
            metrics={"test_accuracy": acc, "test_cross_entropy": ce, "test_loglik": -ce,
                     "random_invert": label == "inverted", "iterations": fit.nit}))
    return single


def _inverted_instances(ctx, cfg: Config, ds: str, split, C: int, lrs: dict) -> dict:
    """Every method on each random inversion (the order rotating), at its tuned step."""
    Xtr, ytr, Xte, yte = split
    T = cfg.iters
    methods = list(METHOD_INFO)
    per: dict[str, list] = {m: [] for m in methods}
    for i in range(cfg.instances.get(ds, 1)):
        rng = np.random.default_rng(2000 + i)
        A, B = invert(Xtr, rng), invert(Xte, rng)
        pb = MoEProblem(A, ytr, 2, "logistic", n_classes=C, reg=cfg.reg)
        theta0 = unit_init(pb, rng)
        order = methods[i % len(methods):] + methods[: i % len(methods)]
        fits = {m: _inv_run(pb, theta0, m, lrs.get(m), T, cfg, ds, keep=True) for m in order}
        for m, fit in fits.items():
            acc, ce = _test_metrics(pb, fit.x, B, yte)
            curve = [_test_metrics(pb, th, B, yte)[0] for th in fit.info["iterates"]]
            curve += [curve[-1]] * (T + 1 - len(curve))       # a diverged run stays put
            fit.info.pop("iterates", None)
            per[m].append({"accuracy": acc, "cross_entropy": ce, "final": _final(fit),
                           "objectives": [float(f) for f in fit.trace.objective],
                           "accuracy_curve": curve,
                           "times": fit.trace.seconds.tolist(), "monotone": fit.trace.is_monotone(),
                           "info": {k: v for k, v in fit.info.items()
                                    if isinstance(v, int | float | str)}})
        # EM (bound M-steps) against EM (inner GD): time to the objective both reach
        target = max(_final(fits["em"]), _final(fits["em-inner-gd"]))
        per["em"][-1]["common_target"] = target
        for m in ("em", "em-inner-gd"):
            k = first_at_or_below(fits[m].trace.objective,
                                  target + 1e-12 * max(1.0, abs(target)))
            per[m][-1]["time_to_common"] = float(fits[m].trace.seconds[k])
        ctx.advance()
    return per


def _inverted_record(ctx, cfg: Config, ds: str, m: str, per: dict, lr) -> dict:
    """Method ``m``'s record over the instances; returns its summary with mean curves."""
    runs, T = per[m], cfg.iters
    accs = [r["accuracy"] for r in runs]
    ces = [r["cross_entropy"] for r in runs]
    peer, default = METHOD_INFO[m]
    curve_at = [c for c in cfg.checkpoints if c <= T]
    metrics = {"test_accuracy": float(np.mean(accs)),
               "test_accuracy_at": {str(c): float(np.mean([r["accuracy_curve"][c]
                                                           for r in runs])) for c in curve_at},
               "test_accuracy_at_std": {str(c): float(np.std([r["accuracy_curve"][c]
                                                              for r in runs]))
                                        for c in curve_at},
               "test_accuracy_std": float(np.std(accs)),
               "test_cross_entropy": float(np.mean(ces)),
               "test_cross_entropy_std": float(np.std(ces)),
               "test_loglik": -float(np.mean(ces)), "iterations": T,
               "median_total_time_s": statistics.median(r["times"][-1] for r in runs),
               "monotone_all": all(r["monotone"] for r in runs),
               "step_size": list(lr) if isinstance(lr, tuple) else lr,
               "instances": len(runs)}
    time_common = None
    if m in ("em", "em-inner-gd"):
        time_common = statistics.median(r["time_to_common"] for r in runs)
        metrics["median_time_to_common_objective_s"] = time_common
    ctx.writer.add_record(BenchRecord(
        task="inverted", dataset=ds, setting=f"k=2,T={T}", method=m, peer=peer,
        default=default, reached=time_common is not None, time_to_target_s=time_common,
        final_objective=statistics.median(r["final"] for r in runs),
        target_objective=statistics.median(per["em"][j]["common_target"]
                                           for j in range(len(runs)))
        if time_common is not None else None,
        metrics=metrics))
    if m == "em":     # in the report's summary, not the record
        for key in ("mstep_cg_products", "mstep_preconditioner_builds"):
            if key in runs[0]["info"]:
                metrics[f"median_{key}"] = statistics.median(r["info"][key] for r in runs)
    return dict(metrics, curve=_mean_curve([r["objectives"] for r in runs]),
                curve_accuracy=_mean_curve([r["accuracy_curve"] for r in runs]),
                curve_time=_median_curve([r["times"] for r in runs]))


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    out = {"config": {k: v for k, v in vars(cfg).items()}}
    with thread_limit(cfg.blas_threads):
        for name in cfg.sym_models:
            out[f"synthetic/{name}"] = run_symmetric(ctx, cfg, name)
            ctx.writer.set_extra("moe", out)
        for ds in cfg.datasets:
            result = run_inverted(ctx, cfg, ds)
            if result is not None:
                out[f"inverted/{ds}"] = result
                ctx.writer.set_extra("moe", out)


__all__ = ["OPTIONS", "SUITE", "invert", "load_split", "run", "run_inverted", "run_symmetric",
           "tune", "unit_init"]
