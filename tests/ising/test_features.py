"""Feature sets, XOR classes, projection onto V and the coefficient matrix F (Sec. 3)."""

import itertools

import numpy as np
import pytest

from zbound.ising.features import (
    FeatureSet,
    all_features,
    coefficient_matrix,
    default_features,
    degree_features,
    distance_one_candidates,
    edge_features,
    tree_features,
)
from zbound.ising.model import IsingModel


def random_model(d, rng, scale=1.0, eps=1.0, density=1.0):
    h = scale * rng.standard_normal(d)
    J = np.triu(scale * rng.standard_normal((d, d)) * (rng.random((d, d)) < density), 1)
    return IsingModel(h, J + J.T, eps)


def hypercube(d):
    return np.array(list(itertools.product([-1.0, 1.0], repeat=d)))


def test_default_masks_and_sizes():
    fs = default_features(4)
    assert fs.masks == (0, 1, 2, 4, 8)
    assert fs.n == 5
    assert len(edge_features(4, [(0, 1), (2, 3), (1, 0)])) == 7  # duplicate edge dropped
    assert len(all_features(5)) == 32
    assert len(degree_features(5, 2)) == 1 + 5 + 10


def test_evaluate_matches_products():
    rng = np.random.default_rng(0)
    fs = FeatureSet(6, [0, 1, 0b101, 0b111000, 0b111111])
    X = rng.choice([-1.0, 1.0], size=(20, 6))
    phi = fs.evaluate(X)
    for k, m in enumerate(fs.masks):
        idx = [i for i in range(6) if m >> i & 1]
        np.testing.assert_array_equal(phi[:, k], np.prod(X[:, idx], axis=1))
    np.testing.assert_array_equal(fs.evaluate(X[0]), phi[0])


@pytest.mark.parametrize("d", [3, 5, 70])
def test_xor_classes_are_the_moment_structure(d):
    """(a, b) share a class iff their XORs agree; moment matrices lie in V (eq. (2)-(3))."""
    rng = np.random.default_rng(d)
    extra = [(1 << (d - 1)) | 1, 0b110] if d > 3 else [0b011]
    fs = default_features(d).add(*extra)
    xc = fs.xor_classes
    masks = np.array(fs.masks, dtype=object)
    xor = np.bitwise_xor.outer(masks, masks)
    same_class = xc.index[:, :, None, None] == xc.index[None, None, :, :]
    same_xor = xor[:, :, None, None] == xor[None, None, :, :]
    np.testing.assert_array_equal(same_class, same_xor.astype(bool))
    assert xc.index[0, 0] == xc.diag
    # a moment matrix E_p[phi phi^T] of a random distribution on a few points is in V
    X = rng.choice([-1.0, 1.0], size=(7, d))
    p = rng.dirichlet(np.ones(7))
    phi = fs.evaluate(X)
    S = (phi * p[:, None]).T @ phi
    np.testing.assert_allclose(xc.project(S), S, atol=1e-14)


@pytest.mark.parametrize("fs", [default_features(6), edge_features(6, [(0, 1), (1, 2)]),
                                degree_features(5, 2), all_features(4)])
def test_projection_is_orthogonal_projection(fs):
    rng = np.random.default_rng(1)
    xc = fs.xor_classes
    A = rng.standard_normal((fs.n, fs.n))
    P = xc.project(A)
    np.testing.assert_allclose(xc.project(P), P, atol=1e-14)  # idempotent
    B = xc.project(rng.standard_normal((fs.n, fs.n)))
    assert abs(np.vdot(A - P, B)) < 1e-12  # residual orthogonal to V
    # entries are the class averages (generic path agrees with the fast pair-only path)
    np.testing.assert_allclose(P, xc.expand(xc.class_means(A)), atol=1e-14)
    np.testing.assert_allclose(xc.project_perp(A) + P, A, atol=1e-14)


def test_pairs_only_flag():
    assert default_features(7).xor_classes.pairs_only
    assert not edge_features(7, [(0, 1)]).xor_classes.pairs_only


