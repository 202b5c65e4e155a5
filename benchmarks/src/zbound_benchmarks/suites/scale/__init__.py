"""Suite ``scale``: bound majorization on Dask against dask-ml, scikit-learn and Spark.

What is solved
    sum log-loss + 1/(2C) ||theta||^2 (C = 1) on X with a ones column, for synthetic 10-class
    problems (and their two-class version) at t = 1e5, 1e6, 1e7 rows x 50 features generated
    chunk by chunk on the workers of a LocalCluster (2 worker processes x 1 thread), and UCI
    Adult. The library (``DaskSoftmaxLoss`` + the default solver, one pass per evaluation)
    against dask-ml's LogisticRegression (admm, lbfgs, newton, proximal_grad; binary only:
    on 10 classes what it does is recorded, and one-vs-rest is timed), scikit-learn and Spark
    MLlib on the gathered data, and the library's NumPy path. The library runs with its defaults
    (``hessian_sample="auto"``: sub-sampled Hessian rows on large data) and, beside it, with
    the exact Hessian every pass (``zbound-dask-exact``). Target: f* + 1e-6 |f*|.

Modules
    :mod:`.config`, :mod:`.problems` (data on the workers, the objective mapping),
    :mod:`.peers` (dask-ml, scikit-learn, Spark), :mod:`.runs`, :mod:`.report`.
"""

from zbound_benchmarks.suites.scale.config import SUITE, Config, config, tiny
from zbound_benchmarks.suites.scale.report import report
from zbound_benchmarks.suites.scale.runs import OPTIONS, run

__all__ = ["Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
