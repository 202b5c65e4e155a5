"""Small mixture-of-experts problems shared by the tests of this folder."""

from __future__ import annotations

import numpy as np


def class_data(n=300, seed=0, classes=3, noise=0.5):
    """Three features; the class follows a noisy score of x_1 whose sign flips with x_0, so
    that one logistic expert cannot fit it and two can."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    flip = X[:, 0] > 0
    score = X[:, 1] + noise * rng.normal(size=n)
    y = np.digitize(np.where(flip, -score, score), np.linspace(-1, 1, classes - 1))
    return X, y.astype(int)
