"""
Latent conditional likelihood
=============================

A class made of several clusters is not linearly separable from the others; a latent model
gives each class ``n_components`` linear scores and marginalizes over them, and the bound
majorizes that likelihood (Jensen on the numerator, Alg. 1 on the denominator).
``LatentLogisticRegression`` with two components per class separates the XOR-like data below,
where plain logistic regression cannot.
"""

import matplotlib.pyplot as plt
import numpy as np

from zbound import BoundLogisticRegression, LatentLogisticRegression

rng = np.random.default_rng(0)
centers = np.array([[2, 2], [-2, -2], [2, -2], [-2, 2]])
labels = np.array([0, 0, 1, 1])
k = rng.integers(0, 4, 400)
X = centers[k] + 0.8 * rng.normal(size=(400, 2))
y = labels[k]

latent = LatentLogisticRegression(n_components=2, C=10.0, random_state=0).fit(X, y)
plain = BoundLogisticRegression().fit(X, y)
xx, yy = np.meshgrid(np.linspace(-5, 5, 200), np.linspace(-5, 5, 200))
grid = np.c_[xx.ravel(), yy.ravel()]
fig, axes = plt.subplots(1, 2, figsize=(8, 3.8), sharey=True)
for ax, est, name in ((axes[0], plain, "logistic regression"),
                      (axes[1], latent, "latent, 2 components per class")):
    proba = est.predict_proba(grid)[:, 1].reshape(xx.shape)
    ax.contourf(xx, yy, proba, levels=20, cmap="RdBu_r", alpha=0.6)
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", s=8, edgecolor="k", linewidth=0.2)
    ax.set_title(f"{name}: accuracy {est.score(X, y):.2f}", fontsize=9)
fig.tight_layout()
