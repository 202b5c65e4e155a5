"""The demo's timings: one thread in every pool, the machine printed, ratios as measured."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from zbound_benchmarks import demo


def test_faster_reports_whichever_side_wins():
    assert demo._faster(1.0, 2.4, "sklearn") == "zbound 2.4x"
    assert demo._faster(2.4, 1.0, "sklearn") == "sklearn 2.4x"


def test_every_step_runs_with_one_thread_per_pool_and_the_report_says_so(tmp_path, monkeypatch):
    seen = []

    def step(*args, **kwargs):
        seen.append({(p["user_api"], p["filepath"]): p["num_threads"]
                     for p in threadpool_info()})
        return "step output"

    for name in ("bound_along_line", "estimator_comparison", "solver_convergence",
                 "ising_bounds"):
        monkeypatch.setattr(demo, name, step)
    path = demo.run_demo(tmp_path)
    assert len(seen) == 4
    for pools in seen:
        # scikit-learn's OpenMP and SciPy's OpenBLAS are loaded before the limit, so limited
        assert {api for api, _ in pools} >= {"blas"}
        assert set(pools.values()) == {1}, pools
    report = path.read_text()
    assert "Machine:" in report and "CPUs" in report and "blas 1" in report
    assert "alternating" in report and "median" in report.lower()
