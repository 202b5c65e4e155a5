"""Quasi-Newton on a mixture's marginal likelihood: ``"moe-lbfgs"``.

EM's convergence is linear, at a rate set by the fraction of information the hidden expert
labels carry (:func:`zbound.moe.diagnostics.missing_information`); with logistic experts each
iteration also solves k + 1 weighted logistic regressions. L-BFGS on the objective L itself
(the gradient of L at theta is the gradient of Q(. | theta) there, one pass over the data)
needs neither (the ``estimators`` benchmark compares it with one ``LogisticRegression``
fit).

The iterations are SciPy's L-BFGS-B (``scipy.optimize.minimize``), the quasi-Newton method a
practitioner would reach for; the library's part is the objective (one product with the data
each way per evaluation, :meth:`zbound.moe.model.MoEProblem.value_and_grad`) and the stopping
rule: an iteration that lowers L by at most ``ftol`` x max(1, |L|) (the estimator's ``tol``),
or a gradient inf-norm at most ``tol`` x max(1, |L|).
"""

from __future__ import annotations

from zbound.moe.model import GatedMixture
from zbound.solvers.base import MethodInfo, register
from zbound.solvers.baselines import ScipyLBFGSB


@register
class MixtureLBFGS(ScipyLBFGSB):
    """L-BFGS (SciPy's L-BFGS-B, unconstrained) on a mixture's objective."""

    info = MethodInfo("moe-lbfgs", peer=False, constraints="none", requires=GatedMixture,
                      description="L-BFGS on the mixture's marginal likelihood (SciPy "
                                  "L-BFGS-B)")