@pytest.mark.parametrize(
    "make", [default_features, lambda d: edge_features(d, [(0, 2), (1, 3)]),
             lambda d: degree_features(d, 3), all_features]
)
def test_coefficient_matrix_represents_f(make):
    rng = np.random.default_rng(2)
    d = 5
    model = random_model(d, rng)
    fs = make(d)
    F = coefficient_matrix(model, fs)
    X = hypercube(d)
    phi = fs.evaluate(X)
    np.testing.assert_allclose(np.einsum("mi,ij,mj->m", phi, F, phi), model.energy(X),
                               atol=1e-12)
    np.testing.assert_allclose(F, F.T)
    np.testing.assert_allclose(fs.xor_classes.project(F), F, atol=1e-15)  # F in V


def test_coefficient_matrix_large_d_multiword():
    rng = np.random.default_rng(3)
    model = random_model(130, rng, density=0.05)
    fs = default_features(130)
    F = coefficient_matrix(model, fs)
    X = rng.choice([-1.0, 1.0], size=(10, 130))
    phi = fs.evaluate(X)
    np.testing.assert_allclose(np.einsum("mi,ij,mj->m", phi, F, phi), model.energy(X),
                               atol=1e-10)


def test_distance_one_candidates():
    fs = default_features(4)
    cand = distance_one_candidates(fs)
    assert sorted(cand) == sorted((1 << i) | (1 << j) for i in range(4) for j in range(i + 1, 4))
    fs2 = fs.add(0b0011)
    cand2 = set(distance_one_candidates(fs2))
    assert 0b0111 in cand2 and 0b1011 in cand2 and 0b0011 not in cand2
    assert all(bin(c).count("1") <= 3 for c in cand2)


def test_tree_features_uses_forest_edges():
    rng = np.random.default_rng(4)
    d = 6
    J = np.zeros((d, d))
    for i, j in [(0, 1), (1, 2), (1, 3), (3, 4), (4, 5)]:
        J[i, j] = J[j, i] = rng.standard_normal()
    fs = tree_features(IsingModel(rng.standard_normal(d), J))
    pairs = {m for m in fs.masks if bin(m).count("1") == 2}
    assert pairs == {(1 << i) | (1 << j) for i, j in [(0, 1), (1, 2), (1, 3), (3, 4), (4, 5)]}


def test_bad_inputs():
    with pytest.raises(ValueError, match="distinct"):
        FeatureSet(3, [0, 1, 1])
    with pytest.raises(ValueError, match="not a monomial"):
        FeatureSet(3, [0, 8])
    with pytest.raises(TypeError, match="ints"):
        FeatureSet(3, [0, 1.5])
    with pytest.raises(ValueError, match="at least one"):
        FeatureSet(3, [])
    with pytest.raises(ValueError, match="d <= 12"):
        all_features(13)
    rng = np.random.default_rng(5)
    model = random_model(4, rng)
    with pytest.raises(ValueError, match="coupling x_"):
        coefficient_matrix(IsingModel(np.zeros(4), model.J), FeatureSet(4, [0, 1, 2]))
    with pytest.raises(ValueError, match="field term"):
        coefficient_matrix(model, FeatureSet(4, [1, 2, 4, 8]))  # no constant: no x_i alone
    with pytest.raises(ValueError, match="d=5"):
        coefficient_matrix(model, default_features(5))
    with pytest.raises(ValueError, match="shape"):
        default_features(4).xor_classes.project(np.eye(3))


@pytest.mark.parametrize("d", [1, 2, 3, 7, 63, 64, 65, 130])
def test_default_xor_classes_in_closed_form_equal_the_sorted_ones(d):
    """(1, x)'s classes come in closed form (no sort of the n^2 XORs): the same ids, counts,
    keys and diagonal class as sorting every XOR of the feature set's words."""
    ref = FeatureSet(d, [0] + [1 << i for i in range(d)]).xor_classes
    fast = default_features(d).xor_classes
    assert np.array_equal(fast.index, ref.index)
    assert np.array_equal(fast.counts, ref.counts)
    assert np.array_equal(fast.keys, ref.keys)
    assert fast.diag == ref.diag and fast.pairs_only
