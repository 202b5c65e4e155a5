"""Mixtures of experts trained by EM (with bound-majorization M-steps), Gradient EM and
gradient descent (Fruytier, Mokhtari & Sanghavi, "Learning Mixtures of Experts with EM").

- :mod:`zbound.moe.model`: :class:`MoEProblem` (likelihood, posteriors, EM objective, gradients)
  and :class:`SoftLabelSoftmaxLoss` (the gate's M-step loss);
- :mod:`zbound.moe.em`: :func:`fit_em`, exact M-steps (closed form for linear experts, the
  library's bound-majorization solvers for the gate and logistic experts, or the paper's inner
  gradient descent);
- :mod:`zbound.moe.gradient`: :func:`fit_gradient_em` (Alg. 1), :func:`fit_gd` (Alg. 2),
  :func:`fit_adam` (peer);
- :mod:`zbound.moe.symmetric`: :class:`SMoLinE`, :class:`SMoLogE` (closed-form EM, mirror map
  A, KL on complete data, the mirror-descent step);
- :mod:`zbound.moe.diagnostics`: :func:`missing_information` (M(theta) and lambda_max).

The scikit-learn estimator is :class:`zbound.MixtureOfExperts` (``zbound.estimators.moe``).
"""

from zbound.moe.diagnostics import MissingInformation, missing_information
from zbound.moe.em import fit_em
from zbound.moe.gradient import fit_adam, fit_gd, fit_gradient_em
from zbound.moe.model import MoEProblem, SoftLabelSoftmaxLoss
from zbound.moe.result import MoEFit
from zbound.moe.symmetric import SMoLinE, SMoLogE, fit_em_symmetric

__all__ = ["MissingInformation", "MoEFit", "MoEProblem", "SMoLinE", "SMoLogE",
           "SoftLabelSoftmaxLoss", "fit_adam", "fit_em", "fit_em_symmetric", "fit_gd",
           "fit_gradient_em", "missing_information"]
