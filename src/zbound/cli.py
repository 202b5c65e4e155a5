"""Command line of zbound: upper bounds on log-partition functions, and learning with them.

  zbound demo [--out DIR]                     the main job on bundled data (report in DIR)
  zbound bench SUITE [--quick] [--out DIR]    run a benchmark suite (tables and plots in DIR)
  zbound bench list                           the benchmark suites, with their --quick times
  zbound data list                            the benchmark data sets, sources and licences
  zbound data fetch NAME... | --all [--dir D] download benchmark data (checksummed)
  zbound --version                            the installed version

Every run prints the path of each file it wrote.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from importlib.metadata import entry_points


def _data(args: argparse.Namespace) -> int:
    from zbound.datasets import remote as F

    if args.action == "list":
        root = F.target_dir(args.dir)
        print(f"Benchmark data sets (fetched into {root}):")
        for s in F.SOURCES.values():
            have = all(F.verified(root / f.target, f.target) for f in s.files)
            print(f"\n  {s.name}  ({s.size_bytes / 2**20:.1f} MB{', fetched' if have else ''})")
            for label, text in (("", s.description), ("source: ", s.origin),
                                ("licence: ", s.licence), ("cite: ", s.citation)):
                print(textwrap.fill(label + text, 79, initial_indent="    ",
                                    subsequent_indent="      "))
        return 0
    names = list(F.SOURCES) if args.all else args.names
    if not names:
        print("zbound data fetch: name one or more data sets, or --all "
              f"(known: {', '.join(F.SOURCES)})", file=sys.stderr)
        return 2
    unknown = [n for n in names if n not in F.SOURCES]
    if unknown:
        print(f"zbound data fetch: unknown data set(s) {', '.join(unknown)}; known: "
              f"{', '.join(F.SOURCES)}", file=sys.stderr)
        return 2
    import logging

    import pooch

    pooch.get_logger().setLevel(logging.WARNING)
    root = F.target_dir(args.dir)
    for name in names:
        print(f"{name} ...", end=" ", flush=True)
        try:
            F.fetch(name, args.dir)
        except F.DataFetchError as exc:
            print("failed")
            print(f"zbound data fetch: {name}: {exc}", file=sys.stderr)
            return 1
        print("ok")
    print(f"Data in {root}" + ("" if args.dir or os.environ.get("ZBOUND_DATA") else
                               " (the loaders read it when ZBOUND_DATA is unset)") + ".")
    return 0


#: what installs the commands of the benchmarks distribution (zbound_benchmarks), which lives
#: beside the library in its source tree and is not part of the library's wheel
BENCHMARKS_INSTALL = "pip install ./benchmarks  (from a clone of the zbound repository)"
#: the commands that distribution adds, and what each does
BENCHMARK_COMMANDS = {
    "bench": "run a benchmark suite ('zbound bench list' lists them)",
    "report": "write the report of saved benchmark records again",
    "demo": "the main job on bundled data: fits, comparisons, report",
}


def _absent(args: argparse.Namespace) -> int:
    print(f"zbound {args.command} needs the zbound benchmarks, which are not installed: "
          f"{BENCHMARKS_INSTALL}", file=sys.stderr)
    return 2


def _plugins(sub: argparse._SubParsersAction) -> None:
    """Commands of installed distributions (entry point group ``zbound.commands``: a function
    that adds parsers to ``sub``); the benchmark commands that none added say how to get them."""
    for entry in entry_points(group="zbound.commands"):
        entry.load()(sub)
    for name, help_text in BENCHMARK_COMMANDS.items():
        if name not in sub.choices:
            absent = sub.add_parser(name, help=help_text, add_help=False)
            absent.add_argument("rest", nargs=argparse.REMAINDER)
            absent.set_defaults(func=_absent)


def _version() -> str:
    from zbound import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zbound", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"zbound {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    data = sub.add_parser(
        "data", help="list or download the benchmark data sets",
        description=textwrap.fill(
            "The benchmark data sets, downloaded from their public sources (or from "
            "ZBOUND_DATA_MIRROR/<set>/<file> when that variable is set), checked against "
            "their sha256, into DIR, else ZBOUND_DATA, else the user cache directory "
            "(ZBOUND_CACHE overrides it), where the loaders look when ZBOUND_DATA is unset.",
            79))
    data.add_argument("action", choices=("list", "fetch"), help="list the sets, or fetch some")
    data.add_argument("names", nargs="*", metavar="NAME", help="data sets to fetch")
    data.add_argument("--all", action="store_true", help="fetch every set (about 13 MB)")
    data.add_argument("--dir", default=None, metavar="DIR", help="where to put the data")
    data.set_defaults(func=_data)

    _plugins(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:          # the reader of stdout went away (| head): not an error
        sys.stderr.close()
        return 0
    except OSError as exc:           # a file the command reads or writes: no traceback
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        print(f"zbound {args.command}:{where} {exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
