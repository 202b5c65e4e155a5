"""
Logistic regression, with and without constraints
=================================================

``BoundLogisticRegression`` is a scikit-learn estimator: same objective and C convention as
``LogisticRegression``, so the two reach the same coefficients. Box constraints on the
coefficients (``coef_bounds``) turn each bound step into a quadratic program over the box.
Here the weights of the breast-cancer data are fitted freely and within [-0.5, 0.5].
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from zbound import BoundLogisticRegression

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)
ours = BoundLogisticRegression(C=1.0, tol=1e-8).fit(X, y)
ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=10000).fit(X, y)
boxed = BoundLogisticRegression(C=1.0, coef_bounds=(-0.5, 0.5)).fit(X, y)
print(f"largest difference to scikit-learn: {np.abs(ours.coef_ - ref.coef_).max():.1e}")
print(f"accuracy: free {ours.score(X, y):.3f}, boxed {boxed.score(X, y):.3f}")

fig, ax = plt.subplots(figsize=(7, 3.6))
idx = np.arange(X.shape[1])
ax.bar(idx - 0.2, ours.coef_[0], width=0.4, label="unconstrained (= scikit-learn's)")
ax.bar(idx + 0.2, boxed.coef_[0], width=0.4, label="coef_bounds = (-0.5, 0.5)")
ax.axhline(0.5, color="0.5", lw=0.8, ls="--")
ax.axhline(-0.5, color="0.5", lw=0.8, ls="--")
ax.set_xlabel("feature")
ax.set_ylabel("coefficient")
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
ax.set_title("Breast cancer, C = 1")
fig.tight_layout()
