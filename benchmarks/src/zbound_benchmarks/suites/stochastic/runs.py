"""Runs of the ``stochastic`` suite: one shared mini-batch stream, every method tuned on one
step-size grid, the winners timed again (alternating, median), records written as they come."""

from __future__ import annotations

import math
import statistics

import numpy as np

from zbound.solvers.stochastic import (
    DENSE_MAX,
    LSPFB,
    SBM,
    SPFB,
    ShermanMorrisonSBM,
    StochasticAdam,
    StochasticMomentum,
    StochasticSGD,
    batch_objective,
)
from zbound_benchmarks.harness import stopwatch, suite_config, timed
from zbound_benchmarks.suites.stochastic.config import GAPS, PEERS, SUITE, Config, config
from zbound_benchmarks.suites.stochastic.problems import Problem, build_problem, reference_optimum
from zbound_benchmarks.timing import thread_limit

OPTIONS = ("config",)


#: The first-order peers of the target (tuned first when ``cap_by_first_order``).
FIRST_ORDER = ("sgd", "momentum", "adam")
#: Methods whose step is constant by definition (the slides' SBM); the rest are tuned over
#: every schedule of the config.
CONSTANT_ONLY = ("sbm", "sbm-sm", "sklearn-sgd")


def method_names(cfg: Config, prob: Problem) -> list[str]:
    names = ["spfb", "spfb-avg"] + [f"lspfb-k{k}" for k in cfg.ranks if k < prob.p] + ["sbm"]
    names.append("sbm-sm")
    return names + list(PEERS)


def schedule_options(schedule: str, n_batches: int) -> dict:
    """Solver options of a schedule name: "constant" or "inverse-E" (halved after E epochs)."""
    if schedule == "constant":
        return {"schedule": "constant"}
    epochs = float(schedule.partition("-")[2] or 1)
    return {"schedule": "inverse", "decay": epochs * n_batches}


def variants(cfg: Config, name: str, prob: Problem) -> list[dict]:
    """The extra options tuned for a method besides the step grid and the schedules:
    spfb-avg's Gram damping above dense_max and, equally sized grids, momentum's beta and
    Adam's beta_1 (when ``cfg.adam_beta1s`` is set)."""
    if name == "spfb-avg" and prob.p > DENSE_MAX:
        return [{"gram_shrink": float(s)} for s in cfg.gram_shrinks]
    if name == "momentum":
        return [{"momentum": float(b)} for b in cfg.momentum_betas]
    if name == "adam" and getattr(cfg, "adam_beta1s", ()):
        return [{"beta1": float(b)} for b in cfg.adam_beta1s]
    return [{}]


def _variant_key(extra: dict) -> str:
    return "".join(f":{k}={v:g}" for k, v in sorted(extra.items()))


def make_solver(name: str, lr: float, cfg: Config, prob: Problem, n_batches: int,
                schedule: str = "inverse-1", extra: dict | None = None):
    """The configured solver of a record name (None for scikit-learn's SGDClassifier);
    ``extra``: options of a tuned variant (see :func:`variants`)."""
    extra = dict(extra or {})
    big = prob.p > DENSE_MAX
    sched = schedule_options(schedule, n_batches)
    # the paper's SPFB above DENSE_MAX: 3 PCG steps (Kronecker preconditioner) on the bound of
    # ``curvature_rows`` rows of the batch; the averaged SPFB (ours) solves its Kronecker form
    bound = dict(lr=lr, **sched, refresh=cfg.refresh,
                 curvature_rows=cfg.curvature_rows if big else None,
                 cg_maxiter=3, gram_updates=cfg.gram_updates)
    if name == "spfb":
        return SPFB(**bound)
    if name == "spfb-avg":
        # above DENSE_MAX: the damped Gram factor of the first ``avg_gram_updates`` builds,
        # decomposed at the first and the last of them, and the bound rebuilt at doubling
        # intervals once that average is complete (docs/stochastic.md, fourth and fifth
        # rounds); below, these options have no effect
        gu = int(getattr(cfg, "avg_gram_updates", cfg.gram_updates))
        return SPFB(**{**bound, "curvature_rows": None, "gram_updates": gu},
                    curvature="average", gram_shrink=extra.get("gram_shrink", cfg.gram_shrink),
                    late_refresh=cfg.late_refresh, gram_eig_builds=tuple(sorted({1, gu})))
    if name.startswith("lspfb-k"):
        return LSPFB(lr=lr, **sched, curvature_rows=cfg.curvature_rows,
                     refresh=cfg.lowrank_refresh, rank=int(name[7:]))
    if name == "sbm":
        return SBM(**{**bound, "schedule": "constant"})
    if name == "sbm-sm":
        return ShermanMorrisonSBM(lr=lr, max_params=cfg.sm_max_params)
    if name == "sgd":
        return StochasticSGD(lr=lr, **sched)
    if name == "momentum":
        return StochasticMomentum(lr=lr, momentum=extra.get("momentum", 0.9), **sched)
    if name == "adam":
        if "beta1" in extra:
            return StochasticAdam(lr=lr, betas=(extra["beta1"], 0.999), **sched)
        return StochasticAdam(lr=lr, **sched)
    return None


