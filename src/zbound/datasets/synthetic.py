"""Synthetic data with known parameters (no ``ZBOUND_DATA`` needed)."""

from __future__ import annotations

import numbers

import numpy as np

from zbound.utils.validation import SCALE_MAX

from ._base import Dataset


def make_multinomial(
    n_samples: int = 500,
    n_features: int = 10,
    n_classes: int = 3,
    random_state=None,
    *,
    scale: float = 1.0,
    intercept: bool = True,
) -> Dataset:
    """Sample from a softmax (multinomial logistic) model with known parameters.

    ``x ~ N(0, I_d)``, ``W[k, j] ~ N(0, scale^2 / d)`` (so each logit has variance about
    ``scale^2``), ``b[k] ~ N(0, 1)`` if ``intercept`` else 0, and
    ``p(y = k | x) = exp(W[k] @ x + b[k]) / sum_l exp(W[l] @ x + b[l])``.

    Parameters
    ----------
    n_samples, n_features, n_classes : int
        t, d and K (K >= 2).
    random_state : None, int or numpy Generator
        Passed to ``numpy.random.default_rng``; the same seed gives the same data.
    scale : float
        Signal strength; larger values give more confident (more separable) classes.
    intercept : bool
        Draw a per-class intercept.

    Returns
    -------
    Dataset with X (t, d) float64, y (t,) int64 in 0..K-1, and ``meta`` holding the true
    ``coef`` (K, d), ``intercept`` (K,) and ``proba`` (t, K), the class probabilities of the
    generating model at X.
    """
    for name, value, low in (("n_samples", n_samples, 1), ("n_features", n_features, 1),
                             ("n_classes", n_classes, 2)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, got {value}")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or \
            not 0.0 <= scale <= SCALE_MAX:
        raise ValueError(f"scale must be a number in [0, {SCALE_MAX:.0e}], got {scale!r}")
    scale = abs(float(scale))          # -0.0 is 0
    if not isinstance(intercept, bool | np.bool_):
        raise TypeError(f"intercept must be True or False, got {intercept!r}")
    rng = np.random.default_rng(random_state)
    coef = rng.normal(0.0, scale / np.sqrt(n_features), size=(n_classes, n_features))
    b = rng.normal(0.0, 1.0, size=n_classes) if intercept else np.zeros(n_classes)
    X = rng.normal(size=(n_samples, n_features))
    logits = X @ coef.T + b
    logits -= logits.max(axis=1, keepdims=True)
    proba = np.exp(logits)
    proba /= proba.sum(axis=1, keepdims=True)
    # Inverse-CDF sampling, one uniform per row.
    u = rng.random(n_samples)[:, None]
    y = np.minimum((np.cumsum(proba, axis=1) < u).sum(axis=1), n_classes - 1).astype(np.int64)
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(f"x{j}" for j in range(n_features)),
        name="multinomial",
        description=(
            f"Synthetic softmax model, {n_samples} x {n_features}, {n_classes} classes, "
            f"scale={scale}, intercept={intercept}, random_state={random_state!r} "
            "(make_multinomial)."
        ),
        target_names=tuple(str(k) for k in range(n_classes)),
        meta={"coef": coef, "intercept": b, "proba": proba},
    )
