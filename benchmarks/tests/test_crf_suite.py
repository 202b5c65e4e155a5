"""The crf suite on a tiny config: every method and peer recorded, the objective mapping holds."""

import json

import pytest

pytest.importorskip("pycrfsuite", reason="the crf suite compares with python-crfsuite")


@pytest.mark.slow
@pytest.mark.data
def test_crf_suite_tiny(tmp_path, monkeypatch):
    from zbound_benchmarks import suites  # noqa: F401
    from zbound_benchmarks.runner import run_suite
    from zbound_benchmarks.suites.crf import tiny

    doc = run_suite("crf", quick=True, out=tmp_path, show_progress=False,
                    options={"config": tiny()})
    methods = {r["method"] for r in doc["records"] if r["task"] == "train"}
    assert methods == {"crfsuite-lbfgs", "crfsuite-l2sgd", "zbound-lbfgs-bound", "zbound-bound",
                       "zbound-newton-bound", "zbound-lbfgs", "zbound-sgd", "zbound-partial_fit",
                       "zbound-lbfgs-bound-2threads"}
    assert {r["method"] for r in doc["records"] if r["task"] == "forward-backward"} == \
        {"n_jobs=1", "n_jobs=2"}
    cs = next(r for r in doc["records"] if r["method"] == "crfsuite-lbfgs")
    # CRFsuite's weights evaluated under our objective give CRFsuite's own loss
    assert cs["metrics"]["objective_check_rel"] < 1e-4
    for method in ("zbound-bound", "zbound-lbfgs-bound", "zbound-newton-bound"):
        rec = next(r for r in doc["records"] if r["method"] == method)
        fs = [f for _, f in rec["metrics"]["trace"]]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(fs, fs[1:]))     # monotone
    default = next(r for r in doc["records"] if r["default"])
    assert default["method"] == "zbound-lbfgs-bound"
    for r in doc["records"]:
        if r["task"] != "train":
            continue
        assert 0.0 <= r["metrics"]["test_accuracy"] <= 1.0
    md = (tmp_path / "crf.md").read_text()
    assert "Table 1" in md
    json.dumps(doc)
    assert "Targets, from these numbers" in md and "partial_fit" in md
    assert (tmp_path / "crf-convergence.png").exists()
    # peak memory of CRFsuite, fit and streaming partial_fit, each in a fresh process
    mem = {r["method"]: r["metrics"]["peak_memory_mb"] for r in doc["records"]
           if r["task"] == "memory"}
    assert set(mem) == {"crfsuite-lbfgs", "zbound-lbfgs-bound", "zbound-partial_fit"}
    assert all(v >= 0 for v in mem.values())
