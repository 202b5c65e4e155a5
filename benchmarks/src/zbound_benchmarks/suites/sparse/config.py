"""What a ``sparse`` run measures: data sets, strengths, the target and the claim."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

SUITE = "sparse"
#: the claim: the library's default at most this multiple of the fastest peer's time
MAX_RATIO = 0.5
#: the target: the best objective reached, plus this fraction of it
REL_TARGET = 1e-6


@dataclass
class Config:
    """``binary``: data sets of the two-class cells ("tfidf" the synthetic 20 000 x 30 000
    tf-idf shape); ``multinomial``: those of the multinomial cells (saga the only peer with
    the same multinomial objective); ``fractions``: the nonzero fractions the strengths aim
    at; ``repeats``: timed repeats per method; ``tfidf``: (rows, columns, stored entries per
    row) of the synthetic set; ``min_time``: fits shorter than this are timed in
    back-to-back runs; ``saga_max_iter``: saga's epoch limit; ``budget_s``: a method's
    tolerance search stops after a fit longer than this (the method then does not reach
    the target). A strength whose share of nonzeros no L1 fit can have (over n per class)
    is skipped and named."""

    binary: tuple = ("ssl-text", "adult", "tfidf")
    multinomial: tuple = ("srbct", "kmnist")
    fractions: tuple = (0.01, 0.1, 0.3)
    repeats: int = 5
    tfidf: tuple = (20_000, 30_000, 60)
    memory: bool = True
    min_time: float = 0.05
    saga_max_iter: int = 1000
    #: a method's tolerance search stops after a fit longer than this
    budget_s: float = 60.0


def config(quick: bool) -> Config:
    if not quick:
        return Config()
    return Config(binary=("ssl-text", "tfidf"), multinomial=("srbct",), fractions=(0.01,),
                  repeats=3, budget_s=5.0, saga_max_iter=200)


def tiny(**changes) -> Config:
    """The smallest run (tests)."""
    base = Config(binary=("tfidf",), multinomial=(), fractions=(0.05,), repeats=1,
                  tfidf=(400, 2000, 20), memory=False, min_time=0.0, saga_max_iter=200)
    return dataclasses.replace(base, **changes)
