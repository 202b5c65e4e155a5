"""Data of the ``scale`` suite, generated chunk by chunk on the workers, and the one objective
every method minimizes: sum_j log-loss_j + 1/(2C) ||theta||^2 over X with a ones column
(the intercept, penalized: dask-glm penalizes its intercept and cannot do otherwise, and
scikit-learn, Spark and zbound can all match that with fit_intercept=False)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Problem:
    """One (task, t) cell: X, y dask arrays persisted on the workers."""

    task: str            # "multiclass" | "binary" | "adult"
    dataset: str
    X: object            # dask array (t, d + 1), last column ones
    y: object            # dask array (t,) int64 class indices
    n_classes: int
    t: int
    chunk_rows: int
    note: str

    @property
    def n_params(self) -> int:
        k = 1 if self.n_classes == 2 else self.n_classes
        return k * self.X.shape[1]

    @property
    def chunk_mb(self) -> float:
        return self.chunk_rows * self.X.shape[1] * 8 / 2**20


def _synthetic_block(i: int, rows: int, d: int, n: int, seed: int, binary: bool):
    """Rows of block i: Gaussian features, a ones column, labels drawn from a softmax with
    fixed weights (the same for every block), deterministic in (seed, i): a lost block is
    recomputed identically."""
    W = np.random.default_rng(seed).normal(size=(n, d)) * (1.5 / np.sqrt(d))
    rng = np.random.default_rng([seed, i + 1])
    X = np.empty((rows, d + 1))
    X[:, :d] = rng.normal(size=(rows, d))
    X[:, d] = 1.0
    y = np.argmax(X[:, :d] @ W.T + rng.gumbel(size=(rows, n)), axis=1)
    if binary:
        y = (y >= n // 2).astype(np.int64)
    return X, y.astype(np.int64)


def chunk_rows_for(t: int, cap: int) -> int:
    return int(max(1, min(cap, -(-t // 8))))


def synthetic(cfg, t: int, binary: bool, client) -> Problem:
    """The 10-class problem (or its two-class version: class >= 5), generated on the workers
    chunk by chunk and persisted there; nothing passes through the driver."""
    import dask
    import dask.array as da

    d, n = cfg.n_features, cfg.n_classes
    rows = chunk_rows_for(t, cfg.chunk_rows)
    sizes = [min(rows, t - a) for a in range(0, t, rows)]
    blocks = [dask.delayed(_synthetic_block, pure=True)(i, r, d, n, cfg.seed, binary)
              for i, r in enumerate(sizes)]
    X = da.concatenate([da.from_delayed(b[0], shape=(r, d + 1), dtype=np.float64)
                        for b, r in zip(blocks, sizes)])
    y = da.concatenate([da.from_delayed(b[1], shape=(r,), dtype=np.int64)
                        for b, r in zip(blocks, sizes)])
    X, y = client.persist([X, y])
    task = "binary" if binary else "multiclass"
    note = (f"synthetic softmax, {t} x {d} Gaussian features + ones column, "
            f"{'2 classes (class >= 5 of 10)' if binary else f'{n} classes'}, "
            f"{len(sizes)} chunks of <= {rows} rows generated on the workers")
    return Problem(task, f"synthetic-{task}", X, y, 2 if binary else n, t, rows, note)


def adult(cfg, client) -> Problem:
    """UCI Adult (official training file, one-hot, standardized) with a ones column, split
    into 8 chunks and scattered to the workers."""
    import dask.array as da

    from zbound.datasets import fit_design, load_adult

    ds = load_adult()
    Xs = fit_design(ds.X, bias=False).transform(ds.X)
    X = np.hstack([Xs, np.ones((Xs.shape[0], 1))])
    y = np.asarray(ds.y, dtype=np.int64)
    rows = chunk_rows_for(X.shape[0], cfg.chunk_rows)
    Xd, yd = client.persist([da.from_array(X, chunks=(rows, X.shape[1])),
                             da.from_array(y, chunks=(rows,))])
    note = (f"UCI Adult, {X.shape[0]} x {Xs.shape[1]} (one-hot, standardized) + ones column, "
            "2 classes")
    return Problem("adult", "adult", Xd, yd, 2, X.shape[0], rows, note)


def objective(problem: Problem, C: float, curvature: str = "auto",
              hessian_sample: float | str | None = "auto"):
    """zbound's objective on the dask data (the library's own path; ``hessian_sample`` as
    for :func:`zbound.distributed.dask_logistic_objective`, default its default)."""
    from zbound.distributed import dask_logistic_objective

    return dask_logistic_objective(problem.X, problem.y, problem.n_classes,
                                   np.full(problem.n_params, 1.0 / C), curvature=curvature,
                                   hessian_sample=hessian_sample)


def numpy_objective(X: np.ndarray, y: np.ndarray, n_classes: int, C: float):
    from zbound.models.multinomial import logistic_objective

    k = 1 if n_classes == 2 else n_classes
    return logistic_objective(X, y, n_classes, np.full(k * X.shape[1], 1.0 / C))


def dask_ml_objective(beta: np.ndarray, problem: Problem, C: float) -> float:
    """dask-glm's own objective at beta (its Logistic.pointwise_loss + (1/C) L2.f): what its
    lbfgs minimizes with normalize=False, fit_intercept=False."""
    import dask
    from dask_glm.families import Logistic
    from dask_glm.regularizers import L2

    loss = Logistic.pointwise_loss(beta, problem.X, problem.y)
    return float(dask.compute(loss)[0]) + (1.0 / C) * float(L2().f(beta))


def check_mapping(problem: Problem, obj, C: float, seed: int = 1) -> float:
    """Relative difference of dask-glm's objective and ours at one random weight vector (the
    mapping of regularizer, lambda and intercept conventions), binary problems."""
    beta = 0.1 * np.random.default_rng(seed).normal(size=problem.X.shape[1])
    ours = obj.value(beta)
    theirs = dask_ml_objective(beta, problem, C)
    return abs(ours - theirs) / abs(ours)
