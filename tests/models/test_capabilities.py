"""The contracts solvers read models through: optional capabilities asked with ``supports``,
the counted model forwarding what it does not count, ``MethodInfo.applies_to``, and the
penalties' structure through their curvature operators."""

from __future__ import annotations

import numpy as np
import pytest

from zbound.bounds.curvature import DenseCurvature, DiagonalCurvature
from zbound.models.base import (
    Batchable,
    FixedCurvature,
    LatentLikelihood,
    LowRankMajorizer,
    SinglePrecision,
    SoftmaxData,
    supports,
)
from zbound.models.latent import latent_objective
from zbound.models.multinomial import MultinomialLogistic
from zbound.models.penalty import InterceptCentering, L2Penalty
from zbound.solvers import METHODS, CountedModel


def _data(seed=0, t=40, d=3, n=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((t, d)), rng.integers(0, n, t)


def test_supports_reads_each_capability_from_the_object():
    X, y = _data()
    soft = MultinomialLogistic(X, y, 3, 1.0)
    lat = latent_objective(X, y, 2, 1.0, 3)
    assert supports(soft.loss, SoftmaxData) and supports(soft.loss, FixedCurvature)
    assert supports(soft.loss, Batchable) and supports(soft, SinglePrecision)
    assert supports(soft, LowRankMajorizer)
    assert supports(lat.loss, LatentLikelihood) and not supports(lat.loss, SoftmaxData)
    assert not supports(soft.loss, LatentLikelihood)

    class NotCallable:
        subset = 3                         # an attribute, not a method: not Batchable

    assert not supports(NotCallable(), Batchable)
    assert not supports(None, Batchable)


def test_counted_model_forwards_what_it_does_not_count():
    X, y = _data(1)
    obj = MultinomialLogistic(X, y, 3, 1.0)
    m = CountedModel(obj)
    assert m.loss is obj.loss and m.penalties == obj.penalties
    x = np.zeros(obj.n_params)
    maj = m.lowrank_majorizer(x, rank=2)
    ref = obj.lowrank_majorizer(x, rank=2)
    assert m.n_bound == 1 and maj.value == ref.value
    m.value_and_grad(x)
    assert m.counts["value_and_grad"] == 1 and m.n_evals == 2
    with pytest.raises(AttributeError):
        getattr(m, "no_such_capability")  # noqa: B009


def test_applies_to_follows_needs_and_requires():
    X, y = _data(2)
    soft = MultinomialLogistic(X, y, 3, 1.0)
    lat = latent_objective(X, y, 2, 1.0, 3)
    assert METHODS["em"].applies_to(lat) and not METHODS["em"].applies_to(soft)
    assert METHODS["sample-newton"].applies_to(soft)
    assert not METHODS["sample-newton"].applies_to(lat)
    assert METHODS["newton-bound"].applies_to(soft) and METHODS["newton-bound"].applies_to(lat)


def test_penalty_structure_through_curvature_operators():
    p = 6
    u = np.array([0, 0, 1, 0, 0, 1.0])
    l2 = L2Penalty(0.5).curvature(p)
    per = L2Penalty(np.arange(1.0, 7.0)).curvature(p)
    cen = InterceptCentering(u, 2.0).curvature(p)
    D, terms = (l2 + cen).diagonal_plus_rank_one()
    np.testing.assert_array_equal(D, np.full(p, 0.5))
    assert len(terms) == 1 and terms[0][0] == 2.0 and np.array_equal(terms[0][1], u)
    D, terms = (3.0 * (per + cen)).diagonal_plus_rank_one()
    np.testing.assert_allclose(D, 3.0 * np.arange(1.0, 7.0))
    assert terms[0][0] == 6.0
    A = (l2 + per + cen).to_dense()
    D, terms = (l2 + per + cen).diagonal_plus_rank_one()
    np.testing.assert_allclose(np.diag(D) + sum(w * np.outer(v, v) for w, v in terms), A)
    assert DenseCurvature(np.eye(p)).diagonal_plus_rank_one() is None
    assert (DiagonalCurvature(np.ones(p)) + DenseCurvature(np.eye(p))) \
        .diagonal_plus_rank_one() is None
    # scaled(c) is c times the penalty
    theta = np.linspace(-1, 1, p)
    for pen in (L2Penalty(0.5), L2Penalty(np.arange(1.0, 7.0)), InterceptCentering(u, 2.0)):
        assert pen.scaled(0.25).value(theta) == pytest.approx(0.25 * pen.value(theta))
