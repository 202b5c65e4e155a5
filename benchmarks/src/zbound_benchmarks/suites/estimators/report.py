"""The ``estimators`` report: one table per task, each with the claim it checks."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from zbound_benchmarks.report import holds, num, prose, table
from zbound_benchmarks.suites.estimators.config import (
    LATENT_MAX_RATIO,
    MEMORY_MAX_RATIO,
    MOE_MAX_RATIO,
    SGD_ACCURACY_SLACK,
    STREAM_GAP_MAX,
)


def _groups(recs, task):
    out: dict[tuple, list] = defaultdict(list)
    for r in recs:
        if r["task"] == task:
            out[(r["dataset"], r["setting"])].append(r)
    return out


def _section(title: str, claim: str, header: tuple[str, ...], rows: list) -> list[str]:
    """A section's title, its claim and its table."""
    return [f"## {title}", "", f"Claim: {claim}", ""] + table(header, rows)


def _ratio_table(recs, task, title, limit, peer_name) -> list[str]:
    groups = _groups(recs, task)
    if not groups:
        return []
    rows = []
    for (data, setting), group in groups.items():
        for r in group:
            m = r["metrics"]
            claim = ""
            acc, ref = m.get("cv_accuracy"), m.get("peer_cv_accuracy")
            if acc is None or ref is None:
                acc, ref = m["test_accuracy"], m["peer_accuracy"]
            if r["default"] and m["ratio_to_peer"] is not None:
                claim = holds(m["ratio_to_peer"] <= limit and acc >= ref)
            rows.append((data, setting, r["method"], num(r["time_to_target_s"], ".4f"),
                         num(m["ratio_to_peer"], ".1f"), num(m.get("cv_accuracy"), ".4f"),
                         num(m.get("peer_cv_accuracy"), ".4f"), num(m["test_accuracy"], ".4f"),
                         num(m["peer_accuracy"], ".4f"), num(m.get("peak_memory_mb"), ".1f"),
                         claim))
    return _section(title, prose("estimators", "ratio-claim", limit=limit, peer=peer_name),
                    ("data", "setting", "method", "median s", "x peer", "CV accuracy",
                     "peer CV accuracy", "split accuracy", "peer split accuracy", "peak MB",
                     "claim"), rows) + [""]


def _sgd_table(recs) -> list[str]:
    fits = [r for r in recs if r["task"] == "sgd"]
    if not fits:
        return []
    refs = {r["dataset"]: r for r in fits if r["method"] == "sklearn-logistic"}
    rows = []
    for r in fits:
        m = r["metrics"]
        claim = ""
        ref = refs.get(r["dataset"])
        key = "cv_accuracy" if ref and ref["metrics"].get("cv_accuracy") is not None \
            else "test_accuracy"
        ref_acc = ref["metrics"][key] if ref else None
        if r["method"] == "zbound-sgd" and ref_acc is not None and \
                m["ratio_to_peer"] is not None:
            claim = holds(m["ratio_to_peer"] <= 1.0
                             and m[key] >= ref_acc - SGD_ACCURACY_SLACK - 1e-12)
        rows.append((r["dataset"], r["method"], num(r["time_to_target_s"], ".4f"),
                     num(m["ratio_to_peer"], ".2f"), num(m.get("cv_accuracy"), ".4f"),
                     num(m["test_accuracy"], ".4f"), claim))
    lines = _section("Stochastic fit: BoundSGDClassifier against SGDClassifier",
                     prose("estimators", "sgd-claim", slack=100 * SGD_ACCURACY_SLACK),
                     ("data", "method", "median s", "x SGDClassifier", "CV accuracy",
                      "split accuracy", "claim"), rows)
    streams = [r for r in recs if r["task"] == "partial-fit"]
    if streams:
        rows = []
        for r in streams:
            m = r["metrics"]
            claim = holds(m["ratio_to_peer"] <= 1.0) \
                if r["method"] == "zbound-sgd" and m["ratio_to_peer"] is not None else ""
            rows.append((r["setting"], r["method"], num(m["rows_per_s"], ",.0f"),
                         num(m["ratio_to_peer"], ".2f"), num(m["train_accuracy"], ".4f"),
                         claim))
        lines += [""] + _section("partial_fit throughput",
                                 prose("estimators", "partial-fit-claim"),
                                 ("stream", "method", "rows / s", "x SGDClassifier time",
                                  "train accuracy", "claim"), rows)
    return lines + [""]


def _stream_gap_table(recs) -> list[str]:
    streams = [r for r in recs if r["task"] == "stream-gap"]
    if not streams:
        return []
    gaps = [r["metrics"]["objective_gap"] for r in streams if r["default"]]
    ok = all(g is not None and g <= STREAM_GAP_MAX for g in gaps)
    rows = [(r["dataset"], r["setting"], r["method"], num(r["metrics"]["objective_gap"], ".2%"),
             num(r["time_to_target_s"], ".3f")) for r in streams]
    worst = max((g for g in gaps if g is not None), default=None)
    return _section("partial_fit against the batch optimum, raw and standardized columns",
                    prose("estimators", "stream-gap-claim", limit=100 * STREAM_GAP_MAX),
                    ("data", "stream", "method", "objective above the optimum", "median s"),
                    rows) + ["", prose("estimators", "stream-gap-verdict", verdict=holds(ok),
                                       n=len(gaps), worst=num(worst, ".2%")), ""]


def _logistic_table(recs, task, title) -> list[str]:
    groups = _groups(recs, task)
    if not groups:
        return []
    rows = []
    for (data, setting), group in groups.items():
        for r in group:
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
                claim = holds(r_ok and m_ok) + f" (fastest: {fastest})"
            rows.append((data, setting.removeprefix("C="), r["method"],
                         num(r["time_to_target_s"], ".4f"), num(m["objective_gap"], ".1e"),
                         m.get("n_iter", ""), num(m.get("peak_memory_mb"), ".1f"), reach, ratio,
                         mem, claim))
    return _section(title, prose("estimators", "logistic-claim", memory=MEMORY_MAX_RATIO),
                    ("data", "C", "method", "median s", "objective gap", "iterations",
                     "peak MB", "s to fastest peer's objective", "x fastest", "x memory",
                     "claim"), rows) + [""]


def report(doc: dict[str, Any], out) -> str:
    recs = doc["records"]
    min_time = doc.get("extra", {}).get("config", {}).get("min_time_s")
    runs = prose("estimators", "min-time", ms=1e3 * min_time) if min_time else ""
    lines = [prose("estimators", "intro", runs=runs), ""]
    lines += _ratio_table(recs, "latent", "Latent conditional likelihood",
                          LATENT_MAX_RATIO, "LogisticRegression")
    lines += _ratio_table(recs, "moe", "Mixtures of experts on class labels",
                          MOE_MAX_RATIO, "LogisticRegression")
    lines += _sgd_table(recs)
    lines += _stream_gap_table(recs)
    lines += _logistic_table(recs, "sparse", "Sparse and wide data: BoundLogisticRegression")
    lines += _logistic_table(recs, "small", "Small problems: BoundLogisticRegression")
    return "\n".join(lines) + "\n"
