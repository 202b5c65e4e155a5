"""Suite ``logreg-small``: Table 3 of Jebara & Choromanska (2012), supplement, and a weak-L2 sweep.

What is solved
    L2-regularized logistic regression in the library's softmax parametrization,
    ``MultinomialLogistic(X, y, n_classes, reg)``: J(theta) = sum_j log-loss_j + reg/2 ||theta||^2,
    on standardized features plus a bias column (the paper's dimensions).

    - task ``table3``: the paper's regularizer (t lambda / 2)||theta||^2, reg = t * lambda,
      lambda in {1, 1e2, 1e4}, on the five Table 3 sets.
    - task ``weak-l2``: scikit-learn's C in {1, 10}, reg = 1 / C, on the same sets plus
      scikit-learn's digits (8x8, 10 classes). This is the regime where plain Alg. 2 is slow:
      for a confidently classified sample the bound's curvature decays like 1/(2|r|) in the
      margin r while the true Hessian's decays like exp(-|r|), so with little regularization the
      bound is much looser than the Hessian (wine, C = 10: hundreds to thousands of Alg. 2
      iterations against about ten Newton steps).

Modules
    :mod:`.config` (``Config``, ``config(quick)``, ``tiny()``), :mod:`.problems` (data, the
    reference optimum and target, cells), :mod:`.runs` (method plan, SQUAREM count check,
    :func:`run`; the timed runs are :mod:`zbound_benchmarks.suites.logreg`'s), :mod:`.report`
    (tables, verdicts, plots).

Every record's ``metrics`` hold the cell's numbers (``lambda``, ``C``, ``reg``, ``t``, ``d``,
``n_classes``, ``f_star``) besides the run's (``iterations``, ``bound_evaluations``, per-start
times, ...). Methods to add to a run: ``Config.extra_methods``, or
``run_suite("logreg-small", methods=[...])``.
"""

from zbound_benchmarks.suites.logreg_small.config import SUITE, Config, config, tiny
from zbound_benchmarks.suites.logreg_small.report import report
from zbound_benchmarks.suites.logreg_small.runs import OPTIONS, run

#: ``run_suite(..., methods=[...])`` adds registered ``zbound.solvers`` methods to this suite.
ACCEPTS_METHODS = True

__all__ = ["ACCEPTS_METHODS", "Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
