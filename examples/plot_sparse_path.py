"""
L1 logistic regression: a regularization path
=============================================

``BoundLogisticRegression(penalty="l1")`` selects features: below ``C_min`` every coefficient
is exactly zero, and features enter one after another as C grows. Each fit of the path starts
from the last one (``warm_start=True``). The coefficients of the breast-cancer data (30
standardized features) against C.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from zbound import BoundLogisticRegression

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)
p0 = y.mean()                                   # the intercept-only fit's probability
c_min = 1.0 / np.abs(X.T @ (p0 - y)).max()      # the largest C with no feature
Cs = c_min * np.logspace(0, 3, 20)
clf = BoundLogisticRegression(penalty="l1", warm_start=True, tol=1e-6)
path = np.array([clf.set_params(C=C).fit(X, y).coef_[0] for C in Cs])
print(f"C_min = {c_min:.4g}; nonzeros along the path: {np.count_nonzero(path, axis=1)}")

fig, ax = plt.subplots(figsize=(7, 3.8))
ax.plot(Cs, path, lw=1)
ax.axvline(c_min, color="0.5", lw=0.8, ls="--")
ax.set_xscale("log")
ax.set_xlabel("C")
ax.set_ylabel("coefficient")
ax.set_title("Breast cancer: L1 path (each line a feature)")
fig.tight_layout()
