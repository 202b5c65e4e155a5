"""Suite ``sparse``: L1-penalized logistic regression, ``BoundLogisticRegression(penalty="l1")``
(the proximal method bound-cd) against skglm, celer, and scikit-learn's liblinear and saga,
each at the loosest of its own tolerances that reaches the same objective (scikit-learn's
``C sum log-loss + ||w||_1``, recomputed by one function for every method), at strengths
giving about 1%, 10% and 30% nonzero coefficients. One BLAS thread, methods alternating
over repeats, medians. Modules: :mod:`.config`, :mod:`.runs`, :mod:`.report`.
"""

from zbound_benchmarks.suites.sparse.config import SUITE, Config, config, tiny
from zbound_benchmarks.suites.sparse.report import report
from zbound_benchmarks.suites.sparse.runs import OPTIONS, run

__all__ = ["Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
