"""Command line: ``zbound demo`` and ``zbound bench SUITE [--quick] [--out DIR]``."""

from __future__ import annotations

import argparse
import sys


def _bench(args: argparse.Namespace) -> int:
    from zbound.bench.runner import SUITES, run_suite

    if args.suite == "list":
        for name in sorted(SUITES):
            print(name)
        return 0
    try:
        doc = run_suite(args.suite, quick=args.quick, out=args.out,
                        show_progress=not args.no_progress)
    except ValueError as exc:
        print(f"zbound bench: {exc}", file=sys.stderr)
        return 2
    print(f"{len(doc['records'])} records written to {args.out}/{args.suite}.json "
          f"and {args.out}/{args.suite}.md")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from zbound.demo import run_demo

    run_demo(out=args.out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zbound", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    bench = sub.add_parser("bench", help="run a benchmark suite ('list' lists them)")
    bench.add_argument("suite")
    bench.add_argument("--quick", action="store_true", help="reduced run, minutes on 2 cores")
    bench.add_argument("--out", default="bench-out", help="output directory (default bench-out)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bars")
    bench.set_defaults(func=_bench)

    demo = sub.add_parser("demo", help="the main job on bundled data: fits, comparisons, report")
    demo.add_argument("--out", default="demo-out", help="output directory (default demo-out)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
