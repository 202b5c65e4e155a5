"""The drawing of the house (docs/architecture.md): imports run only from a higher layer to a
lower one, and the module import graph has no circle. ``from pkg import sub`` counts as an
import of the submodule ``pkg.sub``; imports inside functions count too."""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"

#: layer of each package or module (the longest matching prefix decides); a module may import
#: its own package and anything in a lower layer
LAYERS = {
    "zbound.utils": 0, "zbound.datasets": 0,
    "zbound.bounds": 1, "zbound.constraints": 1,
    "zbound.models": 2, "zbound.structured": 2,
    "zbound.solvers": 3,
    "zbound.distributed": 4, "zbound.ising": 4, "zbound.moe": 4,
    "zbound.estimators": 5, "zbound": 5,           # the package facade re-exports estimators
    "zbound.cli": 6,
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = ROOT / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _imports():
    """(importing module, imported module, imported name or None) for every import of zbound
    in zbound, relative ones resolved and those inside functions included."""
    for path in ROOT.joinpath("zbound").rglob("*.py"):
        mod = _module(path)
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] == "zbound":
                    for alias in node.names:
                        yield mod, target, alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "zbound":
                        yield mod, alias.name, None


def _graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for mod, target, name in _imports():
        sub = target if name is None else f"{target}.{name}"
        edges[mod].add(sub if _is_module(sub) else target)
    return edges


def _layer(name: str) -> tuple[str, int]:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        key = ".".join(parts[:k])
        if key in LAYERS:
            return key, LAYERS[key]
    raise AssertionError(f"{name} has no layer in LAYERS")


def test_no_import_runs_up():
    upward = []
    for mod, targets in _graph().items():
        own, level = _layer(mod)
        for t in targets:
            other, t_level = _layer(t)
            if other != own and t_level > level:
                upward.append(f"{mod} -> {t}")
    assert not upward, upward


def test_no_import_circle():
    graph = _graph()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:                       # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_private_module_or_name_across_packages():
    """A private module or name (leading underscore) is used only inside the package that holds
    it: ``zbound.a._b`` and ``zbound.a.b._c`` only by modules under ``zbound.a``."""
    crossing = []
    for mod, target, name in _imports():
        parts = target.split(".") + ([] if name is None else [name])
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:i]) if _is_module(".".join(parts[:i + 1])) \
                    else ".".join(parts[:i - 1])
                if not (mod == owner or mod.startswith(owner + ".")):
                    crossing.append(f"{mod} -> {target}")
                break
    assert not crossing, crossing


def test_the_library_never_imports_its_benchmarks():
    """The benchmarks are a distribution of their own (benchmarks/, package zbound_benchmarks)
    that the library's wheel does not hold: the library reaches its commands only through the
    ``zbound.commands`` entry points."""
    hits = []
    for path in ROOT.joinpath("zbound").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            hits += [f"{path.relative_to(ROOT)}: {n}" for n in names
                     if n.split(".")[0] == "zbound_benchmarks"]
    assert not hits, hits
    assert not ROOT.joinpath("zbound", "bench").exists()


def test_estimators_ask_the_solver_policy_not_each_other():
    """An estimator reads no sibling estimator (only the shared ``_params``): which solver runs
    is decided by ``zbound.solvers.policy``."""
    crossing = []
    for mod, target, name in _imports():
        if not mod.startswith("zbound.estimators.") or mod.endswith("__init__"):
            continue
        sub = target if name is None else f"{target}.{name}"
        for t in (target, sub):
            if t.startswith("zbound.estimators.") and t != mod and \
                    t not in ("zbound.estimators._params",) and _is_module(t):
                crossing.append(f"{mod} -> {t}")
    assert not crossing, crossing


#: what a measurement looks like in prose: a date, a percentage, "N x faster", "several times
#: slower", "measured", a speed-up, a time with its unit
MEASUREMENT = re.compile(
    r"\b20\d\d-[01]\d-[0-3]\d\b|\b\d+(\.\d+)?\s?%|"
    r"\b\d+(\.\d+)?\s?x\s+(faster|slower|more|less|cheaper)\b|"
    r"\b(several|many|\d+)\s+times\s+(faster|slower)\b|\bmeasured\b|\bspeed-?ups?\b|"
    r"\b\d+(\.\d+)?\s(s|sec)\b|\b\d+(\.\d+)?\s?(ms|us|µs|ns|seconds?|minutes?|hours?)\b",
    re.IGNORECASE)


