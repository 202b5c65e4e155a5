"""The commands ``zbound bench``, ``zbound report`` and ``zbound demo``.

The library's command line (``zbound.cli``) finds them through the entry point group
``zbound.commands``: :func:`register` adds their parsers. Every run prints the path of each file
it wrote.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path

# One line per suite of zbound_benchmarks.runner.SUITES, and how long `--quick` takes on a
# 2-core machine (one run of each quick suite, one at a time, on an otherwise idle machine). Kept
# here, not read from the suite modules, so that `zbound bench --help` imports no suite.
SUITE_INFO: dict[str, tuple[str, str]] = {
    "sparse": (
        "L1 logistic regression (BoundLogisticRegression(penalty='l1'), bound-cd) against "
        "skglm, celer, liblinear and saga at 1%, 10% and 30% nonzeros on SSL Text, Adult, "
        "a 20 000 x 30 000 tf-idf shape, SRBCT and KMNIST: time to the same objective",
        "about 2 min",
    ),
    "estimators": (
        "every estimator against what its user would otherwise pick: latent and mixture "
        "models against LogisticRegression, BoundSGDClassifier against SGDClassifier (fit, "
        "partial_fit), BoundLogisticRegression against liblinear, lbfgs, newton-cg and saga "
        "on sparse text shapes and small problems",
        "under 1 min",
    ),
    "scale": (
        "bound majorization on Dask (LocalCluster, 2 workers): synthetic 10-class and "
        "two-class problems at 1e5-1e7 rows and Adult against dask-ml, scikit-learn and "
        "Spark MLlib; time, passes, iterations, peak memory per worker (--quick: t = 1e5, "
        "no Adult)",
        "about 1 min",
    ),
    "stochastic": (
        "SGB Fig. 1: SPFB and LSPFB against SGD, momentum, Adam and SGDClassifier on Adult, "
        "KMNIST and digits (mini-batch 1000), epochs and seconds to 1% and 0.1%",
        "about 5 min",
    ),
    "crf": (
        "Chain CRFs on CoNLL-2000, CoNLL-2002 and the Penn Treebank sample against "
        "python-crfsuite (L-BFGS, l2sgd) with the same features and objective",
        "about 1 min",
    ),
    "graphcrf": (
        "CRFs on graphs of small treewidth: exact junction-tree inference against enumeration "
        "and pgmpy, the skip-chain CRF on CoNLL-2002 against the chain CRF and "
        "python-crfsuite, the cost of a pass against treewidth",
        "about 1 min",
    ),
    "logreg-small": (
        "Jebara & Choromanska (2012), supplement Table 3, plus a weak-regularization sweep "
        "with digits: bound solvers against SciPy and scikit-learn",
        "about 2 min",
    ),
    "ising": (
        "Beyler & Bach: quantum, TRW and log-det upper bounds on Ising log-partition "
        "functions against exact values, and the quantum solver against CVXPY",
        "about 1.5 min",
    ),
    "logreg-large": (
        "Jebara & Choromanska (2012) Table 1 (SRBCT, Text) and Table 4 (low-rank rank sweep), "
        "plus Adult, KMNIST, digits and a synthetic set at C in {0.01, 1, 100}: bound solvers "
        "against SciPy, scikit-learn and glum, time to two targets and peak memory",
        "about 8 min",
    ),
    "chunked": (
        "the map-reduce evaluation of a loss over row chunks: peak memory and time of the "
        "Alg. 1 majorizer (t = 200 000, n = 10, d = 50) against the explicit n x n form",
        "under 1 min",
    ),
    "latent": (
        "Jebara & Choromanska (2012) Sec. 4, Tables 2 and 5 and Fig. 1: mixtures of "
        "Gaussian-gated logistic regressions (latent conditional likelihood) trained by the "
        "bound against EM, BFGS, CG, steepest descent and Newton",
        "about 2 min",
    ),
    "moe": (
        "Fruytier, Mokhtari & Sanghavi: mixtures of experts by EM (bound-majorization "
        "M-steps), EM with inner GD, Gradient EM, GD and Adam on synthetic SMoLinE / SMoLogE "
        "and randomly inverted KMNIST and digits images",
        "about 2 min",
    ),
}


def _suite_lines(width: int = 79) -> list[str]:
    """``name  description (--quick: time)``, wrapped, one block per suite."""
    name_width = max(len(name) for name in SUITE_INFO)
    indent = " " * (name_width + 4)
    lines = []
    for name, (description, quick) in SUITE_INFO.items():
        text = f"{description} (--quick: {quick} on 2 cores)"
        lines += textwrap.wrap(text, width, initial_indent=f"  {name:<{name_width}}  ",
                               subsequent_indent=indent, break_on_hyphens=False)
    return lines


def _snapshot(directory: Path) -> dict[Path, float]:
    """Modification time of every file under ``directory`` (empty if it does not exist)."""
    if not directory.is_dir():
        return {}
    return {p: p.stat().st_mtime_ns for p in directory.rglob("*") if p.is_file()}


def _print_written(directory: Path, before: dict[Path, float]) -> None:
    """Print every file under ``directory`` that is new or changed since ``before``."""
    after = _snapshot(directory)
    written = sorted(p for p, mtime in after.items() if before.get(p) != mtime)
    print(f"Files written ({len(written)}):")
    for path in written:
        print(f"  {path}")


def _writable(directory: Path, command: str) -> bool:
    """Whether ``directory`` exists or can be made, and takes a file; says why not on stderr
    (before a run, not after it)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".zbound-write-test-"):
            pass
    except OSError as exc:
        print(f"zbound {command}: cannot write into --out {str(directory)!r}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return False
    return True


def _bench(args: argparse.Namespace) -> int:
    from zbound_benchmarks.runner import SUITES, load_suite, run_suite

    if args.suite == "list":
        print("Benchmark suites (zbound bench SUITE [--quick] [--out DIR]):")
        for line in _suite_lines():
            print(line)
        missing = sorted(set(SUITES) - set(SUITE_INFO))
        for name in missing:  # registered but not described yet: still list it
            print(f"  {name}")
        return 0
    out = Path(args.out)
    try:
        load_suite(args.suite)              # an unknown name is told before --out is tried
    except ValueError as exc:
        print(f"zbound bench: {exc}", file=sys.stderr)
        return 2
    if not _writable(out, "bench"):
        return 2
    before = _snapshot(out)
    start = time.perf_counter()
    try:
        doc = run_suite(args.suite, quick=args.quick, out=out,
                        show_progress=not args.no_progress)
    except ValueError as exc:
        print(f"zbound bench: {exc}", file=sys.stderr)
        return 2
    print(f"Suite {args.suite}{' (quick)' if args.quick else ''}: {len(doc['records'])} records "
          f"in {time.perf_counter() - start:.0f} s.")
    _print_written(out, before)
    return 0


def _report(args: argparse.Namespace) -> int:
    from zbound_benchmarks.runner import render

    out = Path(args.out)
    if not _writable(out, "report"):
        return 2
    before = _snapshot(out)
    for path in args.records:
        try:
            render(path, out)
        except (ValueError, TypeError) as exc:     # not a SUITE.json of the contract
            print(f"zbound report: {path}: not records written by 'zbound bench' ({exc})",
                  file=sys.stderr)
            return 2
    _print_written(out, before)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from zbound_benchmarks.demo import run_demo

    out = Path(args.out)
    if not _writable(out, "demo"):
        return 2
    before = _snapshot(out)
    run_demo(out=out)
    _print_written(out, before)
    return 0




def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench``, ``report`` and ``demo`` to the subcommands ``sub`` of ``zbound``."""
    bench = sub.add_parser(
        "bench", help="run a benchmark suite ('zbound bench list' lists them)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run a benchmark suite. Writes DIR/SUITE.json (one record per task, data set, "
            "setting and method), DIR/SUITE.md (tables, paper comparison) and PNG plots into "
            "DIR, and prints the path of every file written. Data sets that need the "
            "benchmark data are skipped, with one message, until it is fetched "
            "('zbound data fetch --all') or ZBOUND_DATA names a directory holding it.", 79),
        epilog="suites:\n" + "\n".join(_suite_lines()) + "\n\n" + textwrap.fill(
            "The --quick times were measured on a 2-core machine with one run of each suite; "
            "a full run takes several times longer.", 79))
    bench.add_argument("suite", metavar="SUITE", help="a suite name (see below), or 'list'")
    bench.add_argument("--quick", action="store_true",
                       help="reduced run (fewer start points, repeats and settings; every "
                            "method and peer kept)")
    bench.add_argument("--out", default="bench-out", metavar="DIR",
                       help="output directory (default bench-out)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bars")
    bench.set_defaults(func=_bench)

    report = sub.add_parser(
        "report", help="write the report of saved benchmark records again",
        description=textwrap.fill(
            "Write DIR/SUITE.md and its PNG plots again from the records of a run "
            "(SUITE.json, or SUITE.json.gz), as 'zbound bench' wrote them: the suite's own "
            "sections, then every method table, with the machine and date of the run.", 79))
    report.add_argument("records", nargs="+", metavar="SUITE.json",
                        help="records written by 'zbound bench'")
    report.add_argument("--out", default="bench-out", metavar="DIR",
                        help="output directory (default bench-out)")
    report.set_defaults(func=_report)

    demo = sub.add_parser(
        "demo", help="the main job on bundled data: fits, comparisons, report",
        description="Bound on log Z along a line, BoundLogisticRegression against "
                    "scikit-learn, every solver on one objective, and Ising log-partition "
                    "bounds. Needs no data directory. Writes DIR/report.md and PNG figures and "
                    "prints the path of every file written; about 20 s on 2 cores.")
    demo.add_argument("--out", default="demo-out", metavar="DIR",
                      help="output directory (default demo-out)")
    demo.set_defaults(func=_demo)
