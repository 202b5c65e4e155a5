"""Data of ``latent``: the five sets of Table 2 / 5 of paper 003 split 90/10, and the Fig. 1 toy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zbound.bench.suites.latent.config import Config


@dataclass
class Split:
    dataset: str
    split: int
    X: np.ndarray
    y: np.ndarray
    Xt: np.ndarray
    yt: np.ndarray
    n_classes: int
    note: str = ""


def _standardize(X, Xt):
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    keep = sd > 1e-12
    return (X[:, keep] - mu[keep]) / sd[keep], (Xt[:, keep] - mu[keep]) / sd[keep]


def load_split(name: str, split: int, cfg: Config) -> Split:
    """Stratified random 90/10 split (seeded by split), features standardized on the training
    part (constant columns dropped); SRBCT projected on its first ``cfg.srbct_pca`` principal
    components of the training part."""
    from sklearn.model_selection import train_test_split

    from zbound.datasets import load

    ds = load(name)
    X = np.asarray(ds.X, dtype=np.float64)
    y = np.asarray(ds.y, dtype=np.int64)
    X, Xt, y, yt = train_test_split(X, y, test_size=cfg.test_fraction, stratify=y,
                                    random_state=cfg.seed + 1000 * split)
    X, Xt = _standardize(X, Xt)
    note = ""
    if name == "srbct" and cfg.srbct_pca is not None:
        k = min(cfg.srbct_pca, X.shape[0] - 1)
        _, _, Vt = np.linalg.svd(X, full_matrices=False)
        X, Xt = X @ Vt[:k].T, Xt @ Vt[:k].T
        sd = X.std(axis=0)
        X, Xt = X / sd, Xt / sd
        note = f"PCA {k}"
    return Split(name, split, np.ascontiguousarray(X), y, np.ascontiguousarray(Xt), yt,
                 int(y.max()) + 1, note)


def stripes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The Fig. 1 toy: two classes from 8 Gaussians (std 0.5), two per horizontal stripe at
    x = -4 and x = 4, stripes y = 3, 1, -1, -3 labelled 0, 1, 0, 1. Four convex cells (the
    stripes) separate the classes, which 2 gated components per class can represent; a
    generative fit with 2 Gaussians per class pairs each class's clusters by proximity (the
    two on the left, the two on the right, 4 apart vertically rather than 8 horizontally), and
    its conditional is then at chance."""
    rng = np.random.default_rng(seed)
    cx = np.array([-4.0, 4.0] * 4)
    cy = np.repeat([3.0, 1.0, -1.0, -3.0], 2)
    lab = np.repeat([0, 1, 0, 1], 2)
    k = rng.integers(0, 8, n)
    return np.c_[cx[k], cy[k]] + 0.5 * rng.standard_normal((n, 2)), lab[k]
