"""Runs a benchmark suite: progress display, records written as they come, report at the end.

A suite is a module in :mod:`zbound.bench.suites` with

- ``run(ctx: SuiteContext) -> None``: solves things and calls ``ctx.writer.add(...)`` per record;
- optionally ``report(doc: dict, out: Path) -> str``: extra Markdown (and PNG plots written into
  ``out``) appended after the generic tables of :mod:`zbound.bench.report`.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from zbound.bench.records import RecordWriter

SUITES: dict[str, str] = {
    "logreg-small": "zbound.bench.suites.logreg_small",
    "ising": "zbound.bench.suites.ising",
}


@dataclass
class SuiteContext:
    """What a suite gets: where to write, how big to run, and a progress display."""

    writer: RecordWriter
    quick: bool
    out: Path
    progress: Progress | None = None
    console: Console = field(default_factory=lambda: Console(stderr=True))
    _task: Any = None

    def start(self, description: str, total: int) -> None:
        """Begin a progress bar of ``total`` steps (replaces the previous one)."""
        if self.progress is None:
            return
        if self._task is not None:
            self.progress.update(self._task, visible=False)
        self._task = self.progress.add_task(description, total=total)

    def advance(self, description: str | None = None) -> None:
        if self.progress is None or self._task is None:
            return
        if description is None:
            self.progress.advance(self._task)
        else:
            self.progress.update(self._task, advance=1, description=description)

    def log(self, message: str) -> None:
        if self.progress is not None:
            self.progress.console.print(message)
        else:
            self.console.print(message)


def load_suite(name: str):
    try:
        module = SUITES[name]
    except KeyError:
        known = ", ".join(sorted(SUITES))
        raise ValueError(f"unknown benchmark suite {name!r}; known suites: {known}") from None
    return importlib.import_module(module)


def run_suite(name: str, quick: bool = False, out: str | Path = "bench-out",
              show_progress: bool = True) -> dict[str, Any]:
    """Run suite ``name``; write ``out/NAME.json``, ``out/NAME.md`` and plots; return the JSON."""
    from zbound.bench.report import write_report

    suite = load_suite(name)
    out = Path(out)
    writer = RecordWriter(name, quick, out)
    start = time.perf_counter()
    if show_progress:
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
            ctx = SuiteContext(writer=writer, quick=quick, out=out, progress=progress)
            suite.run(ctx)
    else:
        ctx = SuiteContext(writer=writer, quick=quick, out=out)
        suite.run(ctx)
    writer.set_extra("elapsed_s", time.perf_counter() - start)
    doc = writer.to_dict()
    write_report(doc, out, extra=getattr(suite, "report", None))
    return doc
