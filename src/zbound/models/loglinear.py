"""Conditional log-linear model over explicit configurations (paper 003, eq. (1)).

J(theta) = sum_j [log Z_j(theta) - theta^T f_j(y_j) - log h_j(y_j)] + reg/2 ||theta||^2 with
Z_j(theta) = sum_y h_j(y) exp(theta^T f_j(y)), features given as a (t, n, d) array:
a :class:`~zbound.models.loss.LogLinearLoss` plus an :class:`~zbound.models.penalty.L2Penalty`.
"""

from __future__ import annotations

from zbound.models.loss import LogLinearLoss
from zbound.models.objective import Objective
from zbound.models.penalty import L2Penalty
from zbound.utils.validation import check_reg


class LogLinearModel(Objective):
    """Explicit configurations: features (t, n, d), observed (t,) indices, optional log prior."""

    def __init__(self, features, observed, log_prior=None, reg: float = 0.0,
                 chunk_size: int | None = None):
        loss = LogLinearLoss(features, observed, log_prior, chunk_size)
        self.reg = check_reg(reg)
        super().__init__(loss, L2Penalty(self.reg))
        self.features = loss.features
        self.observed = loss.observed
        self.log_prior = loss.log_prior
