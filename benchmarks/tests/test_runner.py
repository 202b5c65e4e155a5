"""The benchmark plumbing: records JSON contract, incremental writing, tables, timing, CLI."""

from __future__ import annotations

import json
import math
import sys
import types

import numpy as np
import pytest

from zbound import cli
from zbound_benchmarks import runner
from zbound_benchmarks.records import REQUIRED_FIELDS, RecordWriter, read_suite
from zbound_benchmarks.report import method_table, write_report
from zbound_benchmarks.timing import time_alternating


def _add(writer, method, t, peer=False, default=False, reached=True, **kw):
    return writer.add(task="t", dataset="d", setting="s=1", method=method, peer=peer,
                      default=default, reached=reached, time_to_target_s=t, evaluations=3,
                      final_objective=1.0, target_objective=1.5,
                      metrics={"iterations": 2, **kw})


def test_writer_json_has_contract_fields(tmp_path):
    w = RecordWriter("demo", quick=True, out=tmp_path)
    _add(w, "ours", 0.5, default=True)
    doc = json.loads((tmp_path / "demo.json").read_text())
    assert doc["suite"] == "demo" and doc["quick"] is True
    assert {"cpu_count", "python", "numpy", "scipy", "sklearn"} <= set(doc["machine"])
    (rec,) = doc["records"]
    assert set(REQUIRED_FIELDS) <= set(rec)
    assert rec["default"] is True and rec["peer"] is False
    assert rec["metrics"]["iterations"] == 2


def test_machine_record_names_cpu_blas_and_date(tmp_path):
    """Measurements carry their machine and date: the record names the CPU, the BLAS
    libraries with their kernel family, and the UTC time of the run; the report's header
    says them."""
    import datetime
    import re

    from zbound_benchmarks.records import machine_info
    from zbound_benchmarks.report import write_report

    m = machine_info()
    stamp = datetime.datetime.strptime(m["date"], "%Y-%m-%d %H:%M UTC")
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert abs((now - stamp).total_seconds()) < 600
    assert m["blas"] is None or re.search(r"\d+\.\d+", m["blas"])
    w = RecordWriter("demo", quick=True, out=tmp_path)
    _add(w, "ours", 0.5, default=True)
    doc = json.loads((tmp_path / "demo.json").read_text())
    assert doc["machine"]["date"] and "cpu" in doc["machine"] and "blas" in doc["machine"]
    write_report(doc, tmp_path)
    head = (tmp_path / "demo.md").read_text().splitlines()[2]
    assert head.startswith("Machine: ") and f"Run {doc['machine']['date']}." in head
    if doc["machine"]["blas"]:
        assert f"BLAS: {doc['machine']['blas']}" in head


def test_writer_fills_neutral_values_and_cleans_numpy(tmp_path):
    w = RecordWriter("demo", quick=False, out=tmp_path)
    rec = w.add(task="t", dataset="d", setting="s", method="m",
                final_objective=np.float64(2.5), metrics={"a": np.arange(3), "b": math.nan,
                                                          "c": np.int64(4)})
    assert rec["reached"] is False and rec["time_to_target_s"] is None
    assert rec["evaluations"] is None and rec["peer"] is False and rec["default"] is False
    assert rec["final_objective"] == 2.5 and type(rec["final_objective"]) is float
    assert rec["metrics"] == {"a": [0, 1, 2], "b": None, "c": 4}
    # the file is valid JSON (no NaN tokens)
    json.loads((tmp_path / "demo.json").read_text(), parse_constant=pytest.fail)


def test_writer_writes_after_every_record(tmp_path):
    w = RecordWriter("inc", quick=False, out=tmp_path)
    path = tmp_path / "inc.json"
    assert json.loads(path.read_text())["records"] == []
    for k in range(3):
        _add(w, f"m{k}", 0.1 * (k + 1))
        assert len(json.loads(path.read_text())["records"]) == k + 1
    w.set_extra("elapsed_s", 1.25)
    assert json.loads(path.read_text())["extra"] == {"elapsed_s": 1.25}
    assert not (tmp_path / "inc.json.tmp").exists()