def test_library_text_carries_no_timings_or_dates():
    """Measurements live in bench records, where they have a machine and a date; library code
    says why, not how fast it was once (such lines go stale). Every comment and string of the
    library is read, the command line included."""
    import io
    import tokenize

    src = ROOT / "zbound"
    hits = []
    for p in src.rglob("*.py"):
        for tok in tokenize.generate_tokens(io.StringIO(p.read_text()).readline):
            if tok.type in (tokenize.COMMENT, tokenize.STRING):
                hits += [f"{p.relative_to(src)}:{tok.start[0] + k}: {line.strip()}"
                         for k, line in enumerate(tok.string.splitlines())
                         if MEASUREMENT.search(line)]
    assert not hits, hits


def test_the_measurement_pattern_catches_what_it_names():
    for text in ("35% faster", "2.5x faster", "costs 5x more", "several times slower",
                 "as measured on", "takes 0.4 ms", "in 12.1 s", "about 3 minutes", "2026-11-30",
                 "a speed-up"):
        assert MEASUREMENT.search(text), text
    for text in ("the stationarity measure", "'1990s' -> 'dx'", "x faster than y", "s = 0.5"):
        assert not MEASUREMENT.search(text), text


#: the forms a log-sum-exp, log-mean-exp or softmax takes when written by hand
HAND_LSE = re.compile(r"np\.log\(np\.sum\(np\.exp|log1p\(np\.mean\(np\.expm1|\blog\(\w+ / n\)|"
                      r"np\.exp\((\w+) - \1\.max\(|\b(\w*max|mx|top)\b \+ np\.log\(|"
                      r"np\.log\(\w+\) \+ (\w*max|mx|top)\b")
#: chain.py's scaled forward-backward recursions shift their messages and multiply by
#: exp(T - max T): a log-matrix product, one message at a time, not a log-sum-exp
RECURSIONS = {"scaled_chunk", "_fwd_factors", "bwd_apply"}


def test_every_log_sum_exp_goes_through_the_log_space_module():
    """log-sum-exp, log-mean-exp and softmax are written once, in zbound.utils.logspace
    (where log(Z / n) keeps its digits); no module computes them by hand."""
    src = ROOT / "zbound"
    hits = []
    for p in src.rglob("*.py"):
        if p.relative_to(src).as_posix() == "utils/logspace.py":
            continue
        text = p.read_text()
        owners = {}
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                for line in range(node.lineno, node.end_lineno + 1):
                    owners.setdefault(line, []).append(node.name)
        for i, line in enumerate(text.splitlines(), 1):
            if HAND_LSE.search(line) and not RECURSIONS & set(owners.get(i, [])):
                hits.append(f"{p.relative_to(src)}:{i}: {line.strip()}")
    assert not hits, hits


def test_one_backtracking_loop():
    """Solvers step back along a direction through zbound.solvers.linesearch only: no loop of
    its own that halves or shrinks a step length."""
    src = Path(__file__).resolve().parents[1] / "src" / "zbound"
    pattern = re.compile(r"\b(s|t|step|alpha|eta)\s*\*=\s*0\.5\b|interpolated_step\(")
    hits = [f"{p.relative_to(src)}:{i}" for p in src.rglob("*.py") if p.name != "linesearch.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_one_squarem():
    """Every SQUAREM cycle extrapolates through zbound.solvers.majorization.squarem_extrapolate:
    the steplength and the extrapolation x0 - 2 alpha r + alpha^2 v are written once."""
    src = Path(__file__).resolve().parents[1] / "src" / "zbound"
    pattern = re.compile(r"alpha \* alpha\) \* v|squarem_steplength\(")
    hits = sorted({str(p.relative_to(src)) for p in src.rglob("*.py")
                   for line in p.read_text().splitlines() if pattern.search(line)})
    assert hits == ["solvers/majorization.py"], hits


def test_counted_models_are_never_unwrapped_nor_counted_by_hand():
    """Solvers ask a CountedModel what its model can do, and report work done outside the
    model's methods with CountedModel.count; they never reach for the wrapped model or poke
    its counters."""
    src = Path(__file__).resolve().parents[1] / "src" / "zbound"
    pattern = re.compile(r'getattr\(model, "model"|\bmodel\.model\b|'
                         r"\bmodel\.n_(value|value_and_grad|value_grad_hessian|hessian|bound)"
                         r"\s*\+=")
    hits = [f"{p.relative_to(src)}:{i}" for p in src.rglob("*.py")
            if p.relative_to(src).as_posix() != "solvers/base.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_long_functions_say_why():
    """No library function is over 80 lines, its docstring included, unless its docstring
    says why it is kept as one function."""
    src = Path(__file__).resolve().parents[1] / "src" / "zbound"
    long = []
    for p in src.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node) or ""
            size = node.end_lineno - node.lineno + 1
            if size > 80 and "Kept as one function" not in doc:
                long.append(f"{p.relative_to(src)}:{node.lineno} {node.name} ({size} lines)")
    assert not long, long
