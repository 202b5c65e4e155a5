"""Size, data sets, methods and the step-size grid of a ``stochastic`` run."""

from __future__ import annotations

from dataclasses import dataclass

SUITE = "stochastic"
#: Relative gaps to the optimum the table reports (the done-when uses the first).
GAPS = (1e-2, 1e-3)
#: The one step-size grid every method is tuned on (lr = eta_0 for the bound methods).
GRID = (1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
QUICK_GRID = (1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
#: Step schedules every method is tuned over: "constant" (eta_t = eta_0) and "inverse-E"
#: (eta_t = eta_0 / (1 + (t - 1) / (E batches per epoch)): halved after E epochs).
SCHEDULES = ("constant", "inverse-1", "inverse-5")
QUICK_SCHEDULES = ("inverse-1",)
#: The per-sample L2 strengths of the lambda grid (the paper does not state its lambda; it
#: chose hyperparameters "to achieve the best test performance").
LAMS = (1e-4, 1e-3, 1e-2)
#: Peers: record name -> registered method (torch.optim when installed) or scikit-learn.
PEERS = ("sgd", "momentum", "adam", "sklearn-sgd")


@dataclass
class Config:
    """``datasets``: names (``adult``, ``kmnist``, ``digits``); ``lam``: the paper's
    per-sample L2 lambda (J / T = mean log-loss + lambda/2 ||theta||^2); ``ranks``: LSPFB
    ranks; ``epochs``: epoch budget of every run; ``grid``: step sizes; ``repeats``: timed
    repeats of each tuned winner (median); ``curvature_rows`` and ``refresh``: how LSPFB
    (and SPFB above ``dense_max`` parameters) rebuild the bound, see ``docs/stochastic.md``;
    ``sm_max_params``: Sherman-Morrison SBM only where p is at most this (O(p^2) per term);
    ``lams``: data set -> lambdas run (default: ``lam`` everywhere); ``schedules``: the step
    schedules tuned over (see :data:`SCHEDULES`); ``epochs_by_data``: per data set budgets
    (default ``epochs``); ``gram_updates``: bound builds whose Gram factor SPFB averages above
    ``dense_max`` parameters (one epoch of batches: the whole design)."""

    datasets: tuple[str, ...] = ("adult", "kmnist", "digits")
    lam: float = 1e-4
    lams: dict | None = None
    schedules: tuple[str, ...] = SCHEDULES
    epochs_by_data: dict | None = None
    batch_size: int = 1000
    ranks: tuple[int, ...] = (1, 5, 10, 100)
    epochs: int = 40
    grid: tuple[float, ...] = GRID
    repeats: int = 3
    curvature_rows: int = 100
    refresh: int = 1
    lowrank_refresh: int = 4
    sm_max_params: int = 300
    max_rows: int | None = None
    seed: int = 0
    gram_updates: int = 8

    def lams_of(self, name: str) -> tuple[float, ...]:
        return tuple((self.lams or {}).get(name, (self.lam,)))

    def epochs_of(self, name: str) -> int:
        return int((self.epochs_by_data or {}).get(name, self.epochs))


def config(quick: bool) -> Config:
    if quick:
        # lambda = 1e-3, the lambda of best test loss on Adult and KMNIST (the grid 1e-4, 1e-3,
        # 1e-2 runs in the full suite); one schedule (eta_0 / epoch) besides SBM's constant
        return Config(ranks=(1, 10), epochs=15, grid=QUICK_GRID, repeats=3,
                      schedules=QUICK_SCHEDULES, lam=1e-3,
                      epochs_by_data={"adult": 15, "kmnist": 40, "digits": 30})
    return Config(epochs=50, lams={d: LAMS for d in ("adult", "kmnist", "digits")},
                  epochs_by_data={"adult": 30})


def tiny() -> Config:
    """Seconds-long, for tests: digits only, two ranks, a few epochs."""
    return Config(datasets=("digits",), ranks=(1, 3), epochs=3, grid=(0.1, 1.0), repeats=1,
                  batch_size=300, curvature_rows=20, max_rows=600,
                  schedules=("constant", "inverse-1"))