def epoch_batches(T: int, bs: int, epochs: int, seed: int) -> list[list[np.ndarray]]:
    """The one shuffled stream every method sees."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(epochs):
        order = rng.permutation(T)
        out.append([order[a:a + bs] for a in range(0, T, bs)])
    return out


def _sklearn_theta(sk, n_classes: int) -> np.ndarray:
    """SGDClassifier's weights in the softmax layout (two classes: its one vector)."""
    coef = sk.coef_[1:] if n_classes == 2 and sk.coef_.shape[0] > 1 else sk.coef_
    return coef.ravel().copy()


def _stop_status(gaps, k, stop, prune, ref, max_evals) -> str:
    """Why a trajectory stops at its latest point (``k`` points per epoch), or "running"."""
    e = len(gaps) - 1
    if gaps[-1] <= stop:
        return "reached"
    if (prune is not None and e >= 3 * k and e < len(prune)
            and min(prune[:e + 1]) <= GAPS[0] and gaps[-1] > 10 * prune[e]):
        return "pruned"
    if prune is not None and e >= 5 * k and e < len(prune) and gaps[-1] > 3 * prune[e]:
        return "pruned"
    if ref is not None and e >= 3 * k and e < len(ref) and gaps[-1] > 10 * ref[e]:
        return "pruned"
    if max_evals is not None and e >= max_evals:
        return "budget"
    return "running"


def trajectory(prob: Problem, name: str, lr: float, cfg: Config, stream,
               schedule: str = "inverse-1", prune=None, max_epochs: float | None = None,
               ref=None, extra: dict | None = None) -> dict:
    """Objective gap and test loss at every evaluation point (``cfg.evals_of(data)`` evenly
    spaced points per epoch, at batch boundaries; ``epochs`` holds their fractional epochs),
    and cumulative seconds of the updates only (building a batch's model and evaluating the
    full objective are not timed). Stops at ``cfg.stop_gap``, on divergence, at the epoch
    budget (``max_epochs``, default the whole stream), or (tuning only) when from epoch 3 on
    its gap is 10 times the gap of ``prune`` (the best run so far of the same method) at the
    same point while that one has reached 1% by then, from epoch 5 on 3 times that gap
    whether or not it has, or 10 times the gap of ``ref`` (the best first-order run) at the
    same point from epoch 3."""
    n_batches = len(stream[0])
    k = max(1, min(int(cfg.evals_of(prob.name)), n_batches))
    marks = {int(round(n_batches * j / k)): j for j in range(1, k + 1)}
    max_evals = None if max_epochs is None else int(math.ceil(max_epochs * k - 1e-9))
    theta = np.zeros(prob.p)
    f0 = prob.mean_objective(theta)
    gaps = [f0 / prob.f_star - 1.0]
    tl, acc = prob.test_loss(theta)
    test, secs, epochs = [tl], [0.0], [0.0]
    solver = make_solver(name, lr, cfg, prob, n_batches, schedule, extra)
    if solver is None:
        from sklearn.linear_model import SGDClassifier

        sk = SGDClassifier(loss="log_loss", penalty="l2", alpha=prob.lam, fit_intercept=False,
                           learning_rate="constant", eta0=lr, random_state=0)
        classes = np.arange(prob.n_classes)
    else:
        state = solver.init(None, theta)
    clock = {"train": 0.0}          # seconds in the solver's steps only, not the evaluations
    status = "running"
    stop = min(GAPS) if getattr(cfg, "stop_gap", None) is None else float(cfg.stop_gap)
    for ep, batches in enumerate(stream):
        for i, rows in enumerate(batches, start=1):
            if solver is None:
                with stopwatch(clock, "train"), np.errstate(all="ignore"):
                    sk.partial_fit(prob.X[rows], prob.y[rows], classes=classes)
            else:
                batch = batch_objective(prob.model, rows, prob.T)
                with stopwatch(clock, "train"):
                    solver.update(batch, state)
                if state.status.name == "FAILED":
                    status = "diverged"
                    break
            if i not in marks:
                continue
            theta = state.x if solver is not None else _sklearn_theta(sk, prob.n_classes)
            with np.errstate(all="ignore"):
                f = prob.mean_objective(theta) if np.isfinite(theta).all() else math.inf
            if not math.isfinite(f):
                status = "diverged"
                break
            gaps.append(f / prob.f_star - 1.0)
            tl, acc = prob.test_loss(theta)
            test.append(tl)
            secs.append(clock["train"])
            epochs.append(ep + marks[i] / k)
            status = _stop_status(gaps, k, stop, prune, ref, max_evals)
            if status != "running":
                break
        if status != "running":
            break
    if status == "running":
        status = "budget"
    return {"gap": gaps, "test_loss": test, "seconds": secs, "epochs": epochs,
            "status": status, "test_accuracy": acc, "final_gap": gaps[-1]}


