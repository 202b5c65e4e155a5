"""Benchmark suite ``ising``: Beyler & Bach, Fig. 1-3 and Suppl. Fig. 5-15.

Upper bounds on Phi_eps(f) (eq. (5)) of random Ising models: the quantum relaxation with features
(1, x) (the library default), with greedy features (Alg. 2, k = 3 and 10) and in degree order;
the log-determinant relaxation (Jordan & Wainwright) and TRW (Wainwright et al.); exact values
by enumeration for d <= 16. Plus the speed of the library's Chambolle-Pock solver against the same
relaxation written in CVXPY (the peer), Chambolle-Pock timings at d = 100 (and 400 in full mode),
and its convergence (Fig. 12-15); the "scale" task times the quantum bound and TRW on complete
graphs up to d = 1000, and the quantum bound alone on two BLAS threads at d = 2000 and 4000
(d <= 200 in quick mode), with a time-vs-d figure and verdict lines.

Modules: :mod:`.config` (sizes), :mod:`.problems` (the random model families),
:mod:`.methods` (the bounds compared), :mod:`.runs` (the tasks, writing records),
:mod:`.report` (tables and the comparison with the paper) and :mod:`.figures` (drawn with
:mod:`zbound_benchmarks.plots`).

Records follow the benchmark record contract (task, dataset, setting, method, peer, default,
reached, time_to_target_s, evaluations, final_objective, target_objective, metrics). One record
per (task, dataset, setting, method), aggregated over the random draws of the parameters:

- ``final_objective``: mean bound over the draws; ``target_objective``: mean exact Phi_eps (or
  None when d is too large for enumeration); ``reached``: every draw produced a value and every
  value that should be a bound is >= the exact value; ``time_to_target_s``: median seconds per
  draw; ``evaluations``: mean iterations (Chambolle-Pock or message-passing sweeps).
- ``metrics``: ``bound``, ``exact``, ``iterations`` plus ``x`` (the plotted abscissa), per-draw
  lists ``bounds`` / ``exacts`` / ``l1s``, and mean / std of ``error_bound`` ((bound - exact)/d),
  ``l1_error`` (mean |P_hat(x_i = 1) - P(x_i = 1)|), ``rel_logdet`` ((bound - logdet)/d) and
  ``gain`` ((bound - quantum)/d); and the problem itself as explicit fields: ``d``, ``params``
  (gaussian / logdet / trw), ``coupling`` (attractive / mixed / repulsive or None), ``graph``,
  ``w``, ``eps`` and, where the feature set varies, ``n``. The report reads these fields; the
  ``dataset`` and ``setting`` strings are labels for people only.
"""

from __future__ import annotations

from zbound_benchmarks.harness import suite_config
from zbound_benchmarks.suites.ising.config import SUITE, Config, config, tiny
from zbound_benchmarks.suites.ising.report import report
from zbound_benchmarks.suites.ising.runs import run_all

#: ``config``: a :class:`Config` replacing ``config(quick)`` (e.g. ``tiny()`` in tests).
OPTIONS = ("config",)

__all__ = ["Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]


def run(ctx) -> None:
    """Run every task at the size of the run's :class:`Config`."""
    run_all(ctx, suite_config(ctx, config, Config))
