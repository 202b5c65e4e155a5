"""Ising models on the Boolean hypercube {-1, 1}^d (Beyler & Bach, Sec. 1.2).

f(x) = sum_i h_i x_i + sum_{i<j} J_ij x_i x_j, at temperature epsilon, with the uniform base
measure q(x) = 2^-d of the paper, so that the log-partition function of eq. (5) is

    Phi_eps(f) = eps * log( 2^-d * sum_x exp(f(x) / eps) ).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

#: the largest temperature (entropy terms eps x (a few d) stay finite); its inverse the
#: smallest positive one (1 / eps stays finite)
MAX_EPSILON = 1e300


@dataclass(frozen=True)
class IsingModel:
    """Pairwise model: ``h`` (d,) node fields, ``J`` (d, d) symmetric couplings, zero diagonal.

    Each pair enters f once: f(x) = h @ x + sum_{i<j} J[i, j] x_i x_j = h @ x + x @ J @ x / 2.

    Examples
    --------
    >>> import numpy as np
    >>> from zbound import IsingModel
    >>> from zbound.ising import log_partition, quantum_bound
    >>> h = np.array([0.1, -0.2, 0.3])
    >>> J = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, -0.4], [0.0, -0.4, 0.0]])
    >>> model = IsingModel(h, J)
    >>> bound = quantum_bound(model)
    >>> bound.certified, bool(bound.bound >= log_partition(model))
    (True, True)
    """

    h: np.ndarray
    J: np.ndarray
    epsilon: float = 1.0

    def __post_init__(self):
        h = np.asarray(self.h, dtype=np.float64)
        J = np.asarray(self.J, dtype=np.float64)
        if h.ndim != 1:
            raise ValueError(f"h must be 1-D (d,), got shape {h.shape}")
        d = h.shape[0]
        if d < 1:
            raise ValueError("an Ising model needs at least one variable")
        if J.shape != (d, d):
            raise ValueError(f"J must have shape ({d}, {d}) to match h, got {J.shape}")
        if not (np.all(np.isfinite(h)) and np.all(np.isfinite(J))):
            raise ValueError("Ising parameters h and J must be finite (found NaN or inf)")
        if not np.allclose(J, J.T, rtol=0, atol=1e-12 * max(1.0, np.abs(J).max())):
            raise ValueError("J must be symmetric")
        if np.any(np.diag(J) != 0):
            raise ValueError("J must have a zero diagonal (x_i^2 = 1 is a constant)")
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, numbers.Real):
            raise TypeError(f"epsilon must be a number, got {self.epsilon!r}")
        eps = float(self.epsilon)
        if not (eps == 0.0 or 1.0 / MAX_EPSILON <= eps <= MAX_EPSILON):
            raise ValueError(f"epsilon must be 0 or in [{1.0 / MAX_EPSILON:.0e}, "
                             f"{MAX_EPSILON:.0e}] (beyond, 1 / eps or the solvers' entropy "
                             f"terms overflow), got {self.epsilon}")
        object.__setattr__(self, "h", h)
        object.__setattr__(self, "J", 0.5 * (J + J.T))
        object.__setattr__(self, "epsilon", eps)

    @property
    def d(self) -> int:
        return self.h.shape[0]

    def with_epsilon(self, epsilon: float) -> IsingModel:
        return IsingModel(self.h, self.J, epsilon)

    def energy(self, x: np.ndarray) -> np.ndarray:
        """f(x) for x of shape (..., d) with entries in {-1, 1}."""
        x = np.asarray(x, dtype=np.float64)
        return x @ self.h + 0.5 * np.einsum("...i,ij,...j->...", x, self.J, x)

    def edges(self) -> np.ndarray:
        """(m, 2) array of pairs i < j with nonzero coupling."""
        i, j = np.nonzero(np.triu(self.J, 1))
        return np.stack([i, j], axis=1)


#: largest energy scale / eps accepted: differences of f / eps up to twice this stay finite
_MAX_RATIO = 1e300


def energy_scale(model: IsingModel) -> float:
    """sum_i |h_i| + sum_{i<j} |J_ij| >= max_x |f(x)| (inf if it overflows float64)."""
    with np.errstate(over="ignore"):
        return float(np.sum(np.abs(model.h)) + 0.5 * np.sum(np.abs(model.J)))


def check_scale(model: IsingModel, method: str = "this method", ratio: bool = True,
                max_ratio: float | None = None, hint: str = "") -> float:
    """Raise a ValueError naming the cause when f / eps cannot be represented in float64.

    Returns the energy scale s = sum |h| + sum_{i<j} |J_ij|. Fails when s overflows, or when
    eps > 0, ``ratio`` and s / eps exceeds ``max_ratio`` (default 1e300: then f(x)/eps -
    f(y)/eps can overflow, and the log-partition computations would produce inf - inf = NaN);
    ``hint`` ends the message.
    """
    limit = _MAX_RATIO if max_ratio is None else float(max_ratio)
    s = energy_scale(model)
    eps = model.epsilon
    if not np.isfinite(s):
        raise ValueError(
            f"{method}: parameters overflow float64: scale sum|h| + sum_(i<j)|J_ij| is not "
            f"finite (max |h| = {np.abs(model.h).max():.3g}, "
            f"max |J| = {np.abs(model.J).max():.3g})")
    if eps > 0 and ratio:
        with np.errstate(over="ignore"):
            ratio = s / eps
        if not np.isfinite(ratio) or ratio > limit:
            raise ValueError(
                f"{method}: parameters / eps overflow float64: scale sum|h| + sum_(i<j)|J_ij| = "
                f"{s:.3g}, eps = {eps:.3g}, scale / eps = {ratio:.3g} > {limit:.0e}{hint}")
    return s


def relative_gap(upper: float, lower: float, epsilon: float) -> float:
    """(upper - lower) / max(|upper|, |lower|, min(eps, 1)), in Phi_eps units.

    Relative to the value where |value| >= min(eps, 1); below that an absolute gap in units of
    min(eps, 1) (Phi_eps >= E_uniform f = 0 tends to 0 at high temperature, where a purely
    relative test would ask for ever more digits of a vanishing number, and the guard must not
    exceed 1 so that ``tol`` never allows an absolute error above ``tol * max(|value|, 1)``).
    """
    scale = max(abs(upper), abs(lower), min(float(epsilon), 1.0))
    if scale == 0.0:
        return 0.0
    return (upper - lower) / scale
