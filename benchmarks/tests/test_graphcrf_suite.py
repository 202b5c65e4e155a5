"""The graphcrf suite at a size of seconds: its records, verdicts and report."""

import json

import pytest

from zbound_benchmarks import runner
from zbound_benchmarks.suites import graphcrf


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("graphcrf")
    doc = runner.run_suite("graphcrf", quick=True, out=out, show_progress=False,
                           options={"config": graphcrf.tiny()})
    return doc, out


def test_inference_records_find_no_mismatch(tiny_run):
    doc, out = tiny_run
    on_disk = json.loads((out / "graphcrf.json").read_text())
    assert on_disk["records"] == doc["records"]
    inf = [r for r in doc["records"] if r["task"] == "inference"]
    assert {r["dataset"].split("/")[1] for r in inf} == set(graphcrf.runs.FAMILIES)
    assert sum(r["metrics"]["graphs"] for r in inf) == graphcrf.tiny().inference_graphs
    assert all(r["reached"] and r["metrics"]["mismatches"] == 0 for r in inf)
    assert doc["extra"]["forest_mismatches"] == 0
    md = (out / "graphcrf.md").read_text()
    assert "0 mismatches beyond 1e-09 in 24 graphs" in md


def test_medium_graphs_agree_with_pgmpy(tiny_run):
    pytest.importorskip("pgmpy", reason="pgmpy is the peer of the medium graphs: "
                        "pip install 'zbound[pgmpy]'")
    doc, out = tiny_run
    med = [r for r in doc["records"] if r["task"] == "inference-medium"]
    ours = [r for r in med if r["method"] == "junction-tree"]
    assert {r["dataset"].split("/")[1] for r in ours} == set(graphcrf.runs.MEDIUM_FAMILIES)
    assert sum(r["metrics"]["graphs"] for r in ours) == graphcrf.tiny().medium_graphs
    for r in ours:
        m = r["metrics"]
        assert r["reached"] and m["mismatches"] == 0 and m["map_short"] == 0
        assert m["logz_rel"] <= 1e-9 and m["max_nodes"] >= 12 and m["pgmpy_seconds"] > 0
    assert {r["method"] for r in med} == {"junction-tree", "pgmpy-bp"}
    assert "0 mismatches beyond 1e-09 in 4 graphs against pgmpy" in \
        (out / "graphcrf.md").read_text()


def test_skip_chain_and_scaling_records(tiny_run):
    doc, out = tiny_run
    md = (out / "graphcrf.md").read_text()
    skip = {r["method"]: r for r in doc["records"] if r["task"] == "skip-chain"}
    if not skip:                                   # no CoNLL-2002 data here
        assert "Not run" in md
    else:
        assert {"chaincrf", "chaincrf-lbfgs", "graphcrf-chain", "graphcrf-skip"} <= set(skip)
        for r in skip.values():
            assert 0.0 <= r["metrics"]["f1"] <= 1.0 and r["metrics"]["fit_s"] > 0
        # the same chains, the same objective, the same solver: the same fit
        assert skip["graphcrf-chain"]["final_objective"] == pytest.approx(
            skip["chaincrf"]["final_objective"], rel=1e-9)
        assert "GraphCRF on chains:" in md and "Skip chain against the chain CRF" in md
    scaling = [r for r in doc["records"] if r["task"] == "scaling"]
    assert sorted(r["metrics"]["treewidth"] for r in scaling) == [1, 2]
    assert "One pass against treewidth" in md


def test_without_pgmpy_the_report_says_the_medium_graphs_were_not_run(tmp_path, monkeypatch):
    from zbound.utils import extras

    real = extras.require

    def no_pgmpy(module, what):
        if module == "pgmpy":
            raise ImportError(f"{what} needs pgmpy, which is not installed")
        return real(module, what)

    monkeypatch.setattr(extras, "require", no_pgmpy)
    cfg = graphcrf.tiny()
    cfg.corpus = (0, 0)
    doc = runner.run_suite("graphcrf", quick=True, out=tmp_path, show_progress=False,
                           options={"config": cfg})
    assert not [r for r in doc["records"] if r["task"] == "inference-medium"]
    assert "Not run: pgmpy is not installed" in (tmp_path / "graphcrf.md").read_text()
