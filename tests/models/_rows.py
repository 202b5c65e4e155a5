"""Shared test inputs for the loss tests: random sample weights of a named kind."""

from __future__ import annotations

import numpy as np


def sample_weights(rng: np.random.Generator, kind: str, t: int) -> np.ndarray | None:
    """None ("none"), uniform on [0, 3) ("random") or half zeros, half ones ("zeros")."""
    if kind == "random":
        return rng.uniform(0.0, 3.0, t)
    if kind == "zeros":
        return np.where(rng.random(t) < 0.5, 0.0, 1.0)
    return None
