"""Suite ``moe``: mixtures of experts trained by EM (bound-majorization M-steps), the paper's
EM with inner gradient descent, Gradient EM (Alg. 1), GD (Alg. 2) and Adam.

Tasks
    ``synthetic``: Section 6 of Fruytier, Mokhtari & Sanghavi: SMoLinE (and SMoLogE) with
    d = 10, ||beta*|| = ||w*|| = 4, 1000 points, starts near the truth, 50 iterations over 50
    instances (10 under ``--quick``); objective gap and parameter error against iterations and
    seconds (Figs. 1-2). ``inverted``: Tables 1-2 on KMNIST's test images split 8000 / 2000 and
    scikit-learn's digits, each image inverted with probability 1/2: a single logistic expert
    on original and inverted data, and a 2-expert logistic MoE for 100 iterations over 25
    instances (digits 3, KMNIST 1 under ``--quick``).

Every first-order method's step size is tuned on one grid (:data:`config.LR_GRID`) by its
mean final objective over separate tuning instances (``--quick`` walks the grid instead of
scoring all of it). The test accuracy is tabulated after 10, 25, 50 and 100 iterations.
Modules: :mod:`.config`, :mod:`.runs`, :mod:`.report`.
"""

from zbound_benchmarks.suites.moe.config import LR_GRID, SUITE, Config, config, tiny
from zbound_benchmarks.suites.moe.report import report
from zbound_benchmarks.suites.moe.runs import OPTIONS, run

__all__ = ["Config", "LR_GRID", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