def first_hit(tr: dict, gap: float):
    """(epochs, seconds) when the gap first fell to ``gap`` (None, None if never); epochs are
    fractional where the data set is evaluated more than once per epoch."""
    ep = tr.get("epochs") or list(range(len(tr["gap"])))
    for i, g in enumerate(tr["gap"]):
        if g <= gap:
            e = ep[i]
            return (int(e) if float(e).is_integer() else round(float(e), 3)), tr["seconds"][i]
    return None, None


def _score(tr):
    e, _ = first_hit(tr, GAPS[0])
    e2, _ = first_hit(tr, GAPS[1])
    if tr["status"] == "diverged":
        return (math.inf, math.inf, math.inf)
    return (math.inf if e is None else e, math.inf if e2 is None else e2, tr["final_gap"])


def run_problem(ctx, cfg: Config, prob: Problem) -> dict:
    stream = epoch_batches(prob.T, cfg.batch_size, cfg.epochs_of(prob.name), cfg.seed)
    names = method_names(cfg, prob)
    if cfg.cap_by_first_order:                     # the first-order peers are tuned first
        names = [n for n in names if n in FIRST_ORDER] + [n for n in names
                                                          if n not in FIRST_ORDER]
    tuned, curves, grids, caps = {}, {}, {}, {}
    fo_best = None                                 # (epochs to 1%, gap curve) of the best
    for name in names:
        if name == "sbm-sm" and prob.p > cfg.sm_max_params:
            ctx.log(f"{prob.name}: sbm-sm skipped (p = {prob.p} > {cfg.sm_max_params}: O(p^2) "
                    "per rank-one term)")
            grids[name] = None
            ctx.advance()
            continue
        cap, ref = None, None
        if cfg.cap_by_first_order and name not in FIRST_ORDER and fo_best is not None:
            cap, ref = cfg.cap_factor * fo_best[0], fo_best[1]
        caps[name] = cap
        best, grids[name] = _tune(prob, name, cfg, stream, cap, ref)
        tuned[name] = best
        if name in FIRST_ORDER:
            e = first_hit(best[2], GAPS[0])[0]
            if e is not None and (fo_best is None or e < fo_best[0]):
                fo_best = (e, best[2]["gap"])
        ctx.advance(f"{SUITE}: {prob.name} {name} lr={best[0]} {best[1]}")
    # timed repeats of the winners, alternating between methods
    runs = {name: [tr] for name, (lr, sched, tr, extra) in tuned.items()}
    for _ in range(cfg.repeats - 1):
        for name, (lr, sched, tr, extra) in tuned.items():
            runs[name].append(trajectory(prob, name, lr, cfg, stream, sched,
                                         max_epochs=tr["epochs"][-1], extra=extra))
    for name, (lr, sched, tr, extra) in tuned.items():
        curves[name] = _winner_record(ctx, cfg, prob, name, (lr, sched, tr, extra),
                                      runs[name], grids[name], caps.get(name), stream)
    return {"curves": curves, "skipped": [n for n, g in grids.items() if g is None]}


