"""Structured prediction on chains: token features, forward-backward, Viterbi, marginals."""

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

__all__ = ["ChainLayout", "FeatureIndex", "Potentials", "alg1_apply", "attributes",
           "encode_labels", "featurize", "forward_backward", "marginals", "token_features",
           "viterbi", "word_shape"]
