"""
Large dimension: the low-rank bound
===================================

For many parameters the full bound curvature (p x p) is too large to keep. The low-rank form
keeps k directions plus a diagonal; ``rule="exact"`` (the default) is a valid bound at every
rank, where Alg. 4 as printed ("paper") is not always one. The plot shows, over ranks, how much
curvature each rule adds above the full bound's (trace ratio; 1 is the full bound), and, over
300 small random problems, how often each rule's curvature fails to dominate the full one.
"""

import matplotlib.pyplot as plt
import numpy as np

from zbound import quadratic_bound
from zbound.bounds.lowrank import lowrank_bound

rng = np.random.default_rng(1)
n, p = 40, 30
features = rng.normal(size=(n, p))
theta = 0.3 * rng.normal(size=p)
full = np.asarray(quadratic_bound(features, theta).curvature)
ranks = [1, 2, 4, 8, 16]
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
for rule, marker in (("exact", "o"), ("sgb", "s"), ("paper", "^")):
    ratios, valid = [], []
    for k in ranks:
        C = lowrank_bound(features, theta, rank=k, rule=rule).curvature.to_dense()
        ratios.append(np.trace(C) / np.trace(full))
        valid.append(np.linalg.eigvalsh(C - full).min() >= -1e-9 * np.trace(full))
    ax.plot(ranks, ratios, marker=marker, label=rule)
    for k, r, ok in zip(ranks, ratios, valid):
        if not ok:
            ax.annotate("not a bound", (k, r), fontsize=7, color="C3")
ax.set_xscale("log", base=2)
ax.set_xlabel("rank k")
ax.set_ylabel("trace(low-rank) / trace(full)")
ax.legend(title="rule")
ax.set_title(f"{n} configurations, {p} parameters", fontsize=10)

fails = dict.fromkeys(("exact", "sgb", "paper"), 0)
for trial in range(300):
    r = np.random.default_rng(100 + trial)
    n_, p_ = int(r.integers(3, 10)), int(r.integers(3, 9))
    f_, th = r.normal(size=(n_, p_)), r.normal(size=p_)
    full_ = np.asarray(quadratic_bound(f_, th).curvature)
    k_ = int(r.integers(1, min(4, p_ - 1) + 1))
    for rule in fails:
        C = lowrank_bound(f_, th, rank=k_, rule=rule).curvature.to_dense()
        fails[rule] += np.linalg.eigvalsh(C - full_).min() < -1e-9 * np.trace(full_)
ax2.bar(list(fails), list(fails.values()), color=["C0", "C1", "C2"])
for i, v in enumerate(fails.values()):
    ax2.text(i, v + 2, str(v), ha="center")
ax2.set_ylabel("problems where it is not a bound (of 300)")
ax2.set_title("Validity over random problems, ranks 1-4", fontsize=10)
fig.tight_layout()
