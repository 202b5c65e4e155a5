"""Peers of the ``scale`` suite on the same objective: dask-ml's LogisticRegression (the
dask-glm solvers), scikit-learn and Spark MLlib on the gathered data.

Conventions mapped exactly (checked by evaluating one weight vector under both objectives,
:func:`~zbound_benchmarks.suites.scale.problems.check_mapping`): dask-glm minimizes
sum log-loss + lamduh/2 ||beta||^2 with lamduh = 1/C over *all* coefficients, the intercept
included, and standardizes X unless ``normalize=False``; so every method gets X with a ones
column, ``fit_intercept=False``, ``normalize=False``. scikit-learn minimizes
C sum log-loss + 1/2 ||w||^2 (the same minimizer); Spark mean log-loss + regParam/2 ||w||^2,
so regParam = 1/(C t), with ``standardization=False``; but MLlib fitted without an intercept
sets the coefficient of a constant nonzero column to zero (its own warning: "outputs zero
coefficients for constant nonzero columns", as R glmnet does), so the ones column cannot carry
the intercept there: Spark gets X without it and ``fitIntercept=True``, whose intercept is not
penalized (the closest model MLlib can fit, evaluated under our objective like every peer;
on Adult it reaches the 1e-6 target). dask-glm's ``newton`` (and
``gradient_descent``) drop the regularizer: they solve the unpenalized problem, and are
reported with the objective they reach.
"""

from __future__ import annotations

import contextlib
import time
import warnings

import numpy as np

from zbound_benchmarks.harness import timed


class Reached(Exception):
    """Raised inside dask-glm's lbfgs once its objective is at the target (stops the fit)."""


@contextlib.contextmanager
def lbfgs_trace(trace: list, target: float | None = None):
    """Record (seconds since entry, objective) at every function evaluation of dask-glm's
    lbfgs (a wrapper around the fmin_l_bfgs_b it calls); stop it at ``target``."""
    import dask_glm.algorithms as A

    from zbound_benchmarks.compat import lbfgsb_accepting

    orig = A.fmin_l_bfgs_b
    call = lbfgsb_accepting(orig)        # dask-glm passes iprint, which SciPy 1.18 removed
    t0 = time.perf_counter()

    def traced(func, x0, *args, **kwargs):
        def wrapped(beta, *a):
            f, g = func(beta, *a)
            trace.append((time.perf_counter() - t0, float(f)))
            if target is not None and f <= target:
                raise Reached
            return f, g
        return call(wrapped, x0, *args, **kwargs)

    A.fmin_l_bfgs_b = traced
    try:
        yield
    finally:
        A.fmin_l_bfgs_b = orig


def dask_ml_fit(solver: str, X, y, C: float, max_iter: int, tol: float = 1e-10,
                target: float | None = None):
    """(beta or None, seconds, trace, estimator) of dask-ml's LogisticRegression on the dask
    data; lbfgs records its objective trace and stops at ``target`` (beta None then)."""
    from dask_ml.linear_model import LogisticRegression

    est = LogisticRegression(C=C, fit_intercept=False, solver=solver, max_iter=max_iter,
                             tol=tol, solver_kwargs={"normalize": False})
    trace: list = []
    beta = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = lbfgs_trace(trace, target) if solver == "lbfgs" else contextlib.nullcontext()
        t0 = time.perf_counter()
        try:
            with ctx:
                est.fit(X, y)
            beta = np.asarray(est.coef_, dtype=np.float64).ravel()
        except Reached:
            pass
        seconds = time.perf_counter() - t0
    return beta, seconds, trace, est


def dask_ml_ovr(X, y, n_classes: int, C: float, max_iter: int = 1000, tol: float = 1e-8):
    """One-vs-rest with dask-ml's lbfgs (what a user must do for 10 classes): (W, seconds)."""
    W = np.empty((n_classes, X.shape[1]))
    t0 = time.perf_counter()
    for c in range(n_classes):
        W[c] = dask_ml_fit("lbfgs", X, (y == c).astype(np.int64), C, max_iter, tol)[0]
    return W, time.perf_counter() - t0


def sklearn_fit(X, y, C: float, tol: float):
    from sklearn.linear_model import LogisticRegression

    est = LogisticRegression(C=C, fit_intercept=False, tol=tol, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds, _ = timed(lambda: est.fit(X, y))
    coef = est.coef_
    return coef.ravel().copy(), seconds, int(np.max(est.n_iter_))


# -- Spark ----------------------------------------------------------------------------------

_SPARK = {"spark": None, "reason": None}


def local_spark():
    """A local Spark with two cores (pyspark's entry point), or None with the reason in
    ``spark_skip_reason()``."""
    if _SPARK["spark"] is not None or _SPARK["reason"] is not None:
        return _SPARK["spark"]
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError:
        _SPARK["reason"] = "pyspark is not installed (pip install pyspark; needs a Java runtime)"
        return None
    try:
        spark = (SparkSession.builder.master("local[2]").appName("zbound-scale")
                 .config("spark.driver.memory", "4g")
                 .config("spark.ui.enabled", "false")
                 .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    except Exception as exc:   # no Java, no memory, ...
        _SPARK["reason"] = f"a local Spark did not start: {type(exc).__name__}: {exc}"[:300]
        return None
    _SPARK["spark"] = spark
    return spark


def spark_skip_reason() -> str | None:
    return _SPARK["reason"]


def spark_stop() -> None:
    if _SPARK["spark"] is not None:
        _SPARK["spark"].stop()
        _SPARK["spark"] = None


def spark_frame(X: np.ndarray, y: np.ndarray):
    """A cached Spark DataFrame (features, label) of the gathered data without its last
    column (the ones column: Spark fits the intercept itself, see the module docstring)."""
    import pandas as pd
    from pyspark.ml.functions import array_to_vector

    spark = local_spark()
    pdf = pd.DataFrame({"f": list(X[:, :-1]), "label": y.astype(np.float64)})
    df = spark.createDataFrame(pdf).select(array_to_vector("f").alias("features"), "label")
    df = df.repartition(2).cache()
    df.count()
    return df


def spark_fit(df, t: int, n_classes: int, C: float, tol: float, max_iter: int = 100_000):
    """Spark MLlib's LogisticRegression (L-BFGS) on the same objective but for the intercept
    (fitted by Spark, unpenalized): (W with the intercept as the last column, seconds, iters).
    """
    from pyspark.ml.classification import LogisticRegression

    lr = LogisticRegression(maxIter=max_iter, regParam=1.0 / (C * t), elasticNetParam=0.0,
                            tol=tol, fitIntercept=True, standardization=False,
                            family="binomial" if n_classes == 2 else "multinomial")
    t0 = time.perf_counter()
    model = lr.fit(df)
    seconds = time.perf_counter() - t0
    if n_classes == 2:
        W = np.append(model.coefficients.toArray(), model.intercept)
    else:
        W = np.hstack([model.coefficientMatrix.toArray(),
                       model.interceptVector.toArray()[:, None]])
    return np.asarray(W, dtype=np.float64).ravel(), seconds, model.summary.totalIterations
