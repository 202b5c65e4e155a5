"""Configuration of the ``scale`` suite: sizes, targets, peers and their settings."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

SUITE = "scale"
#: dask-glm solvers behind dask-ml's LogisticRegression
DASK_ML_SOLVERS = ("admm", "lbfgs", "newton", "proximal_grad")
#: the library's method on dask arrays with its defaults (the default solver,
#: zbound.solvers.DEFAULT_METHOD, and ``hessian_sample="auto"``)
LIBRARY = "zbound-dask"
#: the same with the exact Hessian every pass (``hessian_sample=None``), timed beside it
LIBRARY_EXACT = "zbound-dask-exact"


@dataclass(frozen=True)
class Config:
    """One run of the suite.

    sizes : rows t of the synthetic problems (10 classes and its two-class version)
    n_features : random features; a column of ones is appended (the intercept, penalized
        like every coefficient: the one convention dask-ml, scikit-learn, Spark and zbound
        can all express exactly)
    C : inverse regularization, objective sum_j log-loss_j + 1/(2C) ||theta||^2
    rtol : target = f* + rtol |f*|, f* the reference optimum
    repeats : timed repeats per method (alternated, median)
    workers : LocalCluster worker processes (one thread each)
    chunk_rows : rows per chunk at most (and t // 8 at most, so every size has >= 8 chunks)
    gather_max : scikit-learn, Spark and the NumPy path run on the gathered data up to this t
    dask_ml_max : dask-ml runs up to this t
    ladders : max_iter settings tried in order for dask-ml solvers without a trace; the first
        that reaches the target is timed
    tol_ladder : tolerances tried in order for scikit-learn and Spark
    spark_tol_ladder : Spark's own ladder when given (each Spark fit costs seconds of JVM work
        even at t = 1e5, and it stopped short of the target at every tolerance measured)
    lbfgs_max_iter : max_iter of dask-ml's lbfgs (timed to the target through its trace; on
        Adult it otherwise runs thousands of evaluations, each a dask compute, per repeat)
    spark_max_iter : Spark's maxIter (on Adult at tol 1e-10 it otherwise runs thousands of
        L-BFGS iterations, a Spark job each: the Adult cell took over 10 minutes)
    ovr_max_iter : max_iter of each binary fit of dask-ml's one-vs-rest (shown for what it
        does, a different model, not timed to the target)
    hessian_sample : ``hessian_sample`` of ``LIBRARY`` (the library's default, "auto")
    exact_max : (task, t) cells above this t run ``LIBRARY_EXACT`` only where the task is
        binary (a 10-class exact fit at t = 1e7 takes many minutes on 2 cores); the reference
        optimum there comes from ``LIBRARY``'s settings (tol 1e-10)
    multiclass_max : the 10-class problem runs up to this t (the two-class one at every size)
    tasks : the synthetic tasks to run ("multiclass", "binary"; e.g. one of them alone to
        time a single large cell)
    dask_ml_large : dask-ml solvers run above ``gather_max`` rows (the others were several
        times slower than these at t = 1e6; each skip is recorded with its reason)
    adult : run UCI Adult
    adult_ladders : ``ladders`` for the Adult cell (its one-hot design is badly conditioned:
        the slow dask-ml solvers stop at their cap there). Measured uncapped rungs (2 workers,
        load ~5): admm 5 iterations 51 s (gap 5.6e-3), 20: 228 s (2.7e-3); proximal_grad 25:
        12 s (9.2e-3), 100: 38 s (6.0e-4), 400: 186 s (1.1e-5); newton 50: 18 s (1.5e-4, it
        drops the penalty); dask-ml lbfgs reaches the target in 20 s (58 evaluations). The
        full run stops admm at 5 and proximal_grad at 100 (a capped method runs once and is
        recorded as not reached, its cap stated): the Adult cell then takes minutes, not the
        20+ the ladders above took
    spark : try Spark MLlib (skipped with a reason when pyspark or Java is missing)
    """

    sizes: tuple[int, ...] = (100_000, 1_000_000, 10_000_000)
    n_classes: int = 10
    n_features: int = 50
    C: float = 1.0
    rtol: float = 1e-6
    repeats: int = 3
    workers: int = 2
    chunk_rows: int = 100_000
    gather_max: int = 1_000_000
    dask_ml_max: int = 10_000_000
    ladders: dict = field(default_factory=lambda: {"admm": (5, 20, 80),
                                                   "proximal_grad": (25, 100, 400),
                                                   "newton": (50,)})
    tol_ladder: tuple[float, ...] = (1e-4, 1e-6, 1e-8, 1e-10)
    spark_tol_ladder: tuple[float, ...] | None = None
    lbfgs_max_iter: int = 10_000
    spark_max_iter: int = 1000
    ovr_max_iter: int = 100
    hessian_sample: float | str | None = "auto"
    exact_max: int = 1_000_000
    multiclass_max: int = 10_000_000
    tasks: tuple[str, ...] = ("multiclass", "binary")
    dask_ml_large: tuple[str, ...] = ("lbfgs", "newton")
    adult: bool = True
    adult_ladders: dict | None = field(default_factory=lambda: {
        "admm": (5,), "proximal_grad": (25, 100), "newton": (50,)})
    spark: bool = True
    seed: int = 0


def config(quick: bool) -> Config:
    if not quick:
        return Config()
    return Config(sizes=(100_000,), repeats=3, dask_ml_max=1_000_000,
                  ladders={"admm": (3, 10), "proximal_grad": (25, 100), "newton": (50,)},
                  tol_ladder=(1e-4, 1e-6, 1e-8), spark_tol_ladder=(1e-8,), ovr_max_iter=30,
                  spark_max_iter=200, lbfgs_max_iter=300, adult=False,
                  adult_ladders={"admm": (3,), "proximal_grad": (25,), "newton": (20,)})
    # adult=False: with every peer's ladder the Adult cell alone ran past 12 minutes, so the
    # quick run keeps the synthetic cells (every method and peer) and the full run adds Adult


def tiny() -> Config:
    """Seconds: for the tests."""
    return replace(config(True), sizes=(4_000,), n_features=6, n_classes=4, repeats=1,
                   ladders={"admm": (2,), "proximal_grad": (10,), "newton": (10,)},
                   tol_ladder=(1e-4, 1e-8), adult=False, spark=False)
