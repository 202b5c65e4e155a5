"""Input checks shared by bounds and models: one place decides dtype, layout and finiteness."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def check_design(X, nonempty: bool = False):
    """X as float64 CSR (sparse input) or C-contiguous ndarray of shape (t, d).

    Raises ValueError naming the problem for a non-2-D array, NaN or inf entries and, with
    ``nonempty``, zero rows or columns.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        finite = bool(np.all(np.isfinite(X.data)))
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        finite = bool(np.all(np.isfinite(X)))
    if X.ndim != 2 or (nonempty and (X.shape[0] == 0 or X.shape[1] == 0)):
        kind = "a non-empty 2-D array" if nonempty else "2-D"
        raise ValueError(f"X must be {kind} (t, d), got shape {X.shape}")
    if not finite:
        raise ValueError("X contains NaN or inf")
    return X


def check_reg(reg) -> float:
    """The L2 weight as a float; ValueError unless finite and >= 0."""
    if isinstance(reg, bool) or not isinstance(reg, int | float | np.integer | np.floating):
        raise TypeError(f"reg must be a real number, got {type(reg).__name__}")
    if not np.isfinite(reg) or reg < 0:
        raise ValueError(f"reg must be finite and >= 0, got {reg}")
    return float(reg)


__all__ = ["check_design", "check_reg"]
