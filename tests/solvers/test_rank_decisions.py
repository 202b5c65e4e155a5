"""Rank deficiency is decided by the stated threshold of
``zbound.utils.linalg.singular_rtol``, never by whether a factorization happened to raise
(AVX-512 and AVX2 kernels of OpenBLAS round an exactly singular matrix's pivots differently).
CI runs these tests under both kernel families.

Each place that used to fall back on ``LinAlgError`` gets a singular input here, and the answer
it must give: the minimum-norm solution where one is promised, a clear error where the quantity
is undefined. Tolerances: tests/_tolerance.py, rule 2 (a solve on the well-conditioned part:
its condition number times the dimension times eps).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _tolerance import solve as solve_tol
from zbound.utils.linalg import (
    cholesky_solve,
    min_norm_solve,
    pd_cholesky,
    psd_solve,
    ridged_cholesky_solve,
    singular_rtol,
)

pytestmark = pytest.mark.numerics


def _low_rank_psd(rng, p, rank, scale, integer=False):
    """A PSD matrix of exact rank ``rank`` < p (integer entries: exactly representable, the
    case where the kernels' rounding decides whether potrf raises) and its factor U."""
    if integer:
        U = rng.integers(-3, 4, size=(p, rank)).astype(np.float64)
    else:
        U = rng.normal(size=(p, rank))
    U *= np.sqrt(scale)
    return U @ U.T, U


@settings(max_examples=2000, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(2, 30), data=st.data(),
       scale=st.sampled_from([1e-8, 1.0, 1e8]), integer=st.booleans())
def test_singular_matrices_are_detected_and_solved_with_minimum_norm(seed, p, data, scale,
                                                                     integer):
    rng = np.random.default_rng(seed)
    rank = data.draw(st.integers(1, p - 1))
    A, U = _low_rank_psd(rng, p, rank, scale, integer)
    if not np.any(A):
        return
    assert cholesky_solve(A, np.ones(p)) is None
    assert pd_cholesky(A) is None
    rhs = A @ rng.normal(size=p)                                  # in the range of A
    x = psd_solve(A, rhs)
    # the minimum-norm solution lies in the range of A: orthogonal to its null space
    W, sU, _ = np.linalg.svd(U, full_matrices=True)
    r = int(np.sum(sU > 1e-8 * sU.max()))                        # integer U may lose rank
    Q = W[:, r:]
    cond = (sU[0] / sU[r - 1]) ** 2
    tol = solve_tol(cond, p)
    assert np.linalg.norm(Q.T @ x) <= tol * np.linalg.norm(x)
    np.testing.assert_allclose(A @ x, rhs, atol=tol * np.linalg.norm(rhs))
    np.testing.assert_allclose(x, np.linalg.pinv(A, rtol=singular_rtol(p), hermitian=True)
                               @ rhs, atol=tol * np.linalg.norm(x))


@settings(max_examples=1000, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(1, 30),
       scale=st.sampled_from([1e-200, 1e-8, 1.0, 1e8, 1e200]))
def test_well_conditioned_matrices_take_cholesky(seed, p, scale):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(p, p))
    A = scale * (B @ B.T + p * np.eye(p))
    rhs = rng.normal(size=p)
    x = cholesky_solve(A, rhs)
    assert x is not None
    cond = np.linalg.cond(A)
    np.testing.assert_allclose(A @ x, rhs, atol=solve_tol(cond, p) * np.linalg.norm(rhs))
    assert np.array_equal(psd_solve(A, rhs), x)


def test_threshold_is_relative_to_the_scale():
    """A matrix with one eigenvalue above and one below the threshold, at any scale. (Not
    diagonal: the test is made on the unit-diagonal form, where a diagonal matrix is the
    identity.)"""
    p = 4
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((p, p)))[0]
    for big in (1e-100, 1.0, 1e100):
        above = big * (Q * np.array([1.0, 1.0, 1.0, 100 * singular_rtol(p)])) @ Q.T
        below = big * (Q * np.array([1.0, 1.0, 1.0, 0.01 * singular_rtol(p)])) @ Q.T
        assert cholesky_solve(above, np.ones(p)) is not None
        assert cholesky_solve(below, np.ones(p)) is None
        x = psd_solve(below, np.ones(p))
        want = Q[:, :3] @ (Q[:, :3].T @ np.ones(p)) / big
        np.testing.assert_allclose(x, want, rtol=solve_tol(1.0, p), atol=1e-12 / big)


def test_units_of_the_columns_do_not_make_a_matrix_singular():
    """Rescaling columns and rows together (features in other units) changes nothing: a
    diagonal matrix spanning 1e-6 to 1e12 is solved exactly, and so is an SPD matrix scaled
    that way, where the plain condition number (~1e18) is beyond float64's."""
    d = np.array([1e12, 1.0, 1e-6, 3.0])
    np.testing.assert_allclose(cholesky_solve(np.diag(d), d), np.ones(4), rtol=1e-14)
    rng = np.random.default_rng(1)
    M = rng.standard_normal((4, 4))
    A = M @ M.T + np.eye(4)
    s = np.array([1e6, 1.0, 1e-3, 1.0])
    As = A * s[:, None] * s[None, :]
    b = s * np.array([1.0, -2.0, 3.0, 0.5])
    want = np.linalg.solve(A, b / s) / s        # the well-conditioned system, unscaled after
    for solve in (cholesky_solve, ridged_cholesky_solve):
        got = solve(As, b)
        assert got is not None
        np.testing.assert_allclose(got * s, want * s, rtol=1e-9)


