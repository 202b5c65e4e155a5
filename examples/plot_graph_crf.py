"""
CRFs on trees and on loopy graphs
=================================

``GraphCRF`` labels the nodes of any graph whose treewidth is small, with exact inference on a
junction tree. Two made-up tasks, each where the edges carry what a per-node model cannot see:

* **A tree.** Each node's hidden state copies its parent's with probability 0.8; its features
  are a reading of the state that is wrong 45% of the time. The CRF on the tree's edges is
  compared with a classifier that labels each node from its own reading.
* **A loopy graph (skip chain).** Sentences mention two names twice each; only one mention of a
  name carries a cue of its kind (a title or a company suffix). A chain CRF sees neighbouring
  words only; a skip-chain CRF adds an edge between the two mentions of a name, which closes
  cycles with the chain edges, and carries the cue to the other mention.
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np

from zbound import BoundLogisticRegression, ChainCRF, GraphCRF

rng = np.random.default_rng(0)
STATES = np.array(["A", "B", "C"])


def tree(n):
    """A random tree of n nodes: (node features, edges parent -> child, hidden states)."""
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    state = [int(rng.integers(3))]
    for i in range(1, n):
        state.append(state[parent[i]] if rng.random() < 0.8 else int(rng.integers(3)))
    reading = [s if rng.random() > 0.45 else int(rng.integers(3)) for s in state]
    nodes = [{"reading=" + STATES[r]: 1.0} for r in reading]
    edges = [(parent[i], i) for i in range(1, n)]
    return (nodes, edges), list(STATES[state])


tree_train = [tree(int(rng.integers(5, 20))) for _ in range(200)]
tree_test = [tree(int(rng.integers(5, 20))) for _ in range(100)]
crf = GraphCRF(c2=0.1).fit([g for g, _ in tree_train], [y for _, y in tree_train])
gold = np.concatenate([y for _, y in tree_test])
tree_crf = float(np.mean(np.concatenate(crf.predict([g for g, _ in tree_test])) == gold))


def readings(data):
    keys = ["reading=" + s for s in STATES]
    return np.array([[t.get(k, 0.0) for k in keys] for (nodes, _), _ in data for t in nodes])


per_node = BoundLogisticRegression().fit(readings(tree_train),
                                         np.concatenate([y for _, y in tree_train]))
tree_node = per_node.score(readings(tree_test), gold)

NAMES = [f"name{i}" for i in range(30)]
FILLER = ["the", "said", "and", "of", "in"]


def sentence():
    """Two names, each mentioned twice; one mention of each (mostly) carries a cue."""
    kind = {e: ("PER", "ORG")[rng.integers(2)] for e in rng.choice(NAMES, 2, replace=False)}
    mentions = list(kind) * 2
    rng.shuffle(mentions)
    tokens, labels, cued = [], [], set()
    for e in mentions:
        for _ in range(rng.integers(1, 3)):
            tokens.append({"w=" + FILLER[rng.integers(5)]: 1.0})
            labels.append("O")
        feats = {"w=" + e: 1.0, "cap": 1.0}
        if e not in cued and rng.random() < 0.9:
            feats["cue=" + ("mr" if kind[e] == "PER" else "inc")] = 1.0
            cued.add(e)
        tokens.append(feats)
        labels.append(kind[e])
    return tokens, labels


def skip_chain(tokens):
    """The sample (tokens, edges, edge features): chain edges, plus an edge between every two
    mentions of the same name; an edge feature tells the two kinds apart, [1, 0] for a chain
    edge and [0, 1] for a skip edge, so that each kind learns its own pairwise weights (a
    transition, and how often two mentions share a label)."""
    words = [next(k for k in t if k.startswith("w=")) for t in tokens]
    edges = [(t, t + 1) for t in range(len(tokens) - 1)] + [
        (s, t) for s, t in itertools.combinations(range(len(tokens)), 2)
        if t > s + 1 and words[s] == words[t] and "cap" in tokens[s]]
    kinds = np.array([[1.0, 0.0] if t == s + 1 else [0.0, 1.0] for s, t in edges])
    return tokens, edges, kinds


ner_train = [sentence() for _ in range(300)]
ner_test = [sentence() for _ in range(200)]
chain = ChainCRF(c2=0.1).fit([x for x, _ in ner_train], [y for _, y in ner_train])
skip = GraphCRF(c2=0.1).fit([skip_chain(x) for x, _ in ner_train],
                            [y for _, y in ner_train])


def entity_accuracy(pred):
    pairs = [(p, g) for ps, (_, gs) in zip(pred, ner_test) for p, g in zip(ps, gs) if g != "O"]
    return float(np.mean([p == g for p, g in pairs]))


ner_chain = entity_accuracy(chain.predict([x for x, _ in ner_test]))
ner_skip = entity_accuracy(skip.predict([skip_chain(x) for x, _ in ner_test]))

fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
for ax, title, names, values, ylabel in (
        (axes[0], "A tree: noisy readings of inherited states",
         ["per-node classifier", "GraphCRF on the tree"], [tree_node, tree_crf],
         "test node accuracy"),
        (axes[1], "A skip chain: cues on one mention of two",
         ["ChainCRF", "GraphCRF, skip chain"], [ner_chain, ner_skip],
         "test accuracy on names")):
    ax.bar(names, values, color=["C7", "C0"])
    for i, v in enumerate(values):
        ax.text(i, v + 0.01, f"{v:.3f}", ha="center")
    ax.set_ylim(0, 1.08)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
fig.tight_layout()
