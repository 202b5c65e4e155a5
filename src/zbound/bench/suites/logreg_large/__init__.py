"""Suite ``logreg-large``: Table 1 (logistic-regression columns) and Table 4 of Jebara &
Choromanska (2012) where the data exists, and larger data against SciPy, scikit-learn and glum.

What is solved
    - task ``table1``: SRBCT (83 x 2308, 4 classes) and the SSL "Text" set (1500 x 11960
      sparse, 2 classes), 90/10 split, the paper's objective sum log-loss + (t lambda / 2)
      ||theta||^2 (lambda = 10 and 100), bias penalized; ten starts near 0; target: SciPy
      L-BFGS-B's solution (paper's termination rule) within 1e-4 relative.
    - task ``table4``: the low-rank bound (``minimize(..., method="bound", rank=k)``) for
      k = 1, 2, 4, ..., 64 on the SRBCT cell; skipped with a note while the low-rank bound is not
      in ``zbound.solvers.BoundMM.options``. Plotted as seconds to the target and as the
      relative gap where each run stopped (the low-rank bound may not reach the target).
    - task ``large``: UCI Adult (one-hot, 32561 rows), KMNIST's 10000 test images (80/20
      split), scikit-learn's digits and a synthetic 200 000 x 50, 10-class problem, at
      C in {0.01, 1, 100}, scikit-learn's objective (``BoundLogisticRegression``'s), two
      targets: 1e-3 and 1e-8 relative to the best objective found (settings ``C=1 loose``,
      ``C=1 tight``).

Modules
    :mod:`.config` (``Config``, ``config(quick)``, ``tiny()``, the paper's tables),
    :mod:`.problems` (data, objectives, peer mappings, references, targets), :mod:`.runs`
    (method plan, tolerance searches, timed runs, peak memory, :func:`run`), :mod:`.report`
    (tables, verdicts, plots).
"""

from __future__ import annotations

from zbound.bench.suites.logreg_large.config import (
    C_VALUES,
    ESTIMATOR,
    ESTIMATOR_DOUBLE,
    ESTIMATOR_MIXED,
    GLUM_PEERS,
    LARGE_SETS,
    LIBRARY_METHODS,
    LOWRANK_METHODS,
    PAPER_EPS,
    PAPER_LAMBDA,
    PAPER_RANKS,
    PAPER_TABLE1,
    PAPER_TABLE4,
    PAPER_TO_OURS,
    SKLEARN_PEERS,
    SOLVER_PEERS,
    SUITE,
    TARGETS,
    Config,
    config,
    tiny,
)
from zbound.bench.suites.logreg_large.problems import (
    Data,
    Problem,
    build,
    large_problem,
    load_large,
    load_paper,
    paper_problem,
    reference,
    start_points,
)
from zbound.bench.suites.logreg_large.report import report, verdicts
from zbound.bench.suites.logreg_large.runs import (
    DENSE_HESSIAN_MAX_PARAMS,
    LOWRANK_MISSING,
    OPTIONS,
    Method,
    fit_call,
    glum_status,
    lowrank_available,
    memory_probe,
    method_plan,
    run,
    run_cell,
    search_tol,
    solver_call,
)

__all__ = [
    "C_VALUES", "Config", "DENSE_HESSIAN_MAX_PARAMS", "Data", "ESTIMATOR", "ESTIMATOR_DOUBLE",
    "ESTIMATOR_MIXED",
    "GLUM_PEERS",
    "LARGE_SETS", "LIBRARY_METHODS", "LOWRANK_METHODS", "LOWRANK_MISSING", "Method", "OPTIONS",
    "PAPER_EPS", "PAPER_LAMBDA", "PAPER_RANKS", "PAPER_TABLE1", "PAPER_TABLE4", "PAPER_TO_OURS",
    "Problem", "SKLEARN_PEERS", "SOLVER_PEERS", "SUITE", "TARGETS", "build", "config",
    "fit_call", "glum_status", "large_problem", "load_large", "load_paper", "lowrank_available",
    "memory_probe", "method_plan", "paper_problem", "reference", "report", "run", "run_cell",
    "search_tol", "solver_call", "start_points", "tiny", "verdicts",
]
