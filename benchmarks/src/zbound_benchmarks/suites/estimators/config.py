"""What an ``estimators`` run measures: the data, the shapes and the thresholds it checks."""

from __future__ import annotations

from dataclasses import dataclass

SUITE = "estimators"

#: The claims each task's report checks (time ratio to the tool a user would otherwise pick).
#: latent / moe: at most this many ``LogisticRegression`` fits, at equal or better accuracy.
LATENT_MAX_RATIO = 10.0
MOE_MAX_RATIO = 20.0
#: sgd: at most ``SGDClassifier``'s time, test accuracy within this of ``LogisticRegression``.
SGD_ACCURACY_SLACK = 0.01
#: sparse / small: at most the fastest peer's time at its objective, memory at most this x.
MEMORY_MAX_RATIO = 2.0
#: stream-gap: the default's objective after the stream within this of the batch optimum.
STREAM_GAP_MAX = 0.01


@dataclass
class Config:
    """``repeats``: timed repeats per method (alternating, median); ``latent_solvers`` and
    ``moe_methods``: the library's other solvers timed beside the defaults (None: the
    default); ``sparse_shapes``: (rows, columns, classes) of the synthetic tf-idf problems;
    ``sparse_cs``: their C values; ``stream``: (rows, columns, classes, chunk) of the
    ``partial_fit`` stream; ``stream_gap``: (rows, columns, passes) of the two-class streams
    whose objective is compared with the batch optimum, over ``stream_gap_draws`` draws, raw
    and standardized, in each of ``stream_gap_chunks`` chunkings; ``sgd_sparse``: (rows,
    columns, classes) of the tf-idf rows the stochastic fit also runs on; ``small_cs``: C
    values of the small problems; ``min_time``: a fit shorter than this is timed in
    back-to-back runs of about that long (:func:`zbound_benchmarks.timing.time_alternating`):
    single fits of a few milliseconds spread by 20-50% around their median, more than what
    separates the methods."""

    repeats: int = 5
    latent_solvers: tuple = (None, "lbfgs", "newton-bound", "squarem")
    moe_methods: tuple = (None, "em")
    moe_experts: tuple = (2, 4)
    sparse_shapes: tuple = ((1000, 10_000, 2), (20_000, 30_000, 2), (20_000, 30_000, 5),
                            (100_000, 100_000, 2), (100_000, 100_000, 20))
    sparse_cs: tuple = (1.0, 100.0)
    sparse_nnz: int = 50
    stream: tuple = (50_000, 50, 5, 1000)
    stream_gap: tuple = (6000, 20, 25)
    stream_gap_chunks: tuple = (3, 10)
    stream_gap_draws: int = 5
    sgd_sparse: tuple = (20_000, 30_000, 2)
    small_cs: tuple = (0.01, 1.0, 100.0)
    memory: bool = True
    min_time: float = 0.05


def config(quick: bool) -> Config:
    if not quick:
        return Config()
    return Config(repeats=3, latent_solvers=(None, "lbfgs"), moe_methods=(None,),
                  sparse_shapes=((1000, 10_000, 2), (20_000, 30_000, 2), (20_000, 30_000, 5)),
                  sparse_cs=(1.0,), small_cs=(0.01, 1.0), stream_gap_draws=3)


def tiny(**changes) -> Config:
    """The smallest run (tests): one repeat, no memory tracing, one small sparse shape, one C;
    ``changes`` override any field."""
    import dataclasses

    base = Config(repeats=1, latent_solvers=(None,), moe_methods=(None,), moe_experts=(2,),
                  sparse_shapes=((300, 2000, 2),), sparse_cs=(1.0,), stream=(3000, 10, 3, 500),
                  sgd_sparse=(400, 5000, 2), stream_gap=(1000, 6, 5), stream_gap_chunks=(3,),
                  stream_gap_draws=1, small_cs=(1.0,), memory=False)
    return dataclasses.replace(base, **changes)
