"""Report of the ``sparse`` suite: per cell, each method's time to the common objective, its
ratio to the fastest peer, nonzeros and memory; the claim's verdict."""

from __future__ import annotations

from pathlib import Path

from zbound_benchmarks.report import num, prose, table
from zbound_benchmarks.suites.sparse.config import MAX_RATIO, REL_TARGET


def _groups(doc: dict) -> dict:
    out: dict = {}
    for r in doc["records"]:
        out.setdefault((r["task"], r["dataset"], r["setting"]), []).append(r)
    return out


def ratios(recs: list[dict]) -> float | None:
    """The default's time over the fastest peer's that reached the target (None where
    either did not)."""
    mine = [r for r in recs if r["default"] and r["reached"]]
    peers = [r["time_to_target_s"] for r in recs if r["peer"] and r["reached"]]
    if not mine or not peers:
        return None
    return mine[0]["time_to_target_s"] / min(peers)


def report(doc: dict, out: Path) -> str:
    groups = _groups(doc)
    if not groups:
        return ""
    cfg = doc.get("extra", {}).get("config", {})
    rs = {k: ratios(v) for k, v in groups.items()}
    compared = [v for v in rs.values() if v is not None]
    held = sum(1 for v in compared if v <= MAX_RATIO)
    lines = [prose("sparse", "intro", rel=f"{REL_TARGET:g}", repeats=cfg.get("repeats", "-"),
                   fractions="1%, 10% and 30%"), "",
             prose("sparse", "claim", max_ratio=MAX_RATIO, held=held, cells=len(compared),
                   verdict="holds" if compared and held == len(compared) else
                   "does not hold"), ""]
    alone = len(rs) - len(compared)
    if alone:
        lines += [f"In {alone} more cell(s) a peer or the default did not reach the target "
                  "within its budget (below): not counted either way.", ""]
    missing = doc.get("extra", {}).get("missing_peers")
    if missing:
        lines += [f"Not installed, left out: {', '.join(missing)}.", ""]
    for (task, dataset, setting), recs in groups.items():
        peers = [r["time_to_target_s"] for r in recs if r["peer"] and r["reached"]]
        best = min(peers) if peers else None
        ratio = rs[(task, dataset, setting)]
        lines += [f"**{task}, {dataset}, {setting}**: " + (
            f"the default at {ratio:.2f}x the fastest peer." if ratio is not None else
            "no peer reached the target within its budget." if best is None else
            "the default did not reach the target."), ""]
        lines += table(("method", "tolerance", "seconds", "x fastest peer", "nonzeros",
                        "peak MB", "objective gap"),
                       [(r["method"], num(r["metrics"].get("tolerance"), "g"),
                         num(r["time_to_target_s"]),
                         num(r["time_to_target_s"] / best if best and r["reached"] else None,
                             ".2f"),
                         num(r["metrics"].get("nonzeros"), "d"),
                         num(r["metrics"].get("peak_memory_mb")),
                         num(r["metrics"].get("objective_gap"), ".1e"))
                        for r in recs])
        lines.append("")
    return "\n".join(lines)