def test_writer_rejects_bad_records(tmp_path):
    w = RecordWriter("bad", quick=False, out=tmp_path)
    with pytest.raises(ValueError, match="lacks fields"):
        w.add(task="t", dataset="d", method="m")
    with pytest.raises(ValueError, match="peer"):
        w.add(task="t", dataset="d", setting="s", method="m", peer=True, default=True)
    assert w.records == []


def test_method_table_ratios_and_order(tmp_path):
    w = RecordWriter("tab", quick=False, out=tmp_path)
    _add(w, "ours", 0.5, default=True)
    _add(w, "peer-a", 1.0, peer=True)
    _add(w, "peer-b", 2.0, peer=True)
    _add(w, "peer-c", None, peer=True, reached=False)
    table = method_table(w.records)
    lines = [ln for ln in table.splitlines() if ln.startswith("| ")]
    assert lines[0].startswith("| method |")
    body = lines[2:]
    names = [ln.split("|")[1].strip() for ln in body]
    assert names == ["**ours**", "peer-a", "peer-b", "peer-c"]  # fastest first, not reached last
    ratio = {n: ln.split("|")[6].strip() for n, ln in zip(names, body)}
    assert ratio["**ours**"] == "0.5" and ratio["peer-a"] == "1" and ratio["peer-b"] == "2"
    assert ratio["peer-c"] == "-"
    assert "### t / d / s=1" in table


def test_write_report_puts_suite_section_first(tmp_path):
    w = RecordWriter("rep", quick=True, out=tmp_path)
    _add(w, "ours", 0.5, default=True)
    path = write_report(w.to_dict(), tmp_path, extra=lambda doc, out: "## Suite section")
    text = path.read_text()
    assert path == tmp_path / "rep.md"
    assert text.startswith("# Benchmark suite `rep` (quick)")
    assert text.index("## Suite section") < text.index("## All records")


