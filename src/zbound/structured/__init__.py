"""Structured prediction: token features; on chains forward-backward, Viterbi and marginals;
on graphs of small treewidth junction trees with exact sum-product and max-product."""

from zbound.structured.chain import (
    ChainLayout,
    Potentials,
    alg1_apply,
    forward_backward,
    marginals,
    viterbi,
)
from zbound.structured.features import (
    FeatureIndex,
    attributes,
    encode_labels,
    featurize,
    token_features,
    word_shape,
)
from zbound.structured.graph import (
    CliqueTree,
    GraphMarginals,
    JunctionForest,
    junction_tree,
    junction_trees,
    tree_max_product,
    tree_sum_product,
)

__all__ = ["ChainLayout", "CliqueTree", "FeatureIndex", "GraphMarginals", "JunctionForest",
           "Potentials",
           "alg1_apply", "attributes", "encode_labels", "featurize", "forward_backward",
           "junction_tree", "junction_trees", "marginals", "token_features", "tree_max_product",
           "tree_sum_product", "viterbi", "word_shape"]
