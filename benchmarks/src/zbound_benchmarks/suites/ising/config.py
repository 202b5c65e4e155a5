"""Sizes of the ``ising`` suite: :class:`Config` (the full run), :func:`config` (full or quick,
minutes on 2 cores) and :func:`tiny` (seconds, for tests)."""

from __future__ import annotations

from dataclasses import dataclass, replace

SUITE = "ising"
EXACT_MAX_D = 16       # exact values by enumeration up to this d; above, errors relative to log-det
BOUND_TOL = 1e-7       # relative slack allowed when checking bound >= exact (solver accuracy)
_W = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
_COUPLINGS = ("attractive", "mixed", "repulsive")


@dataclass(frozen=True)
class Config:
    """Grids and repeat counts of every task (the full run).

    ``coupling``: blocks (d, parameter setting, coupling types, coupling strengths w);
    ``greedy10_d``: the d at which greedy k = 10 joins the coupling comparison;
    ``relative_*``: the d > EXACT_MAX_D block compared with log-det; ``temperatures`` and
    ``gain_ks``: Fig. 7/8; ``speed_d``, ``cp_d``: timings; ``cp_iter_d``, ``cp_general_n``,
    ``curve_*``, ``general_curve_*``: convergence of Chambolle-Pock (Fig. 12-15);
    ``scale_d``: the "scale" task (quantum and TRW on complete graphs), ``scale_trw_max_iter``
    its TRW sweep limit, lowered to max(200, ``scale_trw_work`` / d^2) at large d (a sweep
    costs O(d^2)), and ``scale_repeats`` its alternating repeats for d <= 200;
    ``scale_threads_d``: the quantum bound alone on two BLAS threads at larger d; ``metric_*``:
    the "metric" task (Suppl. C, diagonal metric learning by Kelley's method against the plain
    relaxation and greedy features, Gaussian parameters, complete graph).
    """

    draws: int = 10
    hier_max_n: int = 32
    coupling: tuple = ((5, "logdet", _COUPLINGS, _W), (16, "logdet", _COUPLINGS, _W),
                       (5, "trw", _COUPLINGS[:2], (0.25, 0.5, 1.0, 1.5, 2.0)),
                       (16, "trw", _COUPLINGS[:2], (0.25, 0.5, 1.0, 1.5, 2.0)),
                       (10, "logdet", _COUPLINGS, (0.1, 0.3, 0.5)))
    greedy10_d: tuple[int, ...] = (10,)
    relative_d: int = 30
    relative_w: tuple[float, ...] = (0.1, 0.3, 0.5)
    relative_draws: int = 3
    relative_ks: tuple[int, ...] = (3,)
    temperatures: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
    gain_ks: tuple[int, ...] = (1, 2, 3, 5, 10)
    speed_d: tuple[int, ...] = (5, 10)
    cp_d: tuple[int, ...] = (100, 400)
    cp_iter_d: tuple[int, ...] = (10, 20, 30, 50, 75, 100)
    cp_general_n: tuple[int, ...] = (12, 20, 30, 40, 50)
    greedy_k10_repeats: int = 3
    curve_d: int = 50
    curve_draws: int = 5
    general_curve_n: int = 50
    general_curve_iter: int = 5000
    scale_d: tuple[int, ...] = (50, 100, 200, 400, 700, 1000)
    scale_trw_max_iter: int = 2000
    scale_trw_work: float = 2e8
    scale_repeats: int = 3
    scale_threads_d: tuple[int, ...] = (2000, 4000)
    metric_d: tuple[int, ...] = (5, 8)
    metric_eps: tuple[float, ...] = (0.5, 1.0, 2.0)
    metric_draws: int = 5
    metric_max_iter: int = 200


def config(quick: bool) -> Config:
    """The full run (``zbound bench ising``) or the quick one (scale up to d = 200)."""
    if not quick:
        return Config()
    return Config(draws=3, hier_max_n=14,
                  coupling=((5, "logdet", _COUPLINGS, (0.1, 0.3, 0.5)),
                            (16, "logdet", ("attractive", "repulsive"), (0.1, 0.5)),
                            (5, "trw", _COUPLINGS[:2], (0.25, 1.0))),
                  greedy10_d=(), relative_w=(0.1, 0.5), relative_draws=2, relative_ks=(),
                  temperatures=(0.1, 1.0, 10.0), gain_ks=(1, 3), speed_d=(5,), cp_d=(100,),
                  cp_iter_d=(10, 30, 50), cp_general_n=(12, 20), curve_draws=3,
                  general_curve_iter=1000, scale_d=(50, 100, 200), scale_repeats=1,
                  scale_threads_d=(),
                  metric_d=(5,), metric_eps=(0.5, 1.0), metric_draws=2, metric_max_iter=60)


def tiny(**changes) -> Config:
    """A run of seconds for tests: one small block per task. Keyword arguments replace
    fields."""
    return replace(Config(
        draws=2, hier_max_n=7, coupling=((5, "logdet", ("mixed",), (0.2,)),), greedy10_d=(),
        relative_d=20, relative_w=(0.3,), relative_draws=1, relative_ks=(), temperatures=(1.0,),
        gain_ks=(1,), speed_d=(5,), cp_d=(), cp_iter_d=(10,), cp_general_n=(12,),
        greedy_k10_repeats=0, general_curve_n=20, general_curve_iter=200, curve_d=10,
        curve_draws=1, scale_d=(20, 30), scale_trw_max_iter=200, scale_trw_work=1e5,
        scale_repeats=1, scale_threads_d=(40,), metric_d=(4,), metric_eps=(1.0,),
        metric_draws=1, metric_max_iter=15),
        **changes)
