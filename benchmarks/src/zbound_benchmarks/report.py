"""The renderer: Markdown tables, numbers and prose for every ``SUITE.md``.

Suites build their reports from three pieces of this module: :func:`table` (every Markdown
table), :func:`num` (every number, "-" where nothing was measured) and :func:`prose` (the text
around them, kept in ``bench/templates/SUITE.md``); :func:`write_report` puts the machine, the
suite's sections and the generic per-method tables together.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
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


def skipped_data_message(skipped: dict[str, str]) -> str:
    """The one message about data sets a run skipped for want of benchmark data."""
    from zbound.datasets import HOW_TO_GET

    reasons = sorted(set(skipped.values()))
    why = reasons[0] if len(reasons) == 1 else "; ".join(f"{k}: {v}" for k, v in skipped.items())
    return (f"Skipped {len(skipped)} data set(s) without benchmark data "
            f"({', '.join(skipped)}): {why} {HOW_TO_GET}")


def num(value: Any, spec: str = ".3g", missing: str = "-") -> str:
    """``format(value, spec)``; ``missing`` where the value was not measured (None); the items
    of a list or tuple formatted alike and joined by commas."""
    if value is None:
        return missing
    if isinstance(value, list | tuple):
        return ", ".join(num(v, spec, missing) for v in value)
    return format(value, spec)


def by_cell(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, dict]]:
    """The records by cell (task, dataset, setting), then by method, in the order they came."""
    out: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in records:
        out.setdefault((r["task"], r["dataset"], r["setting"]), {})[r["method"]] = r
    return out


def reached_s(r: dict[str, Any] | None) -> float | None:
    """A record's time to target; None where there is no record or it did not reach it."""
    if r is None or not r.get("reached"):
        return None
    return r.get("time_to_target_s")


def fastest(recs: dict[str, dict], peers: bool = True,
            keep: Callable[[str], bool] | None = None) -> tuple[str | None, float | None]:
    """(name, seconds) of the fastest record that reached the target among the peers
    (``peers``) or the library's own methods, optionally only the names ``keep`` accepts;
    (None, None) if none did."""
    times = {n: reached_s(r) for n, r in recs.items()
             if bool(r.get("peer")) == peers and (keep is None or keep(n))}
    times = {n: t for n, t in times.items() if t is not None}
    if not times:
        return None, None
    name = min(times, key=times.get)
    return name, times[name]


def holds(ok: bool) -> str:
    """The verdict word of a claim."""
    return "holds" if ok else "does not hold"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]],
          right: Sequence[int] = ()) -> list[str]:
    """A Markdown table's lines: the header, the rule (columns ``right`` aligned right), and
    one line per row (``str`` of each cell; format numbers with :func:`num` first)."""
    rule = "".join(" ---: |" if i in right else " --- |" for i in range(len(header)))
    return (["| " + " | ".join(header) + " |", "|" + rule]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


_SECTION = re.compile(r"^<!-- ([\w.-]+) -->$", re.MULTILINE)


@functools.cache
def _templates(suite: str) -> dict[str, str]:
    text = resources.files("zbound_benchmarks").joinpath("templates", f"{suite}.md").read_text()
    parts = _SECTION.split(text)
    return {name: _unwrap(body.strip("\n")) for name, body in zip(parts[1::2], parts[2::2],
                                                                 strict=True)}


def _unwrap(text: str) -> str:
    """Template paragraphs are wrapped for reading; the report has one line per paragraph
    (lines starting a list item, a table row or a heading stay lines of their own)."""
    out: list[str] = []
    for line in text.split("\n"):
        if out and out[-1] and line and not line.startswith(("- ", "| ", "#", "![")):
            out[-1] += " " + line
        else:
            out.append(line)
    return "\n".join(out)


def prose(suite: str, section: str, /, **values: Any) -> str:
    """Section ``section`` of the suite's template ``bench/templates/SUITE.md`` (sections
    start with a line ``<!-- section -->``), its ``{fields}`` filled from ``values``."""
    return _templates(suite)[section].format(**values)


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
        rows = []
        for r in sorted(recs, key=lambda r: (r["time_to_target_s"] is None,
                                             r["time_to_target_s"] or 0.0)):
            t = r["time_to_target_s"]
            ratio = t / best_peer if (t is not None and best_peer) else None
            rows.append((f"**{r['method']}**" if r["default"] else r["method"], _fmt(r["peer"]),
                         _fmt(r["default"]), _fmt(r["reached"]), _fmt(t), _fmt(ratio, 3),
                         _fmt(r["evaluations"]), _fmt(r["final_objective"], 10),
                         _fmt(r["metrics"].get("iterations"))))
        lines += table(("method", "peer", "default", "reached", "time to target (s)",
                        "ratio to best peer", "evaluations", "final objective", "iterations"),
                       rows) + [""]
    return "\n".join(lines)


def write_report(doc: dict[str, Any], out: Path,
                 extra: Callable[[dict[str, Any], Path], str] | None = None) -> Path:
    """Write ``out/SUITE.md``: the data sets skipped for want of data, the suite's own sections
    (if any), then the method tables. Should the suite's own sections fail on some record,
    the file is written without them (saying so) before the error propagates: a long run
    never ends without its tables."""
    out = Path(out)
    parts = [f"# Benchmark suite `{doc['suite']}`" + (" (quick)" if doc["quick"] else ""), ""]
    m = doc["machine"]
    cpu = f"{m['cpu']}, " if m.get("cpu") else ""
    blas = f"; BLAS: {m['blas']}" if m.get("blas") else ""
    if m.get("kernels"):
        blas += f"; chain kernels: {m['kernels']}"
    when = f" Run {m['date']}." if m.get("date") else ""
    parts.append(
        f"Machine: {cpu}{m.get('cpu_count')} CPUs, {m.get('platform')}; Python "
        f"{m.get('python')}, NumPy {m.get('numpy')}, SciPy {m.get('scipy')}, scikit-learn "
        f"{m.get('sklearn')}{blas}.{when}"
    )
    parts.append("")
    skipped = doc.get("extra", {}).get("skipped_datasets")
    if skipped:
        parts += ["## Data sets not run\n", skipped_data_message(skipped), ""]
    failure = None
    if extra is not None:
        try:
            parts.append(extra(doc, out))
        except Exception as exc:      # re-raised below, after the tables
            failure = exc
            parts.append(f"(The suite's own sections could not be written: "
                         f"{type(exc).__name__}: {exc}.)")
        parts.append("")
    if doc["records"]:
        parts.append("## All records\n")
        parts.append(method_table(doc["records"]))
    path = out / f"{doc['suite']}.md"
    path.write_text("\n".join(parts))
    if failure is not None:
        raise failure
    return path
