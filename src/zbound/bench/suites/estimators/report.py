"""The ``estimators`` report: one table per task, each with the claim it checks."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from zbound.bench.report import num
from zbound.bench.suites.estimators.config import (
    LATENT_MAX_RATIO,
    MEMORY_MAX_RATIO,
    MOE_MAX_RATIO,
    SGD_ACCURACY_SLACK,
)


def _groups(recs, task):
    out: dict[tuple, list] = defaultdict(list)
    for r in recs:
        if r["task"] == task:
            out[(r["dataset"], r["setting"])].append(r)
    return out


def _head(title: str, claim: str, columns: tuple[str, ...]) -> list[str]:
    """A section's title, its claim and the header of its table."""
    return [f"## {title}", "", f"Claim: {claim}", "", "| " + " | ".join(columns) + " |",
            "|" + " --- |" * len(columns)]


def _ratio_table(recs, task, title, limit, peer_name) -> list[str]:
    groups = _groups(recs, task)
    if not groups:
        return []
    lines = _head(title, f"the default at most {limit:g}x one `{peer_name}` fit, at equal or "
                  "better test accuracy (5-fold cross-validation; the 75 / 25 split's beside "
                  "it).", ("data", "setting", "method", "median s", "x peer", "CV accuracy",
                           "peer CV accuracy", "split accuracy", "peer split accuracy",
                           "peak MB", "claim"))
    for (data, setting), rows in groups.items():
        for r in rows:
            m = r["metrics"]
            claim = ""
            acc, ref = m.get("cv_accuracy"), m.get("peer_cv_accuracy")
            if acc is None or ref is None:
                acc, ref = m["test_accuracy"], m["peer_accuracy"]
            if r["default"] and m["ratio_to_peer"] is not None:
                ok = m["ratio_to_peer"] <= limit and acc >= ref
                claim = "holds" if ok else "does not hold"
            lines.append(f"| {data} | {setting} | {r['method']} | "
                         f"{num(r['time_to_target_s'], '.4f')} | {num(m['ratio_to_peer'], '.1f')} "
                         f"| {num(m.get('cv_accuracy'), '.4f')} | "
                         f"{num(m.get('peer_cv_accuracy'), '.4f')} | "
                         f"{num(m['test_accuracy'], '.4f')} | {num(m['peer_accuracy'], '.4f')} "
                         f"| {num(m.get('peak_memory_mb'), '.1f')} | {claim} |")
    return lines + [""]


def _sgd_table(recs) -> list[str]:
    rows = [r for r in recs if r["task"] == "sgd"]
    if not rows:
        return []
    refs = {r["dataset"]: r for r in rows if r["method"] == "sklearn-logistic"}
    lines = _head("Stochastic fit: BoundSGDClassifier against SGDClassifier",
                  f"at most `SGDClassifier`'s time, accuracy within "
                  f"{100 * SGD_ACCURACY_SLACK:g} point of `LogisticRegression`'s (5-fold "
                  "cross-validation where there is one, else the split's).",
                  ("data", "method", "median s", "x SGDClassifier", "CV accuracy",
                   "split accuracy", "claim"))
    for r in rows:
        m = r["metrics"]
        claim = ""
        ref = refs.get(r["dataset"])
        key = "cv_accuracy" if ref and ref["metrics"].get("cv_accuracy") is not None \
            else "test_accuracy"
        ref_acc = ref["metrics"][key] if ref else None
        if r["method"] == "zbound-sgd" and ref_acc is not None and \
                m["ratio_to_peer"] is not None:
            ok = m["ratio_to_peer"] <= 1.0 and m[key] >= ref_acc - SGD_ACCURACY_SLACK - 1e-12
            claim = "holds" if ok else "does not hold"
        lines.append(f"| {r['dataset']} | {r['method']} | {num(r['time_to_target_s'], '.4f')} | "
                     f"{num(m['ratio_to_peer'], '.2f')} | {num(m.get('cv_accuracy'), '.4f')} | "
                     f"{num(m['test_accuracy'], '.4f')} | {claim} |")
    rows = [r for r in recs if r["task"] == "partial-fit"]
    if rows:
        lines += [""] + _head("partial_fit throughput",
                              "at least as many rows per second as "
                              "`SGDClassifier.partial_fit`.",
                              ("stream", "method", "rows / s", "x SGDClassifier time",
                               "train accuracy", "claim"))
        for r in rows:
            m = r["metrics"]
            claim = ("holds" if m["ratio_to_peer"] <= 1.0 else "does not hold") \
                if r["method"] == "zbound-sgd" and m["ratio_to_peer"] is not None else ""
            lines.append(f"| {r['setting']} | {r['method']} | {num(m['rows_per_s'], ',.0f')} | "
                         f"{num(m['ratio_to_peer'], '.2f')} | {num(m['train_accuracy'], '.4f')}"
                         f" | {claim} |")
    return lines + [""]


