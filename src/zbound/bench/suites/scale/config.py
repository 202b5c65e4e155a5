"""Configuration of the ``scale`` suite: sizes, targets, peers and their settings."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

SUITE = "scale"
#: dask-glm solvers behind dask-ml's LogisticRegression
DASK_ML_SOLVERS = ("admm", "lbfgs", "newton", "proximal_grad")
#: the library's method on dask arrays (the default solver, zbound.solvers.DEFAULT_METHOD)
LIBRARY = "zbound-dask"


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
    adult : run UCI Adult
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
    adult: bool = True
    spark: bool = True
    seed: int = 0


def config(quick: bool) -> Config:
    if not quick:
        return Config()
    return Config(sizes=(100_000,), repeats=3, dask_ml_max=1_000_000,
                  ladders={"admm": (3, 10), "proximal_grad": (25, 100), "newton": (50,)},
                  tol_ladder=(1e-4, 1e-6, 1e-8))


def tiny() -> Config:
    """Seconds: for the tests."""
    return replace(config(True), sizes=(4_000,), n_features=6, n_classes=4, repeats=1,
                   ladders={"admm": (2,), "proximal_grad": (10,), "newton": (10,)},
                   tol_ladder=(1e-4, 1e-8), adult=False, spark=False)
