"""
Sequence labeling with a chain CRF
==================================

``ChainCRF`` takes sequences of per-token feature dicts (as sklearn-crfsuite does) and trains
by L-BFGS steps certified by the junction-tree bound. The data here is made up: each token is a
noisy reading of a hidden state that follows a sticky Markov chain, so the transitions carry
most of the information. The plot compares token accuracy with a per-token classifier, which
sees the same features but not the neighbours' labels.
"""

import matplotlib.pyplot as plt
import numpy as np

from zbound import BoundLogisticRegression, ChainCRF

rng = np.random.default_rng(0)
states = np.array(["A", "B", "C"])


def sequence(length):
    s = [rng.integers(3)]
    for _ in range(length - 1):
        s.append(s[-1] if rng.random() < 0.85 else rng.integers(3))
    s = np.array(s)
    noisy = np.where(rng.random(length) < 0.45, rng.integers(0, 3, length), s)
    return [{"reading=" + states[r]: 1.0, "bias": 1.0} for r in noisy], list(states[s])


train = [sequence(rng.integers(5, 30)) for _ in range(300)]
test = [sequence(rng.integers(5, 30)) for _ in range(100)]
crf = ChainCRF(c2=0.1).fit([x for x, _ in train], [y for _, y in train])
pred = crf.predict([x for x, _ in test])
gold = np.concatenate([y for _, y in test])
crf_acc = float(np.mean(np.concatenate(pred) == gold))


def flat(data):
    keys = ["reading=A", "reading=B", "reading=C"]
    return np.array([[t.get(k, 0.0) for k in keys] for x, _ in data for t in x])


per_token = BoundLogisticRegression().fit(flat(train), np.concatenate([y for _, y in train]))
tok_acc = per_token.score(flat(test), gold)

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(["per-token classifier", "chain CRF"], [tok_acc, crf_acc], color=["C7", "C0"])
for i, v in enumerate([tok_acc, crf_acc]):
    ax.text(i, v + 0.01, f"{v:.3f}", ha="center")
ax.set_ylim(0, 1)
ax.set_ylabel("test token accuracy")
ax.set_title("Noisy readings of a sticky Markov chain")
fig.tight_layout()
