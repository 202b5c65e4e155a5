"""Data of ``latent``: the five sets of Table 2 / 5 of paper 003 split 90/10, and the Fig. 1 toy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zbound_benchmarks.suites.latent.config import Config


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


#: Fig. 1 toy geometry (our reconstruction; the paper's text fixes only "binary, 8 Gaussians,
#: 2 Gaussians per class in the model, EM at chance, the bound classifies very well"):
#: clusters at x = -TOY_X and +TOY_X, four horizontal stripes y = 1.5, 0.5, -0.5, -1.5 (times
#: TOY_GAP) labelled 0, 1, 0, 1, isotropic standard deviation TOY_STD.
TOY_X = 5.0
TOY_GAP = 1.0
TOY_STD = 0.2


def stripes(n: int, seed: int, x: float = TOY_X, gap: float = TOY_GAP,
            std: float = TOY_STD) -> tuple[np.ndarray, np.ndarray]:
    """The Fig. 1 toy: two classes from 8 Gaussians, two per horizontal stripe (at x = -x and
    x = +x), stripes y = 1.5, 0.5, -0.5, -1.5 (times ``gap``) labelled 0, 1, 0, 1.

    Why this layout: the four stripes are convex cells of a max-of-4-affine-functions partition,
    so the discriminative model with m = 2 gated components per class can classify the data
    (almost) perfectly. The generative fit with 2 shared-covariance Gaussians per class pairs
    each class's four clusters by proximity: the two on the left and the two on the right
    (2 * gap apart vertically) rather than by stripe (2 * x apart horizontally), and its
    conditional is then a horizontal line through y = 0 -- exactly chance (stripes 1 and 4
    right, 2 and 3 wrong). With x >> gap that grouping is the maximum-likelihood one and EM's
    first split (along the direction of largest variance, x) lands in it from any start near
    the data mean."""
    rng = np.random.default_rng(seed)
    cx = np.array([-x, x] * 4)
    cy = np.repeat(np.array([1.5, 0.5, -0.5, -1.5]) * gap, 2)
    lab = np.repeat([0, 1, 0, 1], 2)
    k = rng.integers(0, 8, n)
    return np.c_[cx[k], cy[k]] + std * rng.standard_normal((n, 2)), lab[k]
