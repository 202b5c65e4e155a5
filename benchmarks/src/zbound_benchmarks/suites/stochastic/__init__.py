"""Suite ``stochastic``: SGB Fig. 1 -- SPFB and LSPFB against SGD, momentum, Adam and
scikit-learn's SGDClassifier on L2 logistic regression with mini-batches of 1000.

Data: UCI Adult (one-hot, standardized, 32561 / 16281), KMNIST's 10000 test images (8000 /
2000) and scikit-learn's digits (80 / 20), each with a bias column. Every method runs on one
shared shuffled stream of mini-batches and is tuned on one step-size grid; the reference
optimum is full-batch L-BFGS. Records (task ``fig1``) give epochs and seconds to 1% (the
target) and 0.1% of the optimum. Modules: :mod:`.config`, :mod:`.problems`, :mod:`.runs`,
:mod:`.report`.
"""

from __future__ import annotations

from zbound_benchmarks.suites.stochastic.config import GAPS, GRID, SUITE, Config, config, tiny
from zbound_benchmarks.suites.stochastic.problems import Problem, build_problem, reference_optimum
from zbound_benchmarks.suites.stochastic.report import report, table, verdict
from zbound_benchmarks.suites.stochastic.runs import OPTIONS, run, trajectory

__all__ = ["GAPS", "GRID", "OPTIONS", "SUITE", "Config", "Problem", "build_problem", "config",
           "reference_optimum", "report", "run", "table", "tiny", "trajectory", "verdict"]
