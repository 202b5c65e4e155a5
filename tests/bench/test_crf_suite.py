"""The crf suite on a tiny config: every method and peer recorded, the objective mapping holds."""

import json

import pytest

pytest.importorskip("pycrfsuite", reason="the crf suite compares with python-crfsuite")


@pytest.mark.slow
def test_crf_suite_tiny(tmp_path, monkeypatch):
    from zbound.bench import suites  # noqa: F401
    from zbound.bench.runner import run_suite
    from zbound.bench.suites.crf import tiny

    doc = run_suite("crf", quick=True, out=tmp_path, show_progress=False,
                    options={"config": tiny()})
    methods = {r["method"] for r in doc["records"]}
    assert methods == {"crfsuite-lbfgs", "crfsuite-l2sgd", "zbound-bound", "zbound-lbfgs",
                       "zbound-sgd", "zbound-partial_fit"}
    cs = next(r for r in doc["records"] if r["method"] == "crfsuite-lbfgs")
    # CRFsuite's weights evaluated under our objective give CRFsuite's own loss
    assert cs["metrics"]["objective_check_rel"] < 1e-4
    bound = next(r for r in doc["records"] if r["method"] == "zbound-bound")
    fs = [f for _, f in bound["metrics"]["trace"]]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(fs, fs[1:]))     # monotone
    for r in doc["records"]:
        assert 0.0 <= r["metrics"]["test_accuracy"] <= 1.0
    md = (tmp_path / "crf.md").read_text()
    assert "Table 1" in md
    json.dumps(doc)
