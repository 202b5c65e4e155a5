"""Figures of the ``latent`` suite (imported by the runs, which draw the toy as they go, and
by the report)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zbound_benchmarks.suites.latent.config import METHOD_NAMES as _NAMES


def toy_figure(X, y, thetas: dict[str, np.ndarray], path: Path) -> Path:
    """Decision regions p(y = 1 | x) of each method on the toy, with the training data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from zbound.models.latent import LatentSoftmaxLoss

    loss = LatentSoftmaxLoss(X, y, 2)
    g0 = np.linspace(X[:, 0].min() - 1, X[:, 0].max() + 1, 200)
    g1 = np.linspace(X[:, 1].min() - 1, X[:, 1].max() + 1, 200)
    G0, G1 = np.meshgrid(g0, g1)
    grid = np.c_[G0.ravel(), G1.ravel()]
    fig, axes = plt.subplots(1, len(thetas), figsize=(4.2 * len(thetas), 3.8), squeeze=False)
    for ax, (name, theta) in zip(axes[0], thetas.items(), strict=True):
        p1 = np.exp(loss.log_proba(theta, grid)[:, 1]).reshape(G0.shape)
        ax.contourf(G0, G1, p1, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.5)
        ax.contour(G0, G1, p1, levels=[0.5], colors="k", linewidths=1.5)
        ax.scatter(X[y == 0, 0], X[y == 0, 1], s=6, c="tab:blue", marker="o", label="class 0")
        ax.scatter(X[y == 1, 0], X[y == 1, 1], s=6, c="tab:red", marker="^", label="class 1")
        acc = float(np.mean(loss.log_proba(theta).argmax(axis=1) == y))
        ax.set_title(f"{_NAMES.get(name, name)}\ntrain accuracy {acc:.2f}", fontsize=10)
        ax.set_xlabel("x1")
    axes[0][0].set_ylabel("x2")
    axes[0][0].legend(loc="lower left", fontsize=8)
    fig.suptitle("Toy problem (8 Gaussians, m = 2): decision boundary p(y=1|x) = 0.5",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
