"""Suite ``latent`` with a tiny configuration: records, the paper's numbers beside ours, the
toy figure and the report's sections."""

from __future__ import annotations

import pytest

from zbound.bench.records import read_suite
from zbound.bench.runner import SUITES, run_suite
from zbound.bench.suites import latent


def test_registered():
    assert SUITES["latent"] == "zbound.bench.suites.latent"
    from zbound.cli import SUITE_INFO

    assert "latent" in SUITE_INFO


def test_paper_tables_transcribed():
    t5 = latent.PAPER_TABLE5
    assert set(t5) == set(latent.DATASETS)
    for ds, rows in t5.items():
        assert set(rows) == {"bfgs", "steepest", "cg", "newton", "bound"}
        assert all(len(v) == 4 for v in rows.values())
        # Table 2 is Table 5 at the paper's m, where the bound is best
        m = latent.PAPER_M[ds]
        assert max(rows, key=lambda k: rows[k][m - 1]) == "bound"
    assert t5["srbct"]["bound"][3] == -0.11 and t5["bupa"]["bound"][1] == -19.95


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the toy figure needs matplotlib")
    out = tmp_path_factory.mktemp("latent")
    cfg = latent.tiny(starts=2, max_iter=60)
    doc = run_suite("latent", quick=True, out=out, show_progress=False,
                    options={"config": cfg})
    return doc, out


def test_tiny_run_writes_every_method(tiny_run):
    doc, out = tiny_run
    recs = doc["records"]
    table5 = [r for r in recs if r["task"] == "table5"]
    assert {(r["metrics"]["m"], r["method"]) for r in table5} == {
        (m, meth) for m in (1, 2) for meth in latent.METHODS}
    toy = {r["method"] for r in recs if r["task"] == "toy"}
    assert toy == set(latent.TOY_METHODS)
    for r in recs:
        mt = r["metrics"]
        assert mt["runs"] == 2 and len(mt["test_logliks"]) == 2
        assert mt["test_loglik"] <= 0.0
        assert 0.0 <= mt["test_accuracy"] <= 1.0
    bound = next(r for r in table5 if r["method"] == "bound" and r["metrics"]["m"] == 2)
    assert bound["metrics"]["paper_test_loglik"] == -0.51
    assert read_suite(out / "latent.json")["suite"] == "latent"


def test_tiny_report(tiny_run):
    doc, out = tiny_run
    text = (out / "latent.md").read_text()
    assert "Toy problem" in text and "Table 5" in text and "Verdict" in text
    assert "lambda = 0" in text
    assert (out / "latent_toy.png").exists()
    assert "![toy decision boundaries](latent_toy.png)" in text
