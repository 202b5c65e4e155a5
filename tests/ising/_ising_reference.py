"""Test-only references for the Ising tests: brute-force Phi_eps and small random models.

Kept independent of zbound.ising.exact so that the bound tests compare against code that shares
nothing with the library.
"""

import itertools
import math

import numpy as np

from zbound.ising.model import IsingModel


def brute_phi(model):
    """Phi_eps(f) = eps log(2^-d sum_x exp(f(x)/eps)) by a plain loop over {-1, 1}^d."""
    X = np.array(list(itertools.product([-1.0, 1.0], repeat=model.d)))
    z = model.energy(X) / model.epsilon
    return model.epsilon * (z.max() + math.log(np.mean(np.exp(z - z.max()))))


def random_model(d, seed, eps=1.0):
    """Standard normal fields and couplings on the complete graph."""
    rng = np.random.default_rng(seed)
    J = np.triu(rng.standard_normal((d, d)), 1)
    return IsingModel(rng.standard_normal(d), J + J.T, eps)
