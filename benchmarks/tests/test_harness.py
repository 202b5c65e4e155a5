"""The declarative harness: cells in, one record per method out; the renderer's pieces."""

from __future__ import annotations

import json
import warnings

import pytest

from zbound_benchmarks.harness import Cell, Curve, Method, fit, measure, quiet, run_cells, timed
from zbound_benchmarks.records import RecordWriter
from zbound_benchmarks.report import num, prose, table


class _Ctx:
    def __init__(self, writer):
        self.writer, self.advanced = writer, 0

    def advance(self):
        self.advanced += 1


def test_a_cell_gives_one_record_per_method_with_its_score(tmp_path):
    calls = {"a": 0, "b": 0}

    def make(name):
        def call():
            calls[name] += 1
            return name * 3
        return call

    def score(timing):
        base = timing["b"]["median_s"]
        return {n: {"metrics": {"ratio": e["median_s"] / base, "result": e["result"]},
                    "final_objective": 1.0 if n == "a" else 2.0} for n, e in timing.items()}

    writer = RecordWriter("h", quick=True, out=tmp_path)
    ctx = _Ctx(writer)
    cells = [Cell("t", "d", f"s={i}", [Method("a", make("a"), default=True),
                                       Method("b", make("b"), peer=True)], score,
                  memory=i == 0) for i in range(2)]
    run_cells(ctx, cells, repeats=3)
    recs = json.loads((tmp_path / "h.json").read_text())["records"]
    assert [(r["setting"], r["method"]) for r in recs] == [
        ("s=0", "a"), ("s=0", "b"), ("s=1", "a"), ("s=1", "b")]
    assert ctx.advanced == 2
    for r in recs:
        m = r["metrics"]
        assert r["default"] == (r["method"] == "a") and r["peer"] == (r["method"] == "b")
        assert r["reached"] and r["time_to_target_s"] >= 0 and len(m["times_s"]) == 3
        assert m["result"] == r["method"] * 3 and r["final_objective"] in (1.0, 2.0)
        assert (m["peak_memory_mb"] is None) == (r["setting"] == "s=1")
    assert calls == {"a": 7, "b": 7}      # 3 timed and 1 traced in the first cell, 3 in the next


def test_measure_alternates_and_silences_warnings():
    order = []

    def noisy(name):
        def call():
            order.append(name)
            warnings.warn("noise", RuntimeWarning, stacklevel=1)
            return name
        return call

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timing = measure({"x": noisy("x"), "y": noisy("y")}, repeats=2, memory=False)
    assert order == ["x", "y", "x", "y"]
    assert timing["x"]["result"] == "x" and timing["y"]["peak_mb"] is None
    with pytest.raises(RuntimeWarning):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            noisy("z")()
    assert quiet(noisy("q"))() == "q"


def test_fit_timed_and_curve():
    class Est:
        def fit(self, X, y, w=None):
            self.seen = (X, y, w)
            return self

    est = fit(Est, 1, 2, w=3)()
    assert est.seen == (1, 2, 3)
    seconds, out = timed(lambda: 5)
    assert out == 5 and seconds >= 0
    curve = Curve()
    curve(3.0)
    curve(1)
    assert [f for _, f in curve.points] == [3.0, 1.0]
    assert curve.points[0][0] <= curve.points[1][0] <= curve.elapsed()
    curve.restart()
    assert curve.points == []


def test_table_num_and_prose():
    assert table(("a", "b"), [(1, num(None)), ("x", num(0.12345, ".2f"))]) == [
        "| a | b |", "| --- | --- |", "| 1 | - |", "| x | 0.12 |"]
    assert num([1.0, None], ".1f") == "1.0, -" and num(None, missing="") == ""
    # a template paragraph wrapped for reading is one line in the report
    text = prose("estimators", "ratio-claim", limit=10, peer="LogisticRegression")
    assert "\n" not in text and "at most 10x one `LogisticRegression` fit" in text
    with pytest.raises(KeyError):
        prose("estimators", "no-such-section")


def test_ratio_to_and_the_documented_example_run(tmp_path):
    """The example of docs/benchmarks.md, on a small data set: two records, the peer's ratio 1."""
    from sklearn.datasets import load_wine
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from zbound import LatentLogisticRegression
    from zbound_benchmarks.harness import ratio_to

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    writer = RecordWriter("doc", quick=True, out=tmp_path)
    cells = [Cell("latent", "wine", "n_components=2", [
        Method("sklearn-logistic", fit(LogisticRegression, X, y), peer=True),
        Method("zbound-latent", fit(lambda: LatentLogisticRegression(random_state=0), X, y),
               default=True)], ratio_to("sklearn-logistic"), memory=False)]
    run_cells(_Ctx(writer), cells, repeats=1)
    peer, ours = writer.to_dict()["records"]
    assert peer["metrics"]["ratio_to_peer"] == 1.0 and peer["peer"]
    assert ours["default"] and ours["metrics"]["ratio_to_peer"] > 0


def _bench_sources():
    from pathlib import Path

    import zbound_benchmarks

    root = Path(zbound_benchmarks.__file__).parent
    return root, {p: p.read_text() for p in root.rglob("*.py")}


def test_every_markdown_table_comes_from_the_renderer():
    """One renderer: no suite writes a table's rule line by hand."""
    import re

    root, sources = _bench_sources()
    rule = re.compile(r"""["'][^"'\n]*(\| ---|\|---| --- \|)""")
    hand = [f"{p.relative_to(root)}:{text[:m.start()].count(chr(10)) + 1}"
            for p, text in sources.items() if p.name != "report.py" or p.parent != root
            for m in rule.finditer(text)]
    assert hand == []


def test_every_prose_section_is_used_and_exists():
    """Each prose(suite, section) call names a section of templates/SUITE.md, and each section
    of a template is used somewhere (no dead prose)."""
    import re

    from zbound_benchmarks.report import _templates

    root, sources = _bench_sources()
    calls = {(m.group(1), m.group(2)) for text in sources.values()
             for m in re.finditer(r'prose\(\s*"([\w-]+)",\s*"([\w.-]+)"', text)}
    suites = {s for s, _ in calls}
    assert {p.stem for p in (root / "templates").glob("*.md")} == suites
    for suite in suites:
        sections = set(_templates(suite))
        used = {name for s, name in calls if s == suite}
        assert used == sections, (suite, used ^ sections)
