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
    :mod:`.problems` (data, references, targets), :mod:`.runs` (method plan, rank sweep,
    :func:`run`), :mod:`.report` (tables, verdicts, plots); the cell's objective, the peers'
    parameter maps and the timed runs are :mod:`zbound_benchmarks.suites.logreg`'s.
"""

from zbound_benchmarks.suites.logreg_large.config import SUITE, Config, config, tiny
from zbound_benchmarks.suites.logreg_large.report import report
from zbound_benchmarks.suites.logreg_large.runs import OPTIONS, run

__all__ = ["Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