def test_ridged_cholesky_adds_the_smallest_ridge_that_passes():
    u = np.array([1.0, 2.0, -1.0, 0.5])
    A = np.outer(u, u)
    g = A @ np.ones(4)
    x = ridged_cholesky_solve(A, g)
    assert x is not None
    np.testing.assert_allclose(A @ x, g, rtol=1e-6)     # a ridge of 1e-10 * 4 changes x by that


def test_min_norm_solve_drops_the_null_space():
    A = np.diag([2.0, 0.0, 1e-300])
    np.testing.assert_allclose(min_norm_solve(A, np.array([4.0, 0.0, 1e-300])), [2.0, 0, 0])


def test_constraints_step_qp_on_a_singular_curvature():
    """box_qp on a flat direction with a linear term stops at the box; with no linear term
    along the flat direction it takes the minimum-norm step."""
    from zbound.constraints import box_qp

    P = np.array([[1.0, 1.0], [1.0, 1.0]])          # singular: flat along (1, -1)
    d = box_qp(P, np.array([-1.0, -1.0]), np.full(2, -5.0), np.full(2, 5.0))
    np.testing.assert_allclose(P @ d, [1.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(d, [0.5, 0.5], atol=1e-9)
    d = box_qp(P, np.array([-1.0, 0.0]), np.full(2, -5.0), np.full(2, 5.0))
    assert np.all(d >= -5.0 - 1e-12) and np.all(d <= 5.0 + 1e-12)
    q = lambda v: 0.5 * v @ P @ v + v @ np.array([-1.0, 0.0])
    assert q(d) <= min(q(np.array([a, b])) for a in np.linspace(-5, 5, 41)
                       for b in np.linspace(-5, 5, 41)) + 1e-9


def test_stochastic_dense_build_on_a_singular_curvature():
    """The dense step of the stochastic bound solvers: a feature column of zeros and no penalty
    make the bound curvature singular; the condition test sends it to the minimum-norm inverse
    (the step has no component along the flat direction), a ridge sends it to Cholesky."""
    from zbound.models.loss import SoftmaxLoss
    from zbound.models.objective import Objective
    from zbound.models.penalty import L2Penalty
    from zbound.solvers.stochastic import SPFB

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[:, 1] = 0.0
    y = (X[:, 0] > 0).astype(int)
    loss = SoftmaxLoss(X, y, 2, reference_class=True)
    x0 = np.zeros(3)
    kind, inverse = SPFB().build(Objective(loss), x0)
    assert kind == "pinv"
    A = Objective(loss).majorizer(x0).curvature.to_dense()
    np.testing.assert_allclose(inverse, np.linalg.pinv(A, rtol=singular_rtol(3),
                                                       hermitian=True), atol=1e-12)
    np.testing.assert_allclose(inverse[:, 1], 0.0, atol=1e-12)
    assert SPFB().build(Objective(loss, L2Penalty(1e-3)), x0)[0] == "chol"


def test_moe_linear_expert_with_no_responsibility_gets_minimum_norm_coefficients():
    from zbound.moe.em import MStep
    from zbound.moe.model import MoEProblem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[:, 2] = X[:, 1]                                        # collinear columns
    y = X @ np.array([1.0, 0.5, 0.5]) + 0.01 * rng.normal(size=40)
    pb = MoEProblem(X, y, 2, expert="linear", reg=0.0, fit_intercept=False)
    P = pb.unpack(np.zeros(pb.n_params))
    R = np.zeros((40, 2))
    R[:, 0] = 1.0                                            # expert 1 gets nothing
    MStep(pb)._linear_experts(P, R)
    assert np.all(np.isfinite(P.coef))
    np.testing.assert_allclose(P.coef[1], 0.0, atol=1e-12)   # A = 0, b = 0: minimum norm
    np.testing.assert_allclose(P.coef[0][1], P.coef[0][2], rtol=1e-6)   # equal split
    np.testing.assert_allclose(X @ P.coef[0], y, atol=0.05)


def test_missing_information_of_a_singular_complete_information_is_an_error():
    from zbound.moe.diagnostics import _pencil

    with pytest.raises(ValueError, match="singular"):
        _pencil(np.diag([1.0, 0.0]), np.eye(2))
    M = _pencil(np.diag([2.0, 4.0]), np.diag([1.0, 1.0]))
    np.testing.assert_allclose(M.eigenvalues, [0.25, 0.5])


def test_lowrank_woodbury_refuses_an_overflowing_diagonal():
    from zbound.bounds.lowrank import LowRankCurvature

    V = np.array([[1.0, 0.0, 0.0]])
    C = LowRankCurvature(V, np.array([[1.0]]), np.array([1e-320, 1.0, 1.0]))
    assert C._woodbury(np.ones(3)) is None