def _logistic_table(recs, task, title) -> list[str]:
    groups = _groups(recs, task)
    if not groups:
        return []
    lines = _head(title, "the library's time to the fastest peer's objective (within 1e-6 "
                  "relative; liblinear aside: it penalizes the intercept) at most that peer's "
                  f"time, peak memory at most {MEMORY_MAX_RATIO:g}x its.",
                  ("data", "C", "method", "median s", "objective gap", "iterations", "peak MB",
                   "s to fastest peer's objective", "x fastest", "x memory", "claim"))
    for (data, setting), rows in groups.items():
        for r in rows:
            m = r["metrics"]
            reach = ratio = mem = claim = ""
            if r["method"] == "zbound":
                fastest = m.get("fastest_peer")
                reach = num((m.get("time_to_peer_objective_s") or {}).get(fastest), ".4f")
                ratio = num(m.get("ratio_to_fastest_peer"), ".2f")
                mem = num(m.get("memory_ratio_to_fastest_peer"), ".2f")
                r_ok = m.get("ratio_to_fastest_peer") is not None and \
                    m["ratio_to_fastest_peer"] <= 1.0
                m_ok = m.get("memory_ratio_to_fastest_peer") is None or \
                    m["memory_ratio_to_fastest_peer"] <= MEMORY_MAX_RATIO
                claim = ("holds" if r_ok and m_ok else "does not hold") + \
                    f" (fastest: {fastest})"
            lines.append(f"| {data} | {setting.removeprefix('C=')} | {r['method']} | "
                         f"{num(r['time_to_target_s'], '.4f')} | {num(m['objective_gap'], '.1e')}"
                         f" | {m.get('n_iter', '')} | {num(m.get('peak_memory_mb'), '.1f')} | "
                         f"{reach} | {ratio} | {mem} | {claim} |")
    return lines + [""]


def report(doc: dict[str, Any], out) -> str:
    recs = doc["records"]
    min_time = doc.get("extra", {}).get("config", {}).get("min_time_s")
    runs = (f" A fit shorter than {1e3 * min_time:g} ms is timed in back-to-back runs of "
            f"about that long after one uncounted fit, the time per fit recorded (single fits "
            f"of a few milliseconds spread by 20-50% around their median)."
            if min_time else "")
    lines = ["Every estimator against the tool its user would otherwise pick, one BLAS thread, "
             f"methods alternating over repeats, medians.{runs} Peak memory is what "
             "tracemalloc sees (NumPy and SciPy allocations; compiled code's own buffers are "
             "not seen).", ""]
    lines += _ratio_table(recs, "latent", "Latent conditional likelihood",
                          LATENT_MAX_RATIO, "LogisticRegression")
    lines += _ratio_table(recs, "moe", "Mixtures of experts on class labels",
                          MOE_MAX_RATIO, "LogisticRegression")
    lines += _sgd_table(recs)
    lines += _logistic_table(recs, "sparse", "Sparse and wide data: BoundLogisticRegression")
    lines += _logistic_table(recs, "small", "Small problems: BoundLogisticRegression")
    return "\n".join(lines) + "\n"
