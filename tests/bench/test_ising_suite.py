import json

import pytest

from zbound.bench import runner
from zbound.bench.records import REQUIRED_FIELDS
from zbound.bench.suites import ising

TINY = {
    "draws": 2,
    "hier_max_n": 7,
    "coupling": [(5, "logdet", ("mixed",), (0.2,))],
    "greedy10_d": (),
    "relative_d": 20,
    "relative_w": (0.3,),
    "relative_draws": 1,
    "relative_ks": (),
    "temperatures": (1.0,),
    "gain_ks": (1,),
    "speed_d": (5,),
    "cp_d": (),
    "cp_iter_d": (10,),
    "cp_general_n": (12,),
    "greedy_k10_repeats": 0,
    "general_curve_n": 20,
    "general_curve_iter": 200,
    "curve_d": 10,
    "curve_draws": 1,
}


@pytest.fixture
def tiny_run(tmp_path, monkeypatch):
    monkeypatch.setattr(ising, "_config", lambda quick: dict(TINY))
    doc = runner.run_suite("ising", quick=True, out=tmp_path, show_progress=False)
    return doc, tmp_path


def test_ising_suite_writes_the_contract_fields_and_valid_bounds(tiny_run):
    doc, out = tiny_run
    on_disk = json.loads((out / "ising.json").read_text())
    assert on_disk["suite"] == "ising" and on_disk["quick"] is True
    assert on_disk["records"] == doc["records"]
    for rec in doc["records"]:
        for field in REQUIRED_FIELDS:
            assert field in rec, (field, rec["task"], rec["method"])
        assert not (rec["peer"] and rec["default"])
        assert {"bound", "exact", "iterations"} <= set(rec["metrics"]), rec["task"]
    coupling = [r for r in doc["records"] if r["task"] == "coupling" and "/d=5/" in r["dataset"]]
    methods = {r["method"] for r in coupling}
    assert {"quantum", "quantum-greedy-k3", "logdet", "trw", "exact"} <= methods
    for r in coupling:
        m = r["metrics"]
        assert {"bound", "exact"} <= set(m)
        if r["method"] in ("quantum", "quantum-greedy-k3", "logdet"):
            assert r["reached"] and m["violations"] == 0
            assert all(b >= e - 1e-7 * max(1, abs(e)) for b, e in zip(m["bounds"], m["exacts"]))
            assert "iterations" in m
    # exactly one library default per comparison, and the CVXPY peer is present in the speed task
    defaults = [r for r in coupling if r["default"]]
    assert [r["method"] for r in defaults] == ["quantum"]
    speed = [r for r in doc["records"] if r["task"] == "speed"]
    assert any(r["peer"] for r in speed) and any(r["default"] for r in speed)
    checks = doc["extra"]["bound_checks"]
    assert sum(checks["violations"].values()) == 0 and checks["checked"]["logdet"] >= 2
    # d = 20 has no exact value: relative-to-log-det metric instead
    rel = [r for r in doc["records"] if "/d=20/" in r["dataset"] and r["method"] == "quantum"]
    assert rel and rel[0]["metrics"]["exact"] is None and rel[0]["metrics"]["rel_logdet_mean"]
    md = (out / "ising.md").read_text()
    assert "Fig. 1" in md and "Agreement with the paper" in md
    assert (out / "fig1_hierarchy.png").stat().st_size > 1000
    assert (out / "fig2_logdet_d5.png").stat().st_size > 1000
    assert (out / "fig14_cp_gap_general.png").stat().st_size > 1000
