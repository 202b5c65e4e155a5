"""Sizes of the ``ising`` suite: the quick run (minutes on 2 cores) and the full run."""

from __future__ import annotations

from typing import Any

EXACT_MAX_D = 16       # exact values by enumeration up to this d; above, errors relative to log-det
BOUND_TOL = 1e-7       # relative slack allowed when checking bound >= exact (solver accuracy)


def suite_config(quick: bool) -> dict[str, Any]:
    """Grids and repeat counts of every task.

    ``coupling``: blocks (d, parameter setting, coupling types, coupling strengths w);
    ``greedy10_d``: the d at which greedy k = 10 joins the coupling comparison;
    ``relative_*``: the d > EXACT_MAX_D block compared with log-det; ``temperatures`` and
    ``gain_ks``: Fig. 7/8; ``speed_d``, ``cp_d``: timings; ``cp_iter_d``, ``cp_general_n``,
    ``curve_*``, ``general_curve_*``: convergence of Chambolle-Pock (Fig. 12-15);
    ``scale_d``: the "scale" task (quantum and TRW on complete graphs up to d = 1000 in full mode,
    up to d = 200 in quick mode), ``scale_trw_max_iter`` its TRW sweep limit, lowered to
    max(200, ``scale_trw_work`` / d^2) at large d (a sweep costs O(d^2)), and
    ``scale_repeats`` its alternating repeats for d <= 200; ``metric_*``: the "metric" task
    (Suppl. C, diagonal metric learning by Kelley's method against the plain relaxation and
    greedy features, Gaussian parameters, complete graph).
    """
    if quick:
        return {
            "draws": 3,
            "hier_max_n": 14,
            "coupling": [
                (5, "logdet", ("attractive", "mixed", "repulsive"), (0.1, 0.3, 0.5)),
                (16, "logdet", ("attractive", "repulsive"), (0.1, 0.5)),
                (5, "trw", ("attractive", "mixed"), (0.25, 1.0)),
            ],
            "greedy10_d": (),
            "relative_d": 30,
            "relative_w": (0.1, 0.5),
            "relative_draws": 2,
            "relative_ks": (),
            "temperatures": (0.1, 1.0, 10.0),
            "gain_ks": (1, 3),
            "speed_d": (5,),
            "cp_d": (100,),
            "cp_iter_d": (10, 30, 50),
            "cp_general_n": (12, 20),
            "greedy_k10_repeats": 3,
            "curve_d": 50,
            "curve_draws": 3,
            "general_curve_n": 50,
            "general_curve_iter": 1000,
            "scale_d": (50, 100, 200),
            "scale_trw_max_iter": 2000,
            "scale_trw_work": 2e8,
            "scale_repeats": 1,
            "metric_d": (5,),
            "metric_eps": (0.5, 1.0),
            "metric_draws": 2,
            "metric_max_iter": 60,
        }
    return {
        "draws": 10,
        "hier_max_n": 32,
        "coupling": [
            (5, "logdet", ("attractive", "mixed", "repulsive"), (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)),
            (16, "logdet", ("attractive", "mixed", "repulsive"), (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)),
            (5, "trw", ("attractive", "mixed"), (0.25, 0.5, 1.0, 1.5, 2.0)),
            (16, "trw", ("attractive", "mixed"), (0.25, 0.5, 1.0, 1.5, 2.0)),
            (10, "logdet", ("attractive", "mixed", "repulsive"), (0.1, 0.3, 0.5)),
        ],
        "greedy10_d": (10,),
        "relative_d": 30,
        "relative_w": (0.1, 0.3, 0.5),
        "relative_draws": 3,
        "relative_ks": (3,),
        "temperatures": (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
        "gain_ks": (1, 2, 3, 5, 10),
        "speed_d": (5, 10),
        "cp_d": (100, 400),
        "cp_iter_d": (10, 20, 30, 50, 75, 100),
        "cp_general_n": (12, 20, 30, 40, 50),
        "greedy_k10_repeats": 3,
        "curve_d": 50,
        "curve_draws": 5,
        "general_curve_n": 50,
        "general_curve_iter": 5000,
        "scale_d": (50, 100, 200, 400, 700, 1000),
        "scale_trw_max_iter": 2000,
        "scale_trw_work": 2e8,
        "scale_repeats": 3,
        "metric_d": (5, 8),
        "metric_eps": (0.5, 1.0, 2.0),
        "metric_draws": 5,
        "metric_max_iter": 200,
    }
