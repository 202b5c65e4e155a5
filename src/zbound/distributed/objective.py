"""The estimator's objective over dask arrays: DaskSoftmaxLoss + the same penalties."""

from __future__ import annotations

import numpy as np

from zbound.distributed.curvature import GatheredCurvature
from zbound.distributed.loss import DaskSoftmaxLoss
from zbound.models.base import Majorizer
from zbound.models.objective import Objective
from zbound.models.penalty import InterceptCentering, L2Penalty


class DaskObjective(Objective):
    """:class:`~zbound.models.objective.Objective` over a :class:`DaskSoftmaxLoss`.

    With the gathered (dense) curvature the penalties are folded into the one (p, p) matrix,
    so the solvers' solves stay exact (a sum of operators would be solved by CG); with the
    distributed operator the penalties add as usual.
    """

    @staticmethod
    def _gather(C):
        parts = getattr(C, "parts", ())
        if isinstance(C, GatheredCurvature) or not any(isinstance(p, GatheredCurvature)
                                                       for p in parts):
            return C
        return GatheredCurvature(C.to_dense())

    def value_grad_hessian(self, theta):
        f, g, H = super().value_grad_hessian(theta)
        return f, g, self._gather(H)

    def majorizer(self, theta, order: str = "descending") -> Majorizer:
        m = super().majorizer(theta, order)
        return Majorizer(m.theta, m.value, m.grad, self._gather(m.curvature))

    @property
    def passes(self) -> int:
        """Passes over the data so far (each evaluation, product or assembly is one)."""
        return self.loss.passes


def dask_logistic_objective(X, y, n_classes: int, penalty, sample_weight=None,
                            center: float = 0.0, fit_intercept: bool = False,
                            curvature: str = "auto", client=None,
                            hessian_sample: float | str | None = "auto") -> DaskObjective:
    """:func:`zbound.models.multinomial.logistic_objective` for dask arrays X, y (and
    sample_weight): the same objective and theta layout, evaluated on the Dask workers.
    ``hessian_sample`` as for :class:`DaskSoftmaxLoss` ("auto": sub-sampled Hessian rows on
    large data, exact below; None: exact, the NumPy path's iterations)."""
    loss = DaskSoftmaxLoss(X, y, n_classes, sample_weight=sample_weight,
                           reference_class=n_classes == 2, fit_intercept=fit_intercept,
                           curvature=curvature, client=client,
                           hessian_sample=hessian_sample)
    u = np.zeros(loss.n_params)
    u[loss.d - 1:: loss.d] = 1.0
    return DaskObjective(loss, L2Penalty(penalty), InterceptCentering(u, center))
