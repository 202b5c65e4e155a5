"""Suite ``estimators``: every estimator against the tool its user would otherwise pick.

``LatentLogisticRegression`` and ``MixtureOfExperts`` against one ``LogisticRegression`` fit,
``BoundSGDClassifier`` against ``SGDClassifier`` (``fit`` and ``partial_fit``), and
``BoundLogisticRegression`` against scikit-learn's solvers on sparse text shapes and small
problems at a matched objective. One BLAS thread, methods alternating over repeats, medians
(fits under ``Config.min_time`` timed in back-to-back runs);
each table states the claim it checks and whether it holds. Modules: :mod:`.config`,
:mod:`.problems`, :mod:`.runs`, :mod:`.report`.
"""

from zbound_benchmarks.suites.estimators.config import SUITE, Config, config, tiny
from zbound_benchmarks.suites.estimators.report import report
from zbound_benchmarks.suites.estimators.runs import OPTIONS, TASKS, run

__all__ = ["Config", "OPTIONS", "SUITE", "TASKS", "config", "report", "run", "tiny"]
