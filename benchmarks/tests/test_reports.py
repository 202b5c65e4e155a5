"""Every suite's report renders whatever records a run produced: documents from each suite's
smallest run (without the benchmark data, so some data sets are skipped) and variants of them
holding every record kind a loaded machine or a short run produces: methods not timed or not
reaching their target, no peer reaching a target, times and memory not measured, a data set
dropped, a quick grid of one record per task. (The ising suite's variants run in its own test
module, on the run it already makes.)"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from test_without_data import _configs
from zbound_benchmarks.report import write_report
from zbound_benchmarks.runner import load_suite, run_suite

SUITES = ["logreg-small", "logreg-large", "latent", "moe", "stochastic", "scale", "chunked",
          "estimators", "sparse"]

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _not_timed(doc, peers_only=False):
    for r in doc["records"]:
        if peers_only and not r["peer"]:
            continue
        r["reached"] = False
        r["time_to_target_s"] = None
        r["evaluations"] = None
    return doc


_UNMEASURED = ("time", "seconds", "_s", "speedup", "memory", "_mb", "iterations")


def _metrics_missing(doc):
    """What a method that was not run to the end lacks: its times, speed-ups, memory peaks,
    iteration counts and final objective."""
    for r in doc["records"]:
        for k, v in list(r["metrics"].items()):
            if isinstance(v, int | float) and not isinstance(v, bool) \
                    and any(s in k for s in _UNMEASURED):
                r["metrics"][k] = None
        r["final_objective"] = None
    return doc


def _one_per_task(doc):
    seen, keep = set(), []
    for r in doc["records"]:
        if r["task"] not in seen:
            seen.add(r["task"])
            keep.append(r)
    doc["records"] = keep
    doc["quick"] = True
    return doc


def _drop_a_dataset(doc):
    names = sorted({r["dataset"] for r in doc["records"]})
    if names:
        doc["records"] = [r for r in doc["records"] if r["dataset"] != names[0]]
        doc.setdefault("extra", {}).setdefault("skipped_datasets", {})[names[0]] = "missing."
    return doc


def _half_not_timed(doc):
    for r in doc["records"][::2]:
        r["reached"] = False
        r["time_to_target_s"] = None
    return doc


VARIANTS = {
    "as run": lambda d: d,
    "nothing timed": _not_timed,
    "no peer reached": lambda d: _not_timed(d, peers_only=True),
    "half not timed": _half_not_timed,
    "times and memory not measured": _metrics_missing,
    "quick grid": _one_per_task,
    "a data set dropped": _drop_a_dataset,
    "no records": lambda d: dict(d, records=[]),
}


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    docs = {}
    for suite in SUITES:
        if suite == "scale":
            pytest.importorskip("distributed", reason="the scale suite runs on Dask")
        out = tmp_path_factory.mktemp(suite)
        if suite == "chunked":
            docs[suite] = run_suite(suite, quick=True, out=out, show_progress=False)
            continue
        docs[suite] = run_suite(suite, quick=True, out=out, show_progress=False,
                                options={"config": _configs()[suite][0]})
    return docs


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_report_renders_every_record_kind(documents, suite, variant, tmp_path):
    doc = VARIANTS[variant](copy.deepcopy(documents[suite]))
    path = write_report(doc, tmp_path, extra=getattr(load_suite(suite), "report", None))
    text = path.read_text()
    assert text.startswith(f"# Benchmark suite `{suite}`")
    assert "could not be written" not in text


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_crf_report_renders_every_record_kind(variant, tmp_path_factory):
    """The crf suite reads only benchmark corpora: its smallest run needs the data."""
    pytest.importorskip("pycrfsuite", reason="the crf suite compares with python-crfsuite")
    global _CRF_DOC
    if _CRF_DOC is None:
        from zbound_benchmarks.suites.crf import tiny

        _CRF_DOC = run_suite("crf", quick=True, out=tmp_path_factory.mktemp("crf"),
                             show_progress=False, options={"config": tiny()})
    out = tmp_path_factory.mktemp("crf-report")
    doc = VARIANTS[variant](copy.deepcopy(_CRF_DOC))
    text = write_report(doc, out, extra=load_suite("crf").report).read_text()
    assert "could not be written" not in text


_CRF_DOC = None


def test_the_performance_pages_have_records():
    """Every suite page of the site is generated from records of a run kept in docs/bench."""
    from zbound_benchmarks.records import read_suite

    paths = sorted((DOCS / "bench").glob("*.json.gz"))
    assert paths
    for path in paths:
        doc = read_suite(path)
        assert doc["suite"] == path.name.removesuffix(".json.gz")
        assert doc["records"] and doc["machine"].get("date")
