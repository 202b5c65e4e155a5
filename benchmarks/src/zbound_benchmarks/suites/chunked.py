"""Suite ``chunked``: the map-reduce evaluation of a loss over row chunks, in memory and time.

What is measured
    The Alg. 1 majorizer of a softmax loss on t = 200 000 rows, n = 10 classes, d = 50 features
    (synthetic, Gaussian X, scores of order 1), built and used as a bound step uses it (one
    curvature product, its diagonal): peak memory (tracemalloc, the input X excluded) and
    seconds, for several chunk sizes, against the explicit representation that forms every
    sample's n x n matrix B_j at once (``label_bound`` + ``KroneckerCurvature``, what the library
    did before the factored form). Also value-and-gradient: chunked against whole-data.

The stated bound
    The factored majorizer keeps five (n, t) arrays (visiting order, its inverse, rho, keep and
    the weights: 40 t n bytes) and one chunk's temporaries (about a dozen (n, rows) arrays and the
    chunk's scores): peak <= 40 t n + 128 chunk (n + d) bytes. Each record says whether it held
    (``metrics.within_bound``).

Timing
    One BLAS thread, methods alternated over repeats, medians.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from zbound_benchmarks.report import num, table
from zbound_benchmarks.timing import thread_limit, time_alternating, traced_peak

SUITE = "chunked"


def _config(quick: bool) -> dict[str, Any]:
    return {"t": 200_000, "n": 10, "d": 50, "chunks": (2_000, 10_000, 50_000, None),
            "repeats": 3 if quick else 7, "seed": 0}


def _problem(cfg):
    rng = np.random.default_rng(cfg["seed"])
    t, n, d = cfg["t"], cfg["n"], cfg["d"]
    X = rng.normal(size=(t, d))
    y = rng.integers(0, n, t)
    theta = 0.1 * rng.normal(size=n * d)
    v = rng.normal(size=n * d)
    return X, y, theta, v


def stated_bound_mb(t: int, n: int, d: int, chunk: int) -> float:
    return (40.0 * t * n + 128.0 * chunk * (n + d)) / 2**20


def run(ctx) -> None:
    from zbound.bounds.curvature import KroneckerCurvature
    from zbound.bounds.multinomial import label_bound
    from zbound.models.loss import SoftmaxLoss

    cfg = _config(ctx.quick)
    t, n, d = cfg["t"], cfg["n"], cfg["d"]
    X, y, theta, v = _problem(cfg)
    dataset = "synthetic-softmax"
    shape = {"t": t, "n": n, "d": d}
    ctx.start("chunked: majorizer memory and time", len(cfg["chunks"]) + 2)
    with thread_limit(1):
        losses = {}
        for chunk in cfg["chunks"]:
            loss = SoftmaxLoss(X, y, n, chunk_size=chunk)
            losses[chunk] = loss

            def use(loss=loss):
                m = loss.majorizer(theta)
                m.curvature.matvec(v)
                m.curvature.diagonal()
                return m

            peak, _, m = traced_peak(use)
            timing = time_alternating({"build": lambda loss=loss: loss.majorizer(theta),
                                       "product": lambda m=m: m.curvature.matvec(v)},
                                      repeats=cfg["repeats"])
            bound = stated_bound_mb(t, n, d, loss.chunk_size)
            ctx.writer.add(
                task="majorizer-memory", dataset=dataset, setting=f"chunk={loss.chunk_size}",
                method="factored-bound" + ("" if chunk is not None else "-default-chunk"),
                peer=False, default=chunk is None, reached=True,
                time_to_target_s=timing["build"]["median_s"], evaluations=1,
                metrics={**shape, "chunk_size": loss.chunk_size, "n_chunks": loss.n_chunks,
                         "peak_memory_mb": peak, "bound_mb": bound,
                         "within_bound": peak <= bound,
                         "product_s": timing["product"]["median_s"]})
            ctx.advance()

        def explicit():
            S = X @ theta.reshape(n, d).T
            _, _, B = label_bound(S)
            K = KroneckerCurvature(X, B)
            K.matvec(v)
            K.diagonal()
            return K

        peak, _, K = traced_peak(explicit)
        timing = time_alternating({"build": explicit, "product": lambda: K.matvec(v)},
                                  repeats=cfg["repeats"])
        ctx.writer.add(
            task="majorizer-memory", dataset=dataset, setting=f"chunk={t}",
            method="explicit-bound", peer=False, default=False, reached=True,
            time_to_target_s=timing["build"]["median_s"], evaluations=1,
            metrics={**shape, "chunk_size": t, "n_chunks": 1, "peak_memory_mb": peak,
                     "product_s": timing["product"]["median_s"]})
        ctx.advance()

        small = losses[cfg["chunks"][0]]
        whole = SoftmaxLoss(X, y, n, chunk_size=t)
        timing = time_alternating({"whole": lambda: whole.value_and_grad(theta),
                                   "chunked": lambda: small.value_and_grad(theta)},
                                  repeats=cfg["repeats"])
        for name, loss in (("whole", whole), ("chunked", small)):
            peak, _, _ = traced_peak(lambda loss=loss: loss.value_and_grad(theta))
            ctx.writer.add(
                task="value-and-grad", dataset=dataset, setting=f"chunk={loss.chunk_size}",
                method=f"softmax-loss-{name}", peer=False, default=name == "whole",
                reached=True, time_to_target_s=timing[name]["median_s"], evaluations=1,
                metrics={**shape, "chunk_size": loss.chunk_size, "peak_memory_mb": peak,
                         "times_s": timing[name]["times"]})
        ctx.advance()


def report(doc: dict[str, Any], out) -> str:
    recs = doc["records"]
    lines = ["## Majorizer memory over row chunks", ""] + table(
        ("method", "chunk", "chunks", "peak MB", "stated bound MB", "within", "build s",
         "product s"),
        [(r["method"], m["chunk_size"], m["n_chunks"], num(m["peak_memory_mb"], ".0f"),
          num(m.get("bound_mb"), ".0f", ""),
          "" if m.get("bound_mb") is None else ("yes" if m["within_bound"] else "NO"),
          num(r["time_to_target_s"], ".3f"), num(m["product_s"], ".4f"))
         for r in recs if r["task"] == "majorizer-memory" for m in [r["metrics"]]])
    vg = [r for r in recs if r["task"] == "value-and-grad"]
    if vg:
        lines += ["", "## Value and gradient: whole data against row chunks", ""] + table(
            ("method", "chunk", "median s", "peak MB"),
            [(r["method"], m["chunk_size"],
              num((m.get("times_s") or None) and statistics.median(m["times_s"]), ".4f"),
              num(m["peak_memory_mb"], ".1f")) for r in vg for m in [r["metrics"]]])
    return "\n".join(lines) + "\n"
