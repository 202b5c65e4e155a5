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
    reference optimum and target, start points, cells), :mod:`.runs` (method plan, timed runs,
    SQUAREM count check, :func:`run`), :mod:`.report` (tables, verdicts, plots).

Every record's ``metrics`` hold the cell's numbers (``lambda``, ``C``, ``reg``, ``t``, ``d``,
``n_classes``, ``f_star``) besides the run's (``iterations``, ``bound_evaluations``, per-start
times, ...). Methods to add to a run: ``Config.extra_methods``, or
``run_suite("logreg-small", methods=[...])``.
"""

from __future__ import annotations

from zbound.bench.suites.logreg_small.config import (
    LAMBDAS,
    LIBRARY_METHODS,
    REL_TARGET,
    SKLEARN_PEERS,
    SKLEARN_TOLS,
    SOLVER_PEERS,
    SQUAREM_FACTOR,
    SQUAREM_MIN_BOUND_EVALS,
    START_SCALE,
    SUITE,
    TABLE3_SETS,
    WEAK_C,
    WEAK_SETS,
    Config,
    config,
    tiny,
)
from zbound.bench.suites.logreg_small.problems import (
    PAPER_DIMS,
    Cell,
    Problem,
    build_problem,
    cells,
    load_design,
    reference_optimum,
    sklearn_C,
    sklearn_theta,
    start_points,
)
from zbound.bench.suites.logreg_small.report import (
    PAPER_TABLE3,
    PAPER_TO_OURS,
    TARGETS,
    convergence_plots,
    ranking_rows,
    ratio_rows,
    ratio_verdict,
    report,
    squarem_rows,
)
from zbound.bench.suites.logreg_small.runs import (
    OPTIONS,
    choose_sklearn_tol,
    default_method,
    eval_costs,
    method_plan,
    run,
    run_cell,
    squarem_count_check,
    suite_config,
)

#: ``run_suite(..., methods=[...])`` adds registered ``zbound.solvers`` methods to this suite.
ACCEPTS_METHODS = True

__all__ = [
    "ACCEPTS_METHODS", "Cell", "Config", "LAMBDAS", "LIBRARY_METHODS", "OPTIONS", "PAPER_DIMS",
    "PAPER_TABLE3", "PAPER_TO_OURS", "Problem", "REL_TARGET", "SKLEARN_PEERS", "SKLEARN_TOLS",
    "SOLVER_PEERS", "SQUAREM_FACTOR", "SQUAREM_MIN_BOUND_EVALS", "START_SCALE", "SUITE",
    "TABLE3_SETS", "TARGETS", "WEAK_C", "WEAK_SETS", "build_problem", "cells",
    "choose_sklearn_tol", "config", "convergence_plots", "default_method", "eval_costs",
    "load_design", "method_plan", "ranking_rows", "ratio_rows", "ratio_verdict",
    "reference_optimum", "report", "run", "run_cell", "sklearn_C", "sklearn_theta",
    "squarem_count_check", "squarem_rows", "start_points", "suite_config", "tiny",
]
