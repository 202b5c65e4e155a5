"""
Mixture of experts
==================

``MixtureOfExperts`` fits a softmax gate and several experts by EM with bound M-steps (the
default), Gradient EM or gradient descent. Here two linear experts explain a response that
follows one line left of zero and another right of it; the gate learns where each applies.
"""

import matplotlib.pyplot as plt
import numpy as np

from zbound import MixtureOfExperts

rng = np.random.default_rng(0)
x = rng.uniform(-3, 3, 400)
y = np.where(x < 0, -2 * x - 1, 1.5 * x + 1) + 0.3 * rng.normal(size=400)
X = x[:, None]
moe = MixtureOfExperts(n_components=2, expert="linear", random_state=0).fit(X, y)
grid = np.linspace(-3, 3, 200)[:, None]

fig, ax = plt.subplots(figsize=(6.4, 4))
ax.scatter(x, y, s=6, color="0.6", label="data")
ax.plot(grid[:, 0], moe.predict(grid), "k", lw=2, label="mixture prediction")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.legend()
ax.set_title(f"Two linear experts, R^2 = {moe.score(X, y):.3f}")
fig.tight_layout()
