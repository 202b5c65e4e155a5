"""Issue 14: certified values at low temperature / strong couplings, tolerances, overflow,
solver failures, non-monotone hierarchies. Exact values by enumeration."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from zbound.ising.exact import eliminate_exact, enumerate_exact, log_partition
from zbound.ising.features import FeatureSet, all_features, default_features
from zbound.ising.hierarchy import degree_hierarchy, greedy_features
from zbound.ising.logdet import logdet_bound
from zbound.ising.model import IsingModel, relative_gap
from zbound.ising.quantum import quantum_bound
from zbound.ising.trw import trw_bound

SLACK = 1e-9


def _sym(rng, d, scale, kind="gaussian", mask=None):
    if kind == "gaussian":
        J = scale * rng.standard_normal((d, d))
    elif kind == "attractive":
        J = scale * rng.uniform(0, 1, (d, d))
    elif kind == "repulsive":
        J = -scale * rng.uniform(0, 1, (d, d))
    else:
        raise ValueError(kind)
    J = np.triu(J, 1)
    if mask is not None:
        J = J * np.triu(mask, 1)
    return J + J.T


def _tree_mask(rng, d):
    mask = np.zeros((d, d))
    for v in range(1, d):
        u = int(rng.integers(v))
        mask[u, v] = mask[v, u] = 1
    return mask


def _grid_mask(rows, cols):
    d = rows * cols
    mask = np.zeros((d, d))
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            if c + 1 < cols:
                mask[v, v + 1] = mask[v + 1, v] = 1
            if r + 1 < rows:
                mask[v, v + cols] = mask[v + cols, v] = 1
    return mask


def _trw(model, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = trw_bound(model, **kw)
    warned = any(issubclass(x.category, ConvergenceWarning) and "did not converge" in str(x.message)
                 for x in w)
    return r, warned


def _below(value, exact):
    return value < exact - SLACK * max(1.0, abs(exact))


# ------------------------------------------------------------------------------ item 1: TRW

def test_trw_issue_example_complete_graph_scale_5():
    rng = np.random.default_rng(0)
    for _ in range(5):
        m = IsingModel(5 * rng.standard_normal(4), _sym(rng, 4, 5.0), 0.05)
        exact = enumerate_exact(m, moments=False).log_partition
        for rho in ("uniform", "optimize"):
            r, warned = _trw(m, rho=rho, max_iter=3000)
            assert not _below(r.bound, exact), (rho, r.bound, exact)
            assert r.certified and np.isfinite(r.bound)
            assert r.converged or warned


def test_trw_issue_example_repulsive_tree_is_exact():
    rng = np.random.default_rng(1)
    for _ in range(5):
        m = IsingModel(np.zeros(5), _sym(rng, 5, 4.0, "repulsive", _tree_mask(rng, 5)), 0.05)
        exact = enumerate_exact(m, moments=False).log_partition
        r, warned = _trw(m)
        assert not _below(r.bound, exact)
        assert r.converged and not warned
        assert r.bound == pytest.approx(exact, abs=1e-6 * max(1, abs(exact)))


def test_trw_issue_example_tree_d3_scale_4_is_exact_not_above():
    rng = np.random.default_rng(2)
    for _ in range(10):
        m = IsingModel(4 * rng.standard_normal(3), _sym(rng, 3, 4.0, mask=_tree_mask(rng, 3)),
                       0.05)
        exact = enumerate_exact(m, moments=False).log_partition
        r, _ = _trw(m)
        assert r.converged
        assert abs(r.bound - exact) <= 1e-6 * max(1, abs(exact))


def test_trw_issue_example_grid_d12():
    rng = np.random.default_rng(3)
    mask = _grid_mask(3, 4)
    for _ in range(2):
        m = IsingModel(5 * rng.standard_normal(12), _sym(rng, 12, 5.0, mask=mask), 0.05)
        exact = enumerate_exact(m, moments=False).log_partition
        r, warned = _trw(m, max_iter=2000)
        assert not _below(r.bound, exact)
        assert r.converged or warned


def test_trw_unconverged_value_is_still_certified_and_flagged():
    rng = np.random.default_rng(4)
    m = IsingModel(3 * rng.standard_normal(6), _sym(rng, 6, 3.0), 0.1)
    exact = enumerate_exact(m, moments=False).log_partition
    r, warned = _trw(m, rho="uniform", max_iter=3)
    assert not r.converged and warned and "did not converge" in r.message
    assert not _below(r.bound, exact)


# ------------------------------------------------------------------- item 2: tolerances

@pytest.mark.parametrize("scale", [1.0, 5.0])
def test_all_monomials_meet_tol_at_high_temperature(scale):
    rng = np.random.default_rng(5)
    for _ in range(4):
        m = IsingModel(scale * rng.standard_normal(3), _sym(rng, 3, scale), 20.0)
        exact = enumerate_exact(m, moments=False).log_partition
        r = quantum_bound(m, all_features(3), tol=1e-6)
        assert r.converged
        assert exact - SLACK <= r.bound <= exact + 1e-6 * max(1.0, abs(exact))


def test_relative_gap_definition():
    assert relative_gap(2.0, 1.0, 20.0) == pytest.approx(0.5)      # relative when |value| >= 1
    assert relative_gap(1e-3, 0.0, 20.0) == pytest.approx(1e-3)   # absolute below 1
    assert relative_gap(1e-3, 0.0, 0.01) == pytest.approx(0.1)    # guard min(eps, 1)


# ---------------------------------------------------------------------- item 3: overflow

def _overflow_model():
    J = np.full((4, 4), 1e10)
    np.fill_diagonal(J, 0)
    return IsingModel(np.zeros(4), J, 1e-299)


@pytest.mark.parametrize("fn", [log_partition, enumerate_exact, eliminate_exact, trw_bound,
                                quantum_bound])
def test_overflow_is_a_clear_value_error(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="overflow float64"):
            fn(_overflow_model())


# ---------------------------------------------------------------- item 4: log-det failures

def test_logdet_huge_fields_and_couplings_do_not_escape():
    rng = np.random.default_rng(6)
    h, J = rng.standard_normal(4), _sym(rng, 4, 1.0)
    for m in (IsingModel(1e300 * h, J, 1.0), IsingModel(h, 1e307 * J / np.abs(J).max(), 1.0)):
        r = logdet_bound(m)
        if r.bound is None:
            assert not r.converged and r.message.startswith("failed")
        else:
            assert np.isfinite(r.bound) and r.converged


def test_logdet_huge_fields_bound_the_maximum():
    rng = np.random.default_rng(6)
    h = 1e300 * rng.standard_normal(4)
    m = IsingModel(h, np.zeros((4, 4)), 1.0)
    r = logdet_bound(m)
    assert r.bound is not None and r.bound >= np.abs(h).sum() * (1 - 1e-6)


def test_logdet_solver_panic_becomes_a_status(monkeypatch):
    cp = pytest.importorskip("cvxpy", reason="logdet_bound needs zbound[cvxpy]")

    class PanicException(BaseException):
        pass

    def boom(self, *a, **k):
        raise PanicException("called `Option::unwrap()` on a `None` value")

    monkeypatch.setattr(cp.Problem, "solve", boom)
    m = IsingModel(np.ones(3), np.zeros((3, 3)), 1.0)
    r = logdet_bound(m)
    assert r.bound is None and not r.converged
    assert "PanicException" in r.message and r.message.startswith("failed")


def test_logdet_keyboard_interrupt_is_not_swallowed(monkeypatch):
    cp = pytest.importorskip("cvxpy", reason="logdet_bound needs zbound[cvxpy]")

    def stop(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cp.Problem, "solve", stop)
    with pytest.raises(KeyboardInterrupt):
        logdet_bound(IsingModel(np.ones(3), np.zeros((3, 3)), 1.0))


# ------------------------------------------------------------- item 5: non-monotone a_eps

def test_adding_the_constant_feature_raises_a_eps_when_h_is_zero():
    """The measured non-monotonicity (docs/quantum.md, section 5): with h = 0 the optimum of
    (1, x) is blockdiag(1, S) and only n changes in -(eps/n) tr S log S."""
    rng = np.random.default_rng(7)
    m = IsingModel(np.zeros(5), _sym(rng, 5, 1.0), 1.0)
    x_only = quantum_bound(m, FeatureSet(5, [1 << i for i in range(5)]), tol=1e-9)
    one_x = quantum_bound(m, default_features(5), tol=1e-9)
    assert one_x.bound > x_only.bound + 1e-4


def test_degree_hierarchy_never_increases():
    rng = np.random.default_rng(8)
    m = IsingModel(np.zeros(6), _sym(rng, 6, 1.0, "attractive"), 5.0)
    raw = degree_hierarchy(m, max_features=16, best_so_far=False)
    best = degree_hierarchy(m, max_features=16)
    rb = [r.bound for _, r in best]
    assert all(b <= a for a, b in zip(rb, rb[1:]))
    assert rb[-1] == pytest.approx(min(r.bound for _, r in raw))
    for (n, r), (_, q) in zip(best, raw):
        assert r.features.n <= n and r.bound <= q.bound


def test_greedy_never_increases_with_k():
    rng = np.random.default_rng(9)
    m = IsingModel(0.1 * rng.standard_normal(5), _sym(rng, 5, 1.0, "attractive"), 5.0)
    bounds = [greedy_features(m, k).bound for k in range(4)]
    assert all(b <= a for a, b in zip(bounds, bounds[1:]))
    g = greedy_features(m, 3)
    assert g.best_features is not None and g.result.features == g.best_features
    assert g.bound == min([g.history[i]["tight_bound"] for i in range(3)]
                          + [quantum_bound(m).bound + 1e-6 * abs(g.bound)])
    assert g.bound >= enumerate_exact(m, moments=False).log_partition - SLACK


# --------------------------------------------------------------------- item 6: threads

def test_newton_polish_runs_single_threaded(monkeypatch):
    from threadpoolctl import threadpool_info

    from zbound.ising.quantum import newton

    seen = []
    real = newton.DualNewton.run

    def spy(self, *a, **k):
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return real(self, *a, **k)

    monkeypatch.setattr(newton.DualNewton, "run", spy)
    rng = np.random.default_rng(10)
    m = IsingModel(rng.standard_normal(5), _sym(rng, 5, 1.0), 1.0)
    quantum_bound(m, FeatureSet(5, list(default_features(5).masks) + [3, 6, 12]))
    assert seen and all(t == 1 for t in seen)


# ------------------------------------------------------------- property tests (certified)

_regime = st.tuples(
    st.integers(3, 8),                                             # d
    st.sampled_from(["complete", "tree", "erdos", "field"]),
    st.sampled_from(["gaussian", "attractive", "repulsive"]),
    st.sampled_from([0.3, 1.0, 2.0, 5.0]),                        # scale
    st.sampled_from([0.05, 0.1, 0.5, 1.0, 5.0, 20.0]),            # eps
    st.integers(0, 2**31),
)


def _draw(d, graph, kind, scale, eps, seed):
    rng = np.random.default_rng(seed)
    if graph == "complete":
        mask = None
    elif graph == "tree":
        mask = _tree_mask(rng, d)
    elif graph == "erdos":
        mask = (rng.uniform(size=(d, d)) < 0.5).astype(float)
        mask = np.triu(mask, 1) + np.triu(mask, 1).T
    else:
        mask = np.zeros((d, d))
    h = scale * rng.standard_normal(d)
    return IsingModel(h, _sym(rng, d, scale, kind, mask), eps)


STATS = {"trw": 0, "trw_converged": 0, "quantum": 0}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regime)
def test_property_trw_is_certified(regime):
    m = _draw(*regime)
    exact = enumerate_exact(m, moments=False).log_partition
    rho = "uniform" if regime[1] == "complete" else "optimize"
    r, warned = _trw(m, rho=rho, max_iter=400, rho_steps=3)
    STATS["trw"] += 1
    STATS["trw_converged"] += int(r.converged)
    assert not _below(r.bound, exact), (r.bound, exact, r.message)
    assert r.converged or (warned and "did not converge" in r.message)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regime)
def test_property_quantum_is_certified(regime):
    m = _draw(*regime)
    exact = enumerate_exact(m, moments=False).log_partition
    r = quantum_bound(m, max_iter=2000)
    STATS["quantum"] += 1
    assert not _below(r.bound, exact)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regime, st.sampled_from(["uniform-or-optimize", "optimize"]))
def test_property_trw_is_certified_many(regime, mode):
    m = _draw(*regime)
    exact = enumerate_exact(m, moments=False).log_partition
    rho = "uniform" if (regime[1] == "complete" and mode != "optimize") else "optimize"
    r, warned = _trw(m, rho=rho, max_iter=1000, rho_steps=5)
    assert not _below(r.bound, exact), (r.bound, exact, r.message)
    assert r.converged or (warned and "did not converge" in r.message)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(3, 6), st.sampled_from([0.3, 1.0, 5.0]), st.sampled_from([0.1, 1.0, 5.0, 20.0]),
       st.integers(0, 2**31), st.sampled_from(["attractive", "gaussian", "repulsive"]))
def test_property_hierarchy_and_greedy_never_increase(d, scale, eps, seed, kind):
    rng = np.random.default_rng(seed)
    h = np.zeros(d) if seed % 2 else scale * rng.standard_normal(d)
    m = IsingModel(h, _sym(rng, d, scale, kind), eps)
    exact = enumerate_exact(m, moments=False).log_partition
    rb = [r.bound for _, r in degree_hierarchy(m, max_features=d + 6, max_iter=3000)]
    assert all(b <= a for a, b in zip(rb, rb[1:]))
    assert not _below(rb[-1], exact)
    gb = [greedy_features(m, k, max_iter_select=300, max_iter_final=3000).bound for k in (0, 1, 2)]
    assert all(b <= a for a, b in zip(gb, gb[1:]))
    assert not _below(gb[-1], exact)


@pytest.mark.slow
@pytest.mark.parametrize("setting, coupling, w, eps", [
    ("gaussian", "mixed", 1.0, 0.02),
    ("gaussian", "mixed", 1.0, 20.0),
    ("logdet", "repulsive", 2.0, 0.02),
    ("logdet", "mixed", 5.0, 0.2),
])
def test_diagonal_newton_path_agrees_with_chambolle_pock_above_n_128(setting, coupling, w, eps):
    """(1, x) with n = 131 > 128 takes the diagonal-dual Newton path; plain Chambolle-Pock
    (polish=False) on the same model must certify the same value, at low and high temperature and
    strong couplings, and each method's dual bound must sit above the other's primal value."""
    from zbound.ising.generators import random_model

    model = random_model(d=130, setting=setting, graph="complete", coupling=coupling, w=w,
                         epsilon=eps, random_state=7)
    newton = quantum_bound(model, tol=1e-7)
    cp = quantum_bound(model, tol=1e-7, polish=False, max_iter=20000)
    assert newton.converged and cp.converged
    assert newton.newton_steps > 0
    assert newton.gap <= 1e-7 and cp.gap <= 1e-7
    scale = max(1.0, abs(cp.bound))
    assert abs(newton.bound - cp.bound) <= 2e-7 * scale
    assert newton.bound >= cp.primal - 1e-9 * scale
    assert cp.bound >= newton.primal - 1e-9 * scale
