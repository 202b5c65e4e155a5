"""Markdown tables from benchmark records (the generic part of every ``SUITE.md``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e4 or abs(value) < 1e-3:
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}g}"
    return str(value)


def method_table(records: list[dict[str, Any]]) -> str:
    """One table per (task, dataset, setting): every method, its time ratio to the fastest peer."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for rec in records:
        groups[(rec["task"], rec["dataset"], rec["setting"])].append(rec)
    lines: list[str] = []
    for (task, dataset, setting), recs in groups.items():
        peer_times = [r["time_to_target_s"] for r in recs if r["peer"] and r["reached"]
                      and r["time_to_target_s"] is not None]
        best_peer = min(peer_times) if peer_times else None
        lines.append(f"### {task} / {dataset} / {setting}\n")
        lines.append("| method | peer | default | reached | time to target (s) "
                     "| ratio to best peer | evaluations | final objective | iterations |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in sorted(recs, key=lambda r: (r["time_to_target_s"] is None,
                                             r["time_to_target_s"] or 0.0)):
            t = r["time_to_target_s"]
            ratio = t / best_peer if (t is not None and best_peer) else None
            name = f"**{r['method']}**" if r["default"] else r["method"]
            lines.append(
                f"| {name} | {_fmt(r['peer'])} | {_fmt(r['default'])} | {_fmt(r['reached'])} "
                f"| {_fmt(t)} | {_fmt(ratio, 3)} | {_fmt(r['evaluations'])} "
                f"| {_fmt(r['final_objective'], 10)} | {_fmt(r['metrics'].get('iterations'))} |"
            )
        lines.append("")
    return "\n".join(lines)


def write_report(doc: dict[str, Any], out: Path,
                 extra: Callable[[dict[str, Any], Path], str] | None = None) -> Path:
    """Write ``out/SUITE.md``: the suite's own sections first (if any), then the method tables."""
    out = Path(out)
    parts = [f"# Benchmark suite `{doc['suite']}`" + (" (quick)" if doc["quick"] else ""), ""]
    m = doc["machine"]
    parts.append(
        f"Machine: {m.get('cpu_count')} CPUs, {m.get('platform')}; Python {m.get('python')}, "
        f"NumPy {m.get('numpy')}, SciPy {m.get('scipy')}, scikit-learn {m.get('sklearn')}."
    )
    parts.append("")
    if extra is not None:
        parts.append(extra(doc, out))
        parts.append("")
    if doc["records"]:
        parts.append("## All records\n")
        parts.append(method_table(doc["records"]))
    path = out / f"{doc['suite']}.md"
    path.write_text("\n".join(parts))
    return path
