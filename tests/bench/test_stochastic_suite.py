"""Suite ``stochastic`` with a tiny configuration (digits, 600 rows): records, tuning, report."""

from __future__ import annotations

import pytest

from zbound.bench.records import read_suite
from zbound.bench.runner import SUITES, run_suite
from zbound.bench.suites import stochastic


def test_registered():
    assert SUITES["stochastic"] == "zbound.bench.suites.stochastic"
    from zbound.cli import SUITE_INFO

    assert "stochastic" in SUITE_INFO


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the figure needs matplotlib")
    out = tmp_path_factory.mktemp("stochastic")
    doc = run_suite("stochastic", quick=True, out=out, show_progress=False,
                    options={"config": stochastic.tiny()})
    return doc, out


def test_records_cover_every_method_and_peer(tiny_run):
    doc, out = tiny_run
    assert read_suite(out / "stochastic.json")["suite"] == "stochastic"
    recs = doc["records"]
    names = {r["method"] for r in recs}
    assert {"spfb", "spfb-avg", "lspfb-k1", "lspfb-k3", "sbm", "sgd", "momentum", "adam",
            "sklearn-sgd"} <= names
    assert "sbm-sm" not in names                     # p = 650 > sm_max_params
    prob = doc["extra"]["problems"]["digits lambda=0.0001"]
    assert prob["skipped"] == ["sbm-sm"] and prob["optimum_test_loss"] > 0
    for r in recs:
        m = r["metrics"]
        # every method tuned over the whole grid, on every schedule but the constant-step ones
        scheds = ("constant",) if r["method"] in ("sbm", "sklearn-sgd") else \
            ("constant", "inverse-1")
        assert m["lr"] in (0.1, 1.0) and m["schedule"] in scheds
        assert set(m["grid_epochs_to_1%"]) == {f"{s}:{lr}" for s in scheds for lr in (0.1, 1.0)}
        assert m["lam"] == 1e-4 and m["lr_at_edge"]
        assert r["peer"] == (r["method"] in ("sgd", "momentum", "adam", "sklearn-sgd"))
        assert r["final_objective"] >= m["f_star"] * (1 - 1e-9)
        if r["reached"]:
            assert r["time_to_target_s"] >= 0 and m["epochs_to_target"] >= 1


def test_report_has_table_verdict_and_plot(tiny_run):
    _, out = tiny_run
    md = (out / "stochastic.md").read_text()
    assert "| data | lambda | method |" in md and "Done-when verdict" in md
    assert "**digits, lambda = 0.0001:" in md and "test loss at the optimum" in md
    assert (out / "stochastic_fig1.png").exists()
