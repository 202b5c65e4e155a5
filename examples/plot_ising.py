"""
Upper bounds on an Ising log-partition function
===============================================

For an Ising model on {-1, 1}^d, ``zbound.ising`` computes the quantum-entropy relaxation of
Beyler & Bach (with features (1, x), and greedily enlarged), tree-reweighted belief propagation
(TRW) and the log-det relaxation, all upper bounds on log Z, against the exact value by
enumeration. The plot shows each bound's excess over log Z, per variable, as the couplings grow.
"""

import warnings

import matplotlib.pyplot as plt

from zbound.ising import greedy_features, log_partition, logdet_bound, quantum_bound, trw_bound
from zbound.ising.generators import random_model

d = 8
scales = [0.25, 0.5, 1.0, 2.0]
methods = {
    "quantum (1, x)": lambda m: quantum_bound(m).bound,
    "quantum, greedy k = 3": lambda m: greedy_features(m, 3).bound,
    "TRW": lambda m: trw_bound(m, rho_steps=5).bound,
    "log-det": lambda m: logdet_bound(m).bound,
}
excess = {name: [] for name in methods}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    for w in scales:
        model = random_model(d, "gaussian", random_state=0)
        model = type(model)(model.h * w, model.J * w, model.epsilon)
        exact = log_partition(model)
        for name, bound in methods.items():
            value = bound(model)
            assert value >= exact - 1e-9
            excess[name].append((value - exact) / d)

fig, ax = plt.subplots(figsize=(6.4, 4))
for name, e in excess.items():
    ax.plot(scales, e, marker="o", label=name)
ax.set_xlabel("coupling scale")
ax.set_ylabel("(bound - log Z) / d")
ax.legend()
ax.set_title(f"Complete graph, d = {d}, Gaussian parameters")
fig.tight_layout()
