"""The constraint set K' minus the PSD cone, written for CVXPY (zero-temperature SDP, diagonal
metric learning and the CVXPY formulation of the relaxation share it)."""

from __future__ import annotations

import numpy as np

from zbound.ising.features import FeatureSet
from zbound.utils.extras import require


def k_prime_constraints(S, features: FeatureSet):
    """CVXPY constraints for Sigma in V with unit diagonal (so tr Sigma = n), i.e. K' less PSD.

    One sparse equality system: every upper-triangular entry equals its XOR class's first
    entry, and the diagonal's representative equals 1.
    """
    cp = require("cvxpy", "the CVXPY form of the quantum relaxation")
    import scipy.sparse as sp

    n = features.n
    xc = features.xor_classes
    iu, ju = np.triu_indices(n)
    cls = xc.index[iu, ju]
    order = np.argsort(cls, kind="stable")
    cls_sorted = cls[order]
    first = np.ones(cls_sorted.shape[0], dtype=bool)
    first[1:] = cls_sorted[1:] != cls_sorted[:-1]
    rep_of_class = np.empty(xc.n_classes, dtype=np.int64)
    rep_of_class[cls_sorted[first]] = order[first]
    # column-major vec index of entry (i, j)
    flat = iu + n * ju
    others = np.flatnonzero(~first)
    rows_e = order[others]
    m = rows_e.shape[0]
    A = sp.csr_matrix(
        (
            np.concatenate([np.ones(m), -np.ones(m)]),
            (
                np.concatenate([np.arange(m), np.arange(m)]),
                np.concatenate([flat[rows_e], flat[rep_of_class[cls[rows_e]]]]),
            ),
        ),
        shape=(m, n * n),
    )
    drep = flat[rep_of_class[xc.diag]]
    v = cp.vec(S, order="F")
    cons = [v[int(drep)] == 1]
    if m:
        cons.append(A @ v == 0)
    return cons
