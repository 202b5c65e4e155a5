"""Bound majorization on Dask: the softmax loss over a ``dask.array``, evaluated on the
workers as a map over row chunks and a tree of additions (see ``docs/dask.md``).

::

    import dask.array as da
    from zbound.distributed import DaskSoftmaxLoss, dask_logistic_objective
    from zbound.solvers import minimize
    obj = dask_logistic_objective(X, y, n_classes, penalty)      # X, y dask arrays
    res = minimize(obj, np.zeros(obj.n_params))

``BoundLogisticRegression.fit`` and ``zbound.models.multinomial.logistic_objective`` accept
dask arrays and come here. Dask is an optional dependency (``pip install 'zbound[dask]'``).
"""

from __future__ import annotations

from zbound.distributed.curvature import DistributedCurvature, GatheredCurvature
from zbound.distributed.loss import (
    CURVATURES,
    DENSE_MAX_P,
    DENSE_MAX_PAIRS,
    DaskSoftmaxLoss,
    DistributedEvaluationError,
    is_dask_array,
)
from zbound.distributed.objective import DaskObjective, dask_logistic_objective

__all__ = ["CURVATURES", "DENSE_MAX_P", "DENSE_MAX_PAIRS", "DaskObjective", "DaskSoftmaxLoss",
           "DistributedCurvature", "DistributedEvaluationError", "GatheredCurvature",
           "dask_logistic_objective", "is_dask_array"]
