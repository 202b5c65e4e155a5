"""Suite ``latent``: latent conditional likelihood (paper 003, Sec. 4), Tables 2 and 5 and the
toy of Fig. 1.

Mixtures of Gaussian-gated logistic regressions (:mod:`zbound.models.latent`) on ionosphere,
bupa, hepatitis, wine and SRBCT with m in {1, 2, 3, 4} components per class, lambda = 0,
trained by the bound (Alg. 2: Jensen on the numerator + Alg. 1 on the denominator) and by the
paper's baselines on the same objective from the same starts: BFGS, CG, steepest descent,
Newton, plus EM on the conditional likelihood. The toy: two classes from 8 Gaussians, m = 2,
with the generative (joint-likelihood) EM of the paper's Fig. 1 as well, and decision-boundary
plots. Task "ridge" reruns the protocol at the paper's m with a small ridge (matched ||theta||)
and polishes every endpoint to compare the local optima found from the same starts.
Modules: :mod:`.config`, :mod:`.problems`, :mod:`.runs`, :mod:`.report`.
"""

from zbound_benchmarks.suites.latent.config import OPTIONS, SUITE, Config, config, tiny
from zbound_benchmarks.suites.latent.report import report
from zbound_benchmarks.suites.latent.runs import run

__all__ = ["Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
