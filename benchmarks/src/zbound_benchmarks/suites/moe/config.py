"""Size of a ``moe`` run: :class:`Config`, :func:`config` (quick / full), :func:`tiny` (tests)."""

from __future__ import annotations

from dataclasses import dataclass, field

SUITE = "moe"
#: one step-size grid for every first-order method (GD, Gradient EM's two steps, Adam, and the
#: paper's inner-GD M-step): 10^-3 .. 10^1.5 in half decades (Adam's best on KMNIST was
#: 10^-2.5, the lower edge of the earlier grid)
LR_GRID = tuple(10.0 ** (e / 2) for e in range(-6, 4))


@dataclass
class Config:
    """Sizes of the two tasks. ``synthetic``: Section 6's SMoLinE (and SMoLogE) setting;
    ``inverted``: Tables 1-2 on KMNIST (8000 / 2000) and scikit-learn's digits."""

    # synthetic (Section 6)
    sym_models: tuple[str, ...] = ("SMoLinE", "SMoLogE")
    sym_n: int = 1000
    sym_d: int = 10
    sym_norm: float = 4.0
    sym_init_noise: float = 0.5          # start = truth + N(0, this^2 I) per coordinate
    sym_iters: int = 50
    sym_instances: int = 50
    # inverted images (Tables 1-2)
    datasets: tuple[str, ...] = ("digits", "kmnist")
    instances: dict[str, int] = field(default_factory=lambda: {"digits": 25, "kmnist": 25})
    iters: int = 100
    reg: float = 1e-3                     # L2 on the mean objective, the same for every method
    inner_steps: int = 10                 # the paper's inner-GD M-step
    #: cap on the library M-step solver's iterations per sub-problem and EM iteration (KMNIST:
    #: one Newton-bound step, a generalized EM step; digits: exact M-steps)
    mstep_max_iter: dict[str, int] = field(default_factory=lambda: {"digits": 100,
                                                                    "kmnist": 1})
    #: options of the M-step solver (KMNIST: at most 6 Hessian products per Newton direction)
    mstep_options: dict[str, dict] = field(default_factory=lambda: {
        "kmnist": {"cg_maxiter": 6}})
    lr_grid: tuple[float, ...] = LR_GRID
    #: iterations of the step-size tuning runs (on separate tuning instances)
    tune_iters: dict[str, int] = field(default_factory=lambda: {"digits": 100, "kmnist": 100})
    #: tuning instances per data set; a step size is scored by its mean final objective
    #: over them (one instance let Gradient EM pick steps that diverge on others)
    tune_instances: dict[str, int] = field(default_factory=lambda: {"digits": 3, "kmnist": 1})
    #: "grid": every grid value; "walk": from a start, step along the grid while the score
    #: improves (the same choice when the score is unimodal in log step, ~3 runs instead of 7)
    tune_search: str = "grid"
    #: iterations after which the test accuracy is tabulated (the paper reports the last)
    checkpoints: tuple[int, ...] = (10, 25, 50, 100)
    blas_threads: int | None = 1


def config(quick: bool) -> Config:
    if quick:
        return Config(sym_instances=10, instances={"digits": 3, "kmnist": 1},
                      tune_iters={"digits": 100, "kmnist": 30},
                      tune_instances={"digits": 3, "kmnist": 1}, tune_search="walk")
    return Config()


def tiny(**changes) -> Config:
    """Seconds: SMoLinE only, 2 instances, digits only with 1 instance and few iterations."""
    base = dict(sym_models=("SMoLinE",), sym_n=300, sym_instances=2, sym_iters=15,
                datasets=("digits",), instances={"digits": 1}, iters=8,
                tune_iters={"digits": 8}, tune_instances={"digits": 1}, lr_grid=(0.1, 1.0),
                checkpoints=(2, 8))
    base.update(changes)
    return Config(**base)
