import json

import pytest

from zbound_benchmarks import runner
from zbound_benchmarks.records import REQUIRED_FIELDS
from zbound_benchmarks.suites import ising


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ising")
    doc = runner.run_suite("ising", quick=True, out=out, show_progress=False,
                           options={"config": ising.tiny()})
    return doc, out


@pytest.mark.slow
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
    # the scale task: one record per (d, method), fields in metrics, a verdict and a figure
    scale = [r for r in doc["records"] if r["task"] == "scale"]
    assert sorted((r["metrics"]["d"], r["method"]) for r in scale) == [
        (20, "quantum"), (20, "trw"), (30, "quantum"), (30, "trw"), (40, "quantum-2threads")]
    for r in scale:
        m = r["metrics"]
        assert {"seconds", "iterations", "bound", "gap", "converged", "certified"} <= set(m)
        assert m["certified"] and m["bound"] == r["final_objective"]
        assert m["blas_threads"] == (2 if r["method"] == "quantum-2threads" else 1)
        assert r["default"] == (r["method"] == "quantum")
    assert "d = 1000 not run" in md and (out / "scale_time_vs_d.png").stat().st_size > 1000
    assert "d = 2000 (2threads) not run" in md and "d = 4000 (2threads) not run" in md
    # Suppl. C: metric learning is a valid bound, never above the plain relaxation
    metric = {r["method"]: r for r in doc["records"] if r["task"] == "metric"}
    assert {"quantum", "quantum-metric", "quantum-greedy-k3", "exact"} <= set(metric)
    q, ml = metric["quantum"]["metrics"], metric["quantum-metric"]["metrics"]
    assert ml["violations"] == 0 and metric["quantum-metric"]["reached"]
    assert all(b <= bq + 1e-9 for b, bq in zip(ml["bounds"], q["bounds"]))
    assert "Suppl. C" in md and (out / "figC_metric_learning.png").stat().st_size > 1000


def test_suite_is_a_package_with_run_and_report():
    from zbound_benchmarks.suites.ising import problems

    assert callable(ising.run) and callable(ising.report)
    p = problems.Problem(5, "logdet", "complete", "mixed", 0.3)
    assert p.dataset == "logdet-mixed/d=5/complete"
    assert p.fields() == {"d": 5, "params": "logdet", "coupling": "mixed", "graph": "complete",
                          "w": 0.3, "eps": 1.0}
    # the same seed gives the same draws
    a, b = p.draw(2, 7), p.draw(2, 7)
    assert all((x.J == y.J).all() and (x.h == y.h).all() for x, y in zip(a, b))


def test_plot_styles_are_distinct_beyond_ten_series():
    from zbound_benchmarks.plots import PALETTE, style_for

    styles = [style_for(k) for k in range(30)]
    keys = {(s["color"], s["linestyle"], s["marker"]) for s in styles}
    assert len(keys) == 30
    assert [s["color"] for s in styles[:10]] == list(PALETTE)  # tab10, no repeated colour


def test_panel_x_range_covers_every_series_and_titles_wrap(tmp_path):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from zbound_benchmarks.plots import Panel, Series, draw_panel, panel_grid

    fast = Series("fast", x=[0, 1, 2], y=[1.0, 1e-3, 1e-6])
    slow = Series("slow", x=list(range(0, 500, 10)), y=[10.0 ** (-k / 10) for k in range(50)],
                  band=[0.1] * 50)
    panel = Panel("a long title " * 8, "iteration", "gap", [fast, slow], logy=True)
    fig, ax = plt.subplots()
    try:
        draw_panel(ax, panel, title_width_in=3.0)
        lo, hi = ax.get_xlim()
        assert lo <= 0 and hi >= 490
        assert "\n" in ax.get_title()
    finally:
        plt.close(fig)
    # the signature the other suites use still works, plus caption / styles
    path = panel_grid([[panel, panel]], tmp_path / "g.png", title="grid")
    assert path.stat().st_size > 1000
    panel_grid([[panel]], tmp_path / "h.png", caption="gap = (D - P)/max(|D|, |P|, 1)",
               styles={"slow": {"color": "black"}})
    assert (tmp_path / "h.png").stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["as run", "nothing timed", "no peer reached",
                                     "half not timed", "times and memory not measured",
                                     "quick grid", "a data set dropped", "no records"])
def test_ising_report_renders_every_record_kind(tiny_run, variant, tmp_path):
    import copy

    from test_reports import VARIANTS
    from zbound_benchmarks.report import write_report

    doc = VARIANTS[variant](copy.deepcopy(tiny_run[0]))
    text = write_report(doc, tmp_path, extra=ising.report).read_text()
    assert "could not be written" not in text


def test_scale_verdicts_read_the_threaded_records():
    from zbound_benchmarks.suites.ising.report import scale_verdict

    def rec(method, d, seconds, converged=True):
        return {"method": method, "metrics": {"d": d, "seconds": seconds, "gap": 1e-9,
                                              "converged": converged}}

    recs = [rec("quantum", 2000, 10.0), rec("quantum-2threads", 2000, 48.0),
            rec("quantum-2threads", 4000, 700.0, converged=False)]
    assert "in 48.0 s (target < 60 s: met)" in scale_verdict(recs, 2000, 60.0, "quantum-2threads")
    assert "d = 4000 (2threads) did NOT reach" in scale_verdict(recs, 4000, 600.0,
                                                                "quantum-2threads")
    assert "10.0 s (target < 5 s: NOT met)" in scale_verdict(recs, 2000, 5.0)
