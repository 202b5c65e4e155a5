"""Suite ``scale``: a tiny run on an in-process LocalCluster, the objective mapping to
dask-ml, and the report's verdicts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask.array", reason="the dask extra is not installed")
pytest.importorskip("dask_ml", reason="the dask extra is not installed")

from zbound_benchmarks.runner import SUITES, run_suite  # noqa: E402
from zbound_benchmarks.suites import scale as S  # noqa: E402
from zbound_benchmarks.suites.scale import problems as Q  # noqa: E402
from zbound_benchmarks.suites.scale.config import DASK_ML_SOLVERS, LIBRARY, LIBRARY_EXACT
from zbound_benchmarks.suites.scale.report import verdicts


def test_registered():
    assert SUITES["scale"] == "zbound_benchmarks.suites.scale"
    assert set(DASK_ML_SOLVERS) == {"admm", "lbfgs", "newton", "proximal_grad"}


def test_synthetic_blocks_are_deterministic():
    a = Q._synthetic_block(3, 50, 5, 4, 0, False)
    b = Q._synthetic_block(3, 50, 5, 4, 0, False)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.all(a[0][:, -1] == 1.0)
    assert Q.chunk_rows_for(10_000_000, 100_000) == 100_000
    assert Q.chunk_rows_for(100_000, 100_000) == 12_500


@pytest.mark.slow
def test_tiny_run(tmp_path):
    doc = run_suite("scale", out=tmp_path, show_progress=False,
                    options={"config": S.tiny(), "processes": False})
    recs = doc["records"]
    by = {(r["task"], r["method"]): r for r in recs}
    # every peer is there
    for solver in DASK_ML_SOLVERS:
        assert ("binary", f"dask-ml-{solver}") in by
    assert ("multiclass", "dask-ml-lbfgs-ovr") in by
    assert ("multiclass", "sklearn-lbfgs") in by
    # the library reaches the target and equals the NumPy path
    for task in ("multiclass", "binary"):
        ours = by[(task, LIBRARY)]
        assert ours["reached"] and ours["default"]
        exact = by[(task, LIBRARY_EXACT)]         # the exact Hessian, same run
        assert exact["reached"] and not exact["default"]
        assert exact["metrics"]["hessian_sample"] == 1.0
        # "auto" at t = 4000 with p <= 28: every row (the sample would be too small)
        assert ours["metrics"]["hessian_sample"] == 1.0
        eq = by[(task, "numpy-equality")]["metrics"]
        assert eq["rel_diff"] <= 1e-10
        assert eq["iterations"] == eq["numpy_iterations"]
    # a ladder that reaches the target at none of its settings ran once, its cap recorded
    for r in recs:
        m = r["metrics"]
        if "setting_used" in m and not r["reached"]:
            assert m["note"].startswith("capped") and len(m["times_s"]) == 1
    # dask-glm's objective is ours at one beta (regularizer, lambda, intercept mapped)
    assert by[("binary", "numpy-equality")]["metrics"]["mapping_rel_diff"] <= 1e-12
    # dask-ml with multiclass labels: one weight vector, boolean predictions
    asis = by[("multiclass", "dask-ml-lbfgs-as-is")]["metrics"]
    assert len(asis["coef_shape"]) == 1
    text = (tmp_path / "scale.md").read_text()
    assert "Verdicts" in text and "dask path equals the NumPy path" in text
    assert (tmp_path / "scale_time_vs_t.png").exists()


def test_verdicts_from_numbers():
    def rec(task, method, t, s, reached=True, **m):
        return {"task": task, "dataset": task, "method": method, "reached": reached,
                "time_to_target_s": s, "metrics": {"t": t, **m}}

    recs = [rec("binary", LIBRARY, 10**6, 2.0), rec("binary", "dask-ml-lbfgs", 10**6, 10.0),
            rec("binary", "dask-ml-admm", 10**6, 1.0, reached=False),
            rec("binary", LIBRARY, 10**7, 30.0), rec("binary", "dask-ml-lbfgs", 10**7, 40.0),
            rec("binary", LIBRARY_EXACT, 10**7, 12.0, hessian_sample=1.0),
            rec("binary", LIBRARY, 10**8, 10.0, hessian_sample=0.125),
            rec("binary", "dask-ml-lbfgs", 10**8, 50.0)]
    text = "\n".join(verdicts(recs))
    assert "zbound (exact Hessian) 12.00 s against dask-ml-lbfgs 40.00 s: ratio 0.30" in text
    assert "zbound (default, Hessian rows 0.125) 10.00 s against dask-ml-lbfgs 50.00 s: " \
        "ratio 0.20" in text
    assert "ratio 0.20 -> the 0.5x claim holds" in text
    assert "ratio 0.75 -> the 0.5x claim does NOT hold" in text
    assert "MORE than linear" in text


def test_plan_of_large_cells():
    """Above gather_max only dask-ml's large solvers run, above exact_max the 10-class cell
    times the library's default only (no exact Hessian); what is left out is recorded with
    its reason."""
    from types import SimpleNamespace

    from zbound_benchmarks.suites.scale import runs as R

    cfg = S.Config()
    added = []
    writer = SimpleNamespace(add=lambda **kw: added.append(kw))

    def cell(t, n):
        pb = SimpleNamespace(t=t, n_classes=n, task="binary" if n == 2 else "multiclass",
                             dataset="d")
        return SimpleNamespace(cfg=cfg, problem=pb, gathered=None, ours=lambda *a: None,
                               dask_lbfgs=None, dask_rung=None, target=1.0, setting=f"t={t}",
                               ctx=SimpleNamespace(writer=writer))

    big = cell(10**7, 2)
    names = [p[0] for p in R._plan(big)]
    assert names == [LIBRARY, LIBRARY_EXACT, "dask-ml-lbfgs", "dask-ml-newton"]
    R._record_skips(big)
    assert {a["method"] for a in added} == {"dask-ml-admm", "dask-ml-proximal_grad"}
    assert all(a["metrics"]["skipped"] and not a["reached"] for a in added)
    added.clear()
    mc = cell(10**7, 10)
    assert [p[0] for p in R._plan(mc)] == [LIBRARY]
    R._record_skips(mc)
    assert [a["method"] for a in added] == [LIBRARY_EXACT]
    small = cell(10**5, 2)
    assert [p[0] for p in R._plan(small)][:2] == [LIBRARY, LIBRARY_EXACT]
    assert {f"dask-ml-{s}" for s in DASK_ML_SOLVERS} <= {p[0] for p in R._plan(small)}


def test_capped_ladder_is_labelled_in_the_table():
    from zbound_benchmarks.suites.scale.report import tables

    rec = {"task": "adult", "dataset": "adult", "method": "dask-ml-admm", "reached": False,
           "time_to_target_s": 51.0, "metrics": {"t": 32561, "setting_used": 5,
                                                 "note": "capped: not reached at ..."}}
    text = "\n".join(tables([rec]))
    assert "| 5 (capped: not reached, run once) |" in text