def test_time_alternating_round_robin_and_medians():
    calls = []
    fns = {"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2}
    out = time_alternating(fns, repeats=3)
    assert calls == ["a", "b"] * 3
    assert out["a"]["result"] == 1 and out["b"]["result"] == 2
    for e in out.values():
        assert len(e["times"]) == 3 and e["median_s"] == sorted(e["times"])[1]
    with pytest.raises(ValueError):
        time_alternating(fns, repeats=0)


def test_time_alternating_min_time_runs_short_calls_back_to_back():
    """A call shorter than min_time: its first call is not counted and sets the run length,
    then every repeat times a run of calls and records the time per call; a long call keeps
    one counted call a repeat. The methods still alternate."""
    import time

    calls = []

    def fast():
        calls.append("f")
        return "f"

    def slow():
        calls.append("s")
        time.sleep(0.004)
        return "s"

    out = time_alternating({"f": fast, "s": slow}, repeats=3, min_time=0.002)
    f, s = out["f"], out["s"]
    assert s["calls"] == 1 and len(s["times"]) == 3 and calls.count("s") == 3
    assert all(t >= 0.004 for t in s["times"])
    assert f["calls"] >= 2 and len(f["times"]) == 3
    assert calls.count("f") == 1 + 3 * f["calls"]
    assert max(f["times"]) < 0.004 and f["median_s"] == sorted(f["times"])[1]
    assert 0.0 < f["last_s"] < 0.004 <= s["last_s"]          # the last call's own time
    # alternating: the slow method's calls fall between runs of the fast one
    runs = "".join(calls)
    assert runs.startswith("fs") and runs.count("s") == 3 and "s" + "f" * f["calls"] + "s" \
        in runs
    with pytest.raises(ValueError, match="min_time"):
        time_alternating({"f": fast}, min_time=-1.0)


def test_run_suite_with_a_fake_suite(tmp_path, monkeypatch):
    mod = types.ModuleType("zbound_fake_suite")

    def run(ctx):
        ctx.start("fake", total=2)
        for k in range(2):
            _add(ctx.writer, f"m{k}", 0.1 + k, peer=k == 1, default=k == 0)
            ctx.advance()

    mod.run = run
    mod.report = lambda doc, out: f"## Fake report with {len(doc['records'])} records"
    monkeypatch.setitem(sys.modules, "zbound_fake_suite", mod)
    monkeypatch.setitem(runner.SUITES, "fake", "zbound_fake_suite")
    doc = runner.run_suite("fake", quick=True, out=tmp_path, show_progress=False)
    assert len(doc["records"]) == 2 and doc["extra"]["elapsed_s"] >= 0
    on_disk = json.loads((tmp_path / "fake.json").read_text())
    assert on_disk["records"] == doc["records"]
    assert "## Fake report with 2 records" in (tmp_path / "fake.md").read_text()


def _fake_suite(monkeypatch, run, **attrs):
    mod = types.ModuleType("zbound_fake_suite2")
    mod.run = run
    for k, v in attrs.items():
        setattr(mod, k, v)
    monkeypatch.setitem(sys.modules, "zbound_fake_suite2", mod)
    monkeypatch.setitem(runner.SUITES, "fake2", "zbound_fake_suite2")
    return mod


def test_run_suite_passes_methods_and_options(tmp_path, monkeypatch):
    seen = {}

    def run(ctx):
        seen["methods"], seen["options"] = ctx.methods, ctx.options
        _add(ctx.writer, "m", 0.1, default=True)

    _fake_suite(monkeypatch, run, ACCEPTS_METHODS=True, OPTIONS=("size",))
    runner.run_suite("fake2", quick=True, out=tmp_path, show_progress=False,
                     methods=["newton"], options={"size": 3})
    assert seen == {"methods": ("newton",), "options": {"size": 3}}


def test_run_suite_rejects_bad_methods_and_options_before_writing(tmp_path, monkeypatch):
    _fake_suite(monkeypatch, lambda ctx: pytest.fail("must not run"), ACCEPTS_METHODS=True)
    with pytest.raises(ValueError, match="not registered in zbound.solvers.METHODS"):
        runner.run_suite("fake2", out=tmp_path, show_progress=False, methods=["no-such"])
    with pytest.raises(ValueError, match="has no options"):
        runner.run_suite("fake2", out=tmp_path, show_progress=False, options={"size": 1})
    with pytest.raises(TypeError, match="method names"):
        runner.run_suite("fake2", out=tmp_path, show_progress=False, methods=[3])
    monkeypatch.setattr(sys.modules["zbound_fake_suite2"], "ACCEPTS_METHODS", False)
    with pytest.raises(ValueError, match="does not take extra methods"):
        runner.run_suite("fake2", out=tmp_path, show_progress=False, methods=["newton"])
    assert not (tmp_path / "fake2.json").exists()


def test_interrupted_run_keeps_every_record(tmp_path, monkeypatch):
    def run(ctx):
        for k in range(3):
            _add(ctx.writer, f"m{k}", 0.1)
        raise KeyboardInterrupt

    _fake_suite(monkeypatch, run)
    with pytest.raises(KeyboardInterrupt):
        runner.run_suite("fake2", out=tmp_path, show_progress=False)
    doc = read_suite(tmp_path / "fake2.json")
    assert [r["method"] for r in doc["records"]] == ["m0", "m1", "m2"]


def test_cli_bench_list(capsys):
    assert cli.main(["bench", "list"]) == 0
    names = capsys.readouterr().out.split()
    assert set(runner.SUITES) <= set(names) and "logreg-small" in names


def test_cli_unknown_suite(capsys, tmp_path):
    assert cli.main(["bench", "no-such-suite", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark suite 'no-such-suite'" in err and "logreg-small" in err


def test_load_suite_unknown_raises():
    with pytest.raises(ValueError, match="known suites"):
        runner.load_suite("nope")