def _tune(prob, name, cfg, stream, cap, ref):
    """The method's best run over the step-size grid, schedules and variants, and each grid
    point's epochs to 1%."""
    best, grid = None, {}
    scheds = ("constant",) if name in CONSTANT_ONLY else cfg.schedules
    for extra in variants(cfg, name, prob):
        for sched in scheds:
            # largest step first: diverging runs stop at once, and the first run to reach
            # 1% caps the slower (smaller-step) ones at its epochs
            for lr in sorted(cfg.grid, reverse=True):
                # a run that has not reached 1% by the best epochs of its method so far
                # cannot win: stop it there
                own = None if best is None else first_hit(best[2], GAPS[0])[0]
                lim = min([c for c in (cap, own) if c is not None], default=None)
                tr = trajectory(prob, name, lr, cfg, stream, sched,
                                prune=None if best is None else best[2]["gap"],
                                max_epochs=lim, ref=ref, extra=extra)
                grid[f"{sched}:{lr}{_variant_key(extra)}"] = first_hit(tr, GAPS[0])[0]
                if best is None or _score(tr) < _score(best[2]):
                    best = (lr, sched, tr, extra)
    return best, grid


def _winner_record(ctx, cfg, prob, name, winner, runs, grid, cap, stream) -> dict:
    """The tuned run's record (epochs and median seconds to 1% and 0.1%) and its curves."""
    lr, sched, tr, extra = winner
    hits = {}
    for gap in GAPS:
        e, _ = first_hit(tr, gap)
        times = [first_hit(r, gap)[1] for r in runs]
        s = statistics.median(times) if e is not None and None not in times else None
        hits[gap] = (e, s)
    # the repeat whose seconds are the median is drawn; epochs are identical (same stream)
    secs = np.median(np.array([r["seconds"] for r in runs
                               if len(r["seconds"]) == len(tr["seconds"])]), axis=0)
    e1, s1 = hits[GAPS[0]]
    e2, s2 = hits[GAPS[1]]
    peer = name in PEERS
    ctx.writer.add(
        task="fig1", dataset=prob.name, setting=f"lambda={prob.lam:g},batch={cfg.batch_size}",
        method=name, peer=peer, default=name == "spfb", reached=e1 is not None,
        time_to_target_s=s1,
        evaluations=None if e1 is None else int(round(e1 * len(stream[0]))),
        final_objective=prob.f_star * (1.0 + tr["final_gap"]),
        target_objective=prob.f_star * (1.0 + GAPS[0]),
        metrics={"epochs_to_target": e1, "epochs_to_0.1%": e2, "seconds_to_0.1%": s2,
                 "lr": lr, "schedule": sched, "grid": list(cfg.grid), "variant": extra,
                 "schedules": list(cfg.schedules), "lam": prob.lam,
                 "lr_at_edge": len(cfg.grid) > 1 and lr in (cfg.grid[0], cfg.grid[-1]),
                 "epochs": cfg.epochs_of(prob.name), "grid_epochs_to_1%": grid,
                 "epoch_cap": cap,
                 "test_loglik": -tr["test_loss"][-1],
                 "test_accuracy": tr["test_accuracy"], "status": tr["status"],
                 "seconds_total": float(secs[-1]) if len(secs) else None,
                 "f_star": prob.f_star, "p": prob.p, "T": prob.T,
                 "repeats": len(runs),
                 "same_objective": not (name == "sklearn-sgd" and prob.n_classes > 2)})
    return {"gap": tr["gap"], "test_loss": tr["test_loss"], "seconds": secs.tolist(),
            "epochs": tr["epochs"]}


def run(ctx) -> None:
    cfg = suite_config(ctx, config, Config)
    extra = {"problems": {}}
    ctx.writer.set_extra("config", {k: getattr(cfg, k) for k in cfg.__dataclass_fields__})
    ctx.start(f"{SUITE}: tuning", sum((len(cfg.ranks) + 8) * len(cfg.lams_of(d))
                                      for d in cfg.datasets))
    with thread_limit(1):
        for name in cfg.datasets:
            for lam in cfg.lams_of(name):
                prob = ctx.load(name, build_problem, name, lam, cfg.seed, cfg.max_rows)
                if prob is None:
                    continue
                seconds, _ = timed(lambda prob=prob: reference_optimum(prob))
                tl, acc = prob.test_loss(prob.theta_star)
                ctx.log(f"{name} lambda={lam:g}: T={prob.T}, p={prob.p}, f*={prob.f_star:.6g} "
                        f"(L-BFGS {seconds:.1f}s)")
                res = run_problem(ctx, cfg, prob)
                extra["problems"][f"{name} lambda={lam:g}"] = {
                    "dataset": name, "lam": lam, "T": prob.T, "p": prob.p,
                    "f_star": prob.f_star, "optimum_test_loss": tl,
                    "optimum_test_accuracy": acc, **res}
                ctx.writer.set_extra("problems", extra["problems"])
