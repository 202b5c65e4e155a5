"""
Stochastic bound majorization
=============================

``BoundSGDClassifier`` takes stochastic bound steps on mini-batches (``solver="spfb"``: the
stochastic partition-function bound), with ``partial_fit`` for data arriving in chunks. The
plot shows test accuracy after each pass over the digits data, against scikit-learn's
``SGDClassifier`` with the log loss, both fed the same chunks.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from zbound import BoundSGDClassifier

X, y = load_digits(return_X_y=True)
X = StandardScaler().fit_transform(X)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
classes = np.unique(y)
ours = BoundSGDClassifier(solver="spfb", random_state=0)
peer = SGDClassifier(loss="log_loss", random_state=0)
acc = {"zbound spfb": [], "SGDClassifier": []}
rng = np.random.default_rng(0)
for _epoch in range(8):
    order = rng.permutation(len(ytr))
    for chunk in np.array_split(order, 10):
        ours.partial_fit(Xtr[chunk], ytr[chunk], classes=classes)
        peer.partial_fit(Xtr[chunk], ytr[chunk], classes=classes)
    acc["zbound spfb"].append(ours.score(Xte, yte))
    acc["SGDClassifier"].append(peer.score(Xte, yte))

fig, ax = plt.subplots(figsize=(6.4, 4))
for name, a in acc.items():
    ax.plot(range(1, 9), a, marker="o", label=name)
ax.set_xlabel("pass over the training data (10 chunks each)")
ax.set_ylabel("test accuracy")
ax.legend()
ax.set_title("Digits, partial_fit on chunks")
fig.tight_layout()
