"""Multinomial logistic regression as a log-linear model (paper 003, eq. (1), softmax features).

J(theta) = sum_j [log sum_a exp(w_a^T x_j) - w_{y_j}^T x_j] + reg/2 ||theta||^2,
theta = vec(W), W of shape (n, d) row-major. The paper's regularizer (t lambda / 2)||theta||^2 is
reg = t * lambda; scikit-learn's C convention is reg = 1 / C.

:class:`MultinomialLogistic` is a named :class:`~zbound.models.objective.Objective`: a
:class:`~zbound.models.loss.SoftmaxLoss` plus an :class:`~zbound.models.penalty.L2Penalty`,
the same classes :class:`zbound.BoundLogisticRegression` minimizes (built by
:func:`logistic_objective`).
"""

from __future__ import annotations

import numpy as np

from zbound.models.loss import SoftmaxLoss
from zbound.models.objective import Objective
from zbound.models.penalty import InterceptCentering, L2Penalty
from zbound.utils.validation import check_reg


class MultinomialLogistic(Objective):
    """L2-regularized softmax regression: ``SoftmaxLoss(X, y, n_classes) + L2Penalty(reg)``.

    Parameters
    ----------
    X : (t, d) array or CSR matrix of inputs (append a bias column yourself if wanted)
    y : (t,) integer class indices in [0, n_classes)
    n_classes : int, default max(y) + 1
    reg : float >= 0, weight of reg/2 ||theta||^2
    sample_weight : (t,) >= 0 or None
    chunk_size : rows per chunk of the map-reduce evaluation (default: about 64 MB a chunk)
    """

    def __init__(self, X, y, n_classes: int | None = None, reg: float = 0.0,
                 sample_weight=None, chunk_size: int | None = None):
        loss = SoftmaxLoss(X, y, n_classes, sample_weight=sample_weight,
                           chunk_size=chunk_size)
        self.reg = check_reg(reg)
        super().__init__(loss, L2Penalty(self.reg))
        self.X = loss.X
        self.y = loss.y
        self.n_classes = loss.n_classes
        self.n_features = loss.d


def logistic_objective(X, y, n_classes: int, penalty: np.ndarray, sample_weight=None,
                       center: float = 0.0, chunk_size: int | None = None,
                       fit_intercept: bool = False) -> Objective:
    """The estimator's objective: weighted softmax log-loss (binary: class 0 as the reference,
    one weight vector, exactly scikit-learn's binary loss) plus a per-parameter L2 penalty
    (0 on intercepts) plus the intercept-centering term.

    With unpenalized intercepts the multinomial objective is flat along "add c to every
    intercept" (the Hessian and the bound curvature both annihilate it: B_j 1 = 0). The term
    center/2 (u^T theta)^2, u the intercept indicator (the last column of each class), is zero
    on the sum-zero representative and makes the curvature definite without moving W or the
    centered intercepts. When bounds on the intercepts cut the flat direction, the sum-zero
    point may be infeasible and the term could trade objective for centering, so the estimator
    then uses a weight 1e-8 times smaller: enough to keep the step QP definite (a QP solver may
    stop short on a singular one), and a gradient perturbation far below ``tol``.

    X : (t, d) float64 ndarray or CSR, the intercept (if any) its last column; y (t,) class
    indices; penalty (k d,) with k = 1 for two classes, else n_classes. With
    ``fit_intercept`` X is (t, d - 1) and the intercept column of ones is implicit
    (``SoftmaxLoss(fit_intercept=True)``: same objective, same theta layout, no copy of X).
    For a ``dask.array`` X the same objective is
    :func:`zbound.distributed.dask_logistic_objective` (the caller chooses the backend).
    """
    loss = SoftmaxLoss(X, y, n_classes, sample_weight=sample_weight,
                       reference_class=n_classes == 2, chunk_size=chunk_size,
                       fit_intercept=fit_intercept)
    u = np.zeros(loss.n_params)
    u[loss.d - 1:: loss.d] = 1.0
    return Objective(loss, L2Penalty(penalty), InterceptCentering(u, center))
