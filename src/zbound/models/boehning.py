"""Boehning's fixed curvature of a softmax objective, from the model: where the bound
preconditioner of L-BFGS applies, what it costs, and building it
(:class:`zbound.bounds.boehning.BoundPreconditioner`).

It applies to a loss with the :class:`~zbound.models.base.FixedCurvature` capability
(``bound_gram``) under L2 penalties equal over the classes and at most one
intercept-centering term, read through the penalties' curvature operators.
"""

from __future__ import annotations

import numpy as np

from zbound.bounds.boehning import BoundPreconditioner
from zbound.models.base import FixedCurvature, loss_and_penalties, supports

# precondition="auto" builds the preconditioner when the Gram matrix and its Cholesky factor
# cost at most ``_SETUP_BUDGET`` gradient evaluations, applying it at most ``_APPLY_BUDGET`` of
# one, and its (d, d) matrix at most ``_MAX_GRAM_BYTES`` (SRBCT, d = 2309 and 66 rows: setup
# ~1800 gradients, skipped; KMNIST 2000 x 785: 22; adult: 27; digits: 1.6).
_SETUP_BUDGET = 40.0
_APPLY_BUDGET = 0.5
_MAX_GRAM_BYTES = 256 * 2**20
# The Gram matrix of the preconditioner is estimated from every m-th row once there are more
# than max(_GRAM_MIN_ROWS, _GRAM_ROWS_PER_COLUMN d) rows (a metric, not a bound, is needed).
_GRAM_MIN_ROWS = 4096
_GRAM_ROWS_PER_COLUMN = 20


def preconditioner_cost(model) -> tuple[float, float] | None:
    """(setup, per application) cost of :class:`BoundPreconditioner` for ``model`` in units of
    one gradient evaluation (flop counts: Gram t d^2, Cholesky d^3 / 3, two triangular solves
    2 k d^2, against a gradient's 4 t k d; sparse X: nnz in place of t d), or None where it
    does not apply (no ``bound_gram``)."""
    import scipy.sparse as sp

    loss, _ = loss_and_penalties(model)
    if not supports(loss, FixedCurvature):
        return None
    t, d, k = loss.n_samples, loss.d, loss.k
    X = loss.X
    nnz = X.nnz if sp.issparse(X) else t * X.shape[1]
    grad = 4.0 * max(nnz, 1) * k
    factors = 2 if (k >= 2 and loss.k < loss.n_classes) else 1
    setup = nnz * d + factors * d ** 3 / 3.0
    return setup / grad, 2.0 * factors * k * d * d / grad


def _penalty_parts(loss, penalties):
    """(D (d,), w, e) of L2 penalties equal over the classes plus at most one centering term
    w (1 (x) e)(1 (x) e)^T; None for any other penalty structure."""
    k, d = loss.k, loss.d
    p = k * d
    D = np.zeros(p)
    w, e = 0.0, None
    for pen in penalties:
        form = pen.curvature(p).diagonal_plus_rank_one()
        if form is None:
            return None
        D += form[0]
        for weight, u in form[1]:
            U = np.asarray(u).reshape(k, d)
            if e is not None or not (U == U[0]).all():
                return None
            e, w = U[0].copy(), weight
    Dk = D.reshape(k, d)
    if not (Dk == Dk[0]).all():
        return None
    return Dk[0].copy(), w, e


def preconditioner_fits(model) -> bool:
    """Whether ``precondition="auto"`` builds :class:`BoundPreconditioner` for ``model``: a
    softmax objective of the supported penalty structure whose setup costs at most 40
    gradient evaluations and whose (d, d) matrix fits in 256 MB (nothing is built here)."""
    cost = preconditioner_cost(model)
    if cost is None or cost[0] > _SETUP_BUDGET or cost[1] > _APPLY_BUDGET:
        return False
    loss, penalties = loss_and_penalties(model)
    if 8 * loss.d * loss.d > _MAX_GRAM_BYTES:
        return False
    return _penalty_parts(loss, penalties) is not None


def bound_preconditioner(model, shrink: float = 1.0, sample: bool = False,
                         dtype=np.float64, explicit: bool | None = None,
                         gram: np.ndarray | None = None) -> BoundPreconditioner | None:
    """:class:`BoundPreconditioner` for a softmax objective (a loss with ``bound_gram``, L2
    penalties equal over classes, at most one intercept-centering term); None for anything
    else. Raises ValueError when its (d, d) matrix would exceed 256 MB. ``sample``: the Gram
    matrix from every m-th row once there are more than max(4096, 20 d) rows (scaled to the
    total weight; B is then an estimate, not a bound). ``dtype`` float32 keeps the factor in
    single precision (half the memory and of a solve's memory traffic; for a shrunk B, whose
    condition number is at most 1 + (largest eigenvalue) / mu, single precision resolves it).
    ``explicit``: see :class:`BoundPreconditioner`. ``gram``: a (d, d) Gram matrix to use in
    place of the loss's own (copied; e.g. a running mean over mini-batches)."""
    loss, penalties = loss_and_penalties(model)
    if not supports(loss, FixedCurvature):
        return None
    k, d = loss.k, loss.d
    if 8 * d * d > _MAX_GRAM_BYTES:
        raise ValueError(f"the bound preconditioner needs a dense {d} x {d} matrix "
                         f"({8 * d * d / 2**20:.0f} MB, limit {_MAX_GRAM_BYTES // 2**20} MB); "
                         "use precondition='none' (or 'auto', which skips it)")
    parts = _penalty_parts(loss, penalties)
    if parts is None:
        return None
    D, w, e = parts
    rows = None
    if sample:
        rows = max(_GRAM_MIN_ROWS, _GRAM_ROWS_PER_COLUMN * d)
    if gram is not None:
        G = np.array(gram, dtype=dtype, copy=True)
        if G.shape != (d, d):
            raise ValueError(f"gram must have shape ({d}, {d}), got {G.shape}")
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            G = loss.bound_gram(rows, dtype=dtype)
    if not np.isfinite(G).all():
        # features of magnitude ~sqrt(max float / rows): X^T X leaves the dtype's range
        raise FloatingPointError(f"the bound's Gram matrix X^T X overflows {np.dtype(dtype).name}")
    return BoundPreconditioner(G, k, loss.n_classes, D, w, e, shrink, explicit)


__all__ = ["bound_preconditioner", "preconditioner_cost", "preconditioner_fits"]
