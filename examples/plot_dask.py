"""
Data on Dask
============

``BoundLogisticRegression.fit`` accepts ``dask.array`` inputs: each bound step is one map over
the chunks (value, gradient and curvature pieces computed where the chunk lives) and a reduce,
so data larger than one machine's memory fits on a cluster. Here the threaded scheduler runs it
on this machine, and the result equals the NumPy fit's.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from zbound import BoundLogisticRegression

rng = np.random.default_rng(0)
t, d, k = 20000, 8, 4
W = rng.normal(size=(k, d))
X = rng.normal(size=(t, d))
y = np.argmax(X @ W.T + rng.gumbel(size=(t, k)), axis=1)
Xd = da.from_array(X, chunks=(2500, d))
yd = da.from_array(y, chunks=2500)

on_dask = BoundLogisticRegression(tol=1e-9).fit(Xd, yd)
in_memory = BoundLogisticRegression(tol=1e-9).fit(X, y)
print(f"{Xd.numblocks[0]} chunks; largest coefficient difference "
      f"{np.abs(on_dask.coef_ - in_memory.coef_).max():.1e}")

fig, ax = plt.subplots(figsize=(4.5, 4.2))
ax.scatter(in_memory.coef_.ravel(), on_dask.coef_.ravel())
lim = np.abs(in_memory.coef_).max() * 1.1
ax.plot([-lim, lim], [-lim, lim], "k--", lw=0.8)
ax.set_xlabel("coefficient, NumPy fit")
ax.set_ylabel("coefficient, Dask fit")
ax.set_title("Same model from 8 chunks")
fig.tight_layout()
