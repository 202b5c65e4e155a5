"""
Quadratic upper bounds on log Z (Alg. 1)
========================================

``zbound.quadratic_bound`` builds, at an expansion point ``theta0``, a quadratic in ``theta``
that equals log Z and its gradient at ``theta0`` and lies above log Z everywhere. The order in
which Alg. 1 visits the configurations changes the curvature: largest weight first
("descending", the default) is tighter than the given order. The second-order Taylor expansion
is shown for contrast: it is not a bound.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import logsumexp

import zbound

rng = np.random.default_rng(0)
features = rng.normal(size=(8, 3))          # 8 configurations, 3 parameters
theta0 = rng.normal(size=3)
direction = rng.normal(size=3)
direction /= np.linalg.norm(direction)
s = np.linspace(-5, 5, 201)
thetas = theta0 + s[:, None] * direction
exact = logsumexp(thetas @ features.T, axis=1)

fig, ax = plt.subplots(figsize=(6.4, 4))
ax.plot(s, exact, "k", lw=2.5, label="log Z")
for order, ls in (("descending", "-"), ("given", "--")):
    qb = zbound.quadratic_bound(features, theta0, order=order)
    values = qb.evaluate(thetas)
    assert np.all(values >= exact - 1e-9)
    ax.plot(s, values, ls, label=f"Alg. 1 bound, {order} order")
p = np.exp(features @ theta0 - qb.log_z)
hess = (features * p[:, None]).T @ features - np.outer(qb.mean, qb.mean)
d = thetas - theta0
ax.plot(s, qb.log_z + d @ qb.mean + 0.5 * np.einsum("mi,ij,mj->m", d, hess, d), ":",
        label="Taylor (not a bound)")
ax.set_ylim(exact.min() - 1, exact.max() + 5)
ax.set_xlabel("step along a random direction from theta0")
ax.set_ylabel("log Z")
ax.legend()
ax.set_title("Upper bounds on log Z along a line")
fig.tight_layout()
