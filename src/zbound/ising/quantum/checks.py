"""Input checks shared by the quantum-relaxation entry points (hierarchy, metric, CVXPY peer)."""

from __future__ import annotations

import math

import numpy as np

from zbound.ising.features import FeatureSet, default_features


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """``value`` as a float, if it is a finite real number > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, got {value}")
    return v


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int, if it is an integer (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def resolve_features(model, features) -> FeatureSet:
    """Check ``model`` is an IsingModel and return ``features`` (default (1, x)) for its d."""
    from zbound.ising.model import IsingModel

    if not isinstance(model, IsingModel):
        raise TypeError(f"model must be an IsingModel, got {type(model).__name__}")
    if features is None:
        return default_features(model.d)
    if not isinstance(features, FeatureSet):
        raise TypeError(f"features must be a FeatureSet or None, got {type(features).__name__}")
    if features.d != model.d:
        raise ValueError(f"feature set is for d={features.d}, model has d={model.d}")
    return features

