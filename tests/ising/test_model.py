import itertools

import numpy as np
import pytest

from zbound.ising.model import IsingModel


def _naive_energy(h, J, x):
    d = len(h)
    return sum(h[i] * x[i] for i in range(d)) + sum(
        J[i, j] * x[i] * x[j] for i in range(d) for j in range(i + 1, d)
    )


def test_energy_counts_each_pair_once():
    rng = np.random.default_rng(0)
    d = 4
    h = rng.standard_normal(d)
    A = rng.standard_normal((d, d))
    J = np.triu(A, 1) + np.triu(A, 1).T
    model = IsingModel(h, J)
    X = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
    expected = np.array([_naive_energy(h, J, x) for x in X])
    np.testing.assert_allclose(model.energy(X), expected, rtol=1e-13, atol=1e-13)
    assert model.d == d
    np.testing.assert_array_equal(model.edges(), np.stack(np.triu_indices(d, 1), axis=1))


def test_edges_skip_zero_couplings_and_with_epsilon_keeps_parameters():
    J = np.zeros((3, 3))
    J[0, 2] = J[2, 0] = 0.5
    model = IsingModel(np.zeros(3), J, epsilon=2.0)
    np.testing.assert_array_equal(model.edges(), [[0, 2]])
    cold = model.with_epsilon(0.1)
    assert cold.epsilon == 0.1 and np.array_equal(cold.J, model.J)


@pytest.mark.parametrize(
    "h, J, eps, match",
    [
        (np.zeros((2, 2)), np.zeros((2, 2)), 1.0, "1-D"),
        (np.zeros(2), np.zeros((3, 3)), 1.0, "shape"),
        (np.zeros(2), np.array([[0, 1.0], [2.0, 0]]), 1.0, "symmetric"),
        (np.zeros(2), np.eye(2), 1.0, "diagonal"),
        (np.array([np.nan, 0]), np.zeros((2, 2)), 1.0, "finite"),
        (np.zeros(2), np.zeros((2, 2)), -1.0, "epsilon"),
        (np.zeros(0), np.zeros((0, 0)), 1.0, "at least one"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(h, J, eps, match):
    with pytest.raises(ValueError, match=match):
        IsingModel(h, J, eps)
