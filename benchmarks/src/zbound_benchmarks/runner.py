"""Runs a benchmark suite: progress display, records written as they come, report at the end.

A suite is a module in :mod:`zbound_benchmarks.suites` with

- ``run(ctx: SuiteContext) -> None``: solves things and calls ``ctx.writer.add(...)`` per record;
- optionally ``report(doc: dict, out: Path) -> str``: extra Markdown (and PNG plots written into
  ``out``) appended after the generic tables of :mod:`zbound_benchmarks.report`;
- optionally ``ACCEPTS_METHODS = True``: the suite benchmarks the names in ``ctx.methods``
  (methods registered in ``zbound.solvers.METHODS``) besides its own list;
- optionally ``OPTIONS``: names of the suite-specific ``ctx.options`` it understands (e.g.
  ``logreg-small`` takes ``config``, a smaller ``Config`` for tests).

Every record goes through :class:`zbound_benchmarks.records.RecordWriter`, which checks it
against the record contract and rewrites ``out/SUITE.json`` after each one.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zbound_benchmarks.records import RecordWriter

if TYPE_CHECKING:       # rich is the bench extra's: imported where a run starts
    from rich.console import Console
    from rich.progress import Progress

SUITES: dict[str, str] = {
    "logreg-small": "zbound_benchmarks.suites.logreg_small",
    "ising": "zbound_benchmarks.suites.ising",
    "chunked": "zbound_benchmarks.suites.chunked",
    "logreg-large": "zbound_benchmarks.suites.logreg_large",
    "moe": "zbound_benchmarks.suites.moe",
    "latent": "zbound_benchmarks.suites.latent",
    "crf": "zbound_benchmarks.suites.crf",
    "graphcrf": "zbound_benchmarks.suites.graphcrf",
    "scale": "zbound_benchmarks.suites.scale",
    "stochastic": "zbound_benchmarks.suites.stochastic",
    "estimators": "zbound_benchmarks.suites.estimators",
    "sparse": "zbound_benchmarks.suites.sparse",
}


def _console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


@dataclass
class SuiteContext:
    """What a suite gets: where to write, how big to run, and a progress display."""

    writer: RecordWriter
    quick: bool
    out: Path
    progress: Progress | None = None
    #: registered ``zbound.solvers`` method names to add to the suite's own methods
    methods: tuple[str, ...] = ()
    #: suite-specific options (names in the suite's ``OPTIONS``)
    options: dict[str, Any] = field(default_factory=dict)
    console: Console = field(default_factory=lambda: _console())
    #: data sets skipped because their benchmark data is missing or corrupted: name -> reason
    skipped_data: dict[str, str] = field(default_factory=dict)
    _task: Any = None

    def load(self, dataset: str, loader, *args, **kwargs):
        """``loader(*args, **kwargs)``, or None where the benchmark data it reads is missing
        or fails its checksum: the data set is then recorded in ``skipped_data`` (and in the
        JSON's ``skipped_datasets``), the suite goes on with the rest, and the runner says once,
        at the end, what was skipped and how to get the data."""
        from zbound.datasets import DataChecksumError

        if dataset in self.skipped_data:
            return None
        try:
            return loader(*args, **kwargs)
        except (FileNotFoundError, DataChecksumError) as exc:
            self.skipped_data[dataset] = _first_sentence(str(exc))
            self.writer.set_extra("skipped_datasets", dict(self.skipped_data))
            return None

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


def _first_sentence(text: str) -> str:
    head = text.split(". ")[0].strip()
    return head if head.endswith(".") else head + "."


def load_suite(name: str):
    try:
        module = SUITES[name]
    except KeyError:
        known = ", ".join(sorted(SUITES))
        raise ValueError(f"unknown benchmark suite {name!r}; known suites: {known}") from None
    return importlib.import_module(module)


def _check_request(name: str, suite, methods, options) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Validate ``methods`` and ``options`` for ``suite`` before anything is run or written."""
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods or ())
    bad = [m for m in methods if not isinstance(m, str)]
    if bad:
        raise TypeError(f"methods must be method names (str), got {bad!r}")
    if methods:
        if not getattr(suite, "ACCEPTS_METHODS", False):
            raise ValueError(f"benchmark suite {name!r} does not take extra methods")
        from zbound.solvers import METHODS

        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            raise ValueError(f"methods {unknown} are not registered in zbound.solvers.METHODS "
                             f"(registered: {', '.join(sorted(METHODS))})")
    options = dict(options or {})
    known = tuple(getattr(suite, "OPTIONS", ()))
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"benchmark suite {name!r} has no options {unknown}"
                         + (f"; it takes {list(known)}" if known else ""))
    return methods, options


def render(path: str | Path, out: str | Path) -> Path:
    """Write the report of a saved run again: ``out/SUITE.md`` and its plots, from the records
    in ``path`` (``SUITE.json`` or ``SUITE.json.gz``), with the suite's own sections, as the run
    wrote them. Returns the Markdown file's path."""
    from zbound_benchmarks.records import read_suite
    from zbound_benchmarks.report import write_report

    doc = read_suite(path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return write_report(doc, out, extra=getattr(load_suite(doc["suite"]), "report", None))


def run_suite(name: str, quick: bool = False, out: str | Path = "bench-out",
              show_progress: bool = True, methods: list[str] | tuple[str, ...] | None = None,
              options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run suite ``name``; write ``out/NAME.json``, ``out/NAME.md`` and plots; return the JSON.

    ``methods``: names registered in ``zbound.solvers.METHODS`` to benchmark besides the
    suite's own (suites with ``ACCEPTS_METHODS``; ``logreg-small`` runs each through
    ``zbound.solvers.minimize`` and marks it a peer as ``METHODS[name].peer`` says).
    ``options``: suite-specific settings named in the suite's ``OPTIONS``, e.g.
    ``options={"config": logreg_small.tiny()}`` for a run of seconds.
    """
    from zbound_benchmarks.report import write_report

    suite = load_suite(name)
    methods, options = _check_request(name, suite, methods, options)
    out = Path(out)
    writer = RecordWriter(name, quick, out)
    start = time.perf_counter()
    if show_progress:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
            ctx = SuiteContext(writer=writer, quick=quick, out=out, progress=progress,
                               methods=methods, options=options)
            suite.run(ctx)
    else:
        ctx = SuiteContext(writer=writer, quick=quick, out=out, methods=methods,
                           options=options)
        suite.run(ctx)
    writer.set_extra("elapsed_s", time.perf_counter() - start)
    doc = writer.to_dict()
    write_report(doc, out, extra=getattr(suite, "report", None))
    if ctx.skipped_data:
        from zbound_benchmarks.report import skipped_data_message

        ctx.console.print(f"[yellow]{skipped_data_message(ctx.skipped_data)}[/yellow]",
                          highlight=False)
    return doc
