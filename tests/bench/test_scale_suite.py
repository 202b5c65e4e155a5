"""Suite ``scale``: a tiny run on an in-process LocalCluster, the objective mapping to
dask-ml, and the report's verdicts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask.array", reason="the dask extra is not installed")
pytest.importorskip("dask_ml", reason="the dask extra is not installed")

from zbound.bench.runner import SUITES, run_suite  # noqa: E402
from zbound.bench.suites import scale as S  # noqa: E402
from zbound.bench.suites.scale import problems as Q  # noqa: E402


def test_registered():
    assert SUITES["scale"] == "zbound.bench.suites.scale"
    assert set(S.DASK_ML_SOLVERS) == {"admm", "lbfgs", "newton", "proximal_grad"}


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
    for solver in S.DASK_ML_SOLVERS:
        assert ("binary", f"dask-ml-{solver}") in by
    assert ("multiclass", "dask-ml-lbfgs-ovr") in by
    assert ("multiclass", "sklearn-lbfgs") in by
    # the library reaches the target and equals the NumPy path
    for task in ("multiclass", "binary"):
        ours = by[(task, S.LIBRARY)]
        assert ours["reached"] and ours["default"]
        eq = by[(task, "numpy-equality")]["metrics"]
        assert eq["rel_diff"] <= 1e-10
        assert eq["iterations"] == eq["numpy_iterations"]
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

    recs = [rec("binary", S.LIBRARY, 10**6, 2.0), rec("binary", "dask-ml-lbfgs", 10**6, 10.0),
            rec("binary", "dask-ml-admm", 10**6, 1.0, reached=False),
            rec("binary", S.LIBRARY, 10**7, 30.0), rec("binary", "dask-ml-lbfgs", 10**7, 40.0)]
    text = "\n".join(S.verdicts(recs))
    assert "ratio 0.20 -> the 0.5x claim holds" in text
    assert "ratio 0.75 -> the 0.5x claim does NOT hold" in text
    assert "MORE than linear" in text
