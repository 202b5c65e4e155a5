"""Mixtures of experts trained by EM (with bound-majorization M-steps), Gradient EM and
gradient descent (Fruytier, Mokhtari & Sanghavi, "Learning Mixtures of Experts with EM").

- :mod:`zbound.moe.model`: :class:`MoEProblem` (likelihood, posteriors, EM objective, gradients)
  and :class:`SoftLabelSoftmaxLoss` (the gate's M-step loss);
Every training method is a registered solver returning :class:`zbound.solvers.Result` (its
trace holds the objective after every iteration): "moe-em" (:class:`MixtureEM`),
"moe-squarem" (:class:`MixtureSquarem`, EM accelerated by SQUAREM), "moe-lbfgs"
(:class:`MixtureLBFGS`, quasi-Newton on the marginal likelihood),
"moe-gradient-em", "moe-gd", "moe-adam" and "moe-em-symmetric"; the ``fit_*`` functions run
them with the paper's settings.

- :mod:`zbound.moe.em`: :func:`fit_em`, exact M-steps (closed form for linear experts, the
  library's bound-majorization solvers for the gate and logistic experts, or the paper's inner
  gradient descent);
- :mod:`zbound.moe.gradient`: :func:`fit_gradient_em` (Alg. 1), :func:`fit_gd` (Alg. 2),
  :func:`fit_adam` (peer);
- :mod:`zbound.moe.quasi_newton`: :class:`MixtureLBFGS` (L-BFGS on the marginal likelihood);
- :mod:`zbound.moe.symmetric`: :class:`SMoLinE`, :class:`SMoLogE` (closed-form EM, mirror map
  A, KL on complete data, the mirror-descent step);
- :mod:`zbound.moe.diagnostics`: :func:`missing_information` (M(theta) and lambda_max).

The scikit-learn estimator is :class:`zbound.MixtureOfExperts` (``zbound.estimators.moe``).
"""

from zbound.moe.diagnostics import MissingInformation, missing_information
from zbound.moe.em import MixtureEM, MixtureSquarem, fit_em
from zbound.moe.gradient import (
    MixtureAdam,
    MixtureGD,
    MixtureGradientEM,
    fit_adam,
    fit_gd,
    fit_gradient_em,
)
from zbound.moe.model import GatedMixture, MixtureLikelihood, MoEProblem, SoftLabelSoftmaxLoss
from zbound.moe.quasi_newton import MixtureLBFGS
from zbound.moe.symmetric import SMoLinE, SMoLogE, SymmetricEM, fit_em_symmetric

__all__ = ["GatedMixture", "MissingInformation", "MixtureAdam", "MixtureEM", "MixtureGD",
           "MixtureGradientEM", "MixtureLBFGS", "MixtureLikelihood", "MixtureSquarem",
           "MoEProblem", "SMoLinE",
           "SMoLogE",
           "SoftLabelSoftmaxLoss", "SymmetricEM", "fit_adam", "fit_em", "fit_em_symmetric",
           "fit_gd", "fit_gradient_em", "missing_information"]
