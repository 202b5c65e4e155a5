"""Suite ``latent`` with a tiny configuration: records, the paper's numbers beside ours, the
toy figure and the report's sections."""

from __future__ import annotations

import pytest

from zbound_benchmarks.records import read_suite
from zbound_benchmarks.runner import SUITES, run_suite
from zbound_benchmarks.suites import latent
from zbound_benchmarks.suites.latent.config import (
    DATASETS,
    METHODS,
    PAPER_M,
    PAPER_TABLE5,
    TOY_METHODS,
)
from zbound_benchmarks.suites.latent.problems import stripes
from zbound_benchmarks.suites.latent.runs import fit_once


def test_registered():
    assert SUITES["latent"] == "zbound_benchmarks.suites.latent"
    from zbound_benchmarks.cli import SUITE_INFO

    assert "latent" in SUITE_INFO


def test_paper_tables_transcribed():
    t5 = PAPER_TABLE5
    assert set(t5) == set(DATASETS)
    for ds, rows in t5.items():
        assert set(rows) == {"bfgs", "steepest", "cg", "newton", "bound"}
        assert all(len(v) == 4 for v in rows.values())
        # Table 2 is Table 5 at the paper's m, where the bound is best
        m = PAPER_M[ds]
        assert max(rows, key=lambda k: rows[k][m - 1]) == "bound"
    assert t5["srbct"]["bound"][3] == -0.11 and t5["bupa"]["bound"][1] == -19.95


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the toy figure needs matplotlib")
    out = tmp_path_factory.mktemp("latent")
    cfg = latent.tiny(starts=2, max_iter=60)
    assert cfg.ridge_lams == (1e-2,) and cfg.toy_starts == 2
    doc = run_suite("latent", quick=True, out=out, show_progress=False,
                    options={"config": cfg})
    return doc, out


def test_tiny_run_writes_every_method(tiny_run):
    doc, out = tiny_run
    recs = doc["records"]
    table5 = [r for r in recs if r["task"] == "table5"]
    assert {(r["metrics"]["m"], r["method"]) for r in table5} == {
        (m, meth) for m in (1, 2) for meth in METHODS}
    toy = {r["method"] for r in recs if r["task"] == "toy"}
    assert toy == set(TOY_METHODS)
    ridge = [r for r in recs if r["task"] == "ridge"]
    # the ridge task runs at the paper's m (wine: 3) for every method and lambda
    assert {(r["metrics"]["m"], r["metrics"]["lambda"], r["method"]) for r in ridge} == {
        (PAPER_M["wine"], 1e-2, meth) for meth in METHODS}
    for r in ridge:
        mt = r["metrics"]
        assert len(mt["polished_objectives"]) == len(mt["train_objectives"]) == 2
        # polishing is a descent from the run's endpoint: never above it
        for j, jp in zip(mt["train_objectives"], mt["polished_objectives"], strict=True):
            assert jp <= j + 1e-9 * max(1.0, abs(j))
        assert all(0 < n < 1e3 for n in mt["theta_norms"])   # a ridge bounds ||theta||
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
    assert "accuracy per start" in text
    # the evidence section: norms at lambda = 0, the ridge table and figure, the local optima
    assert "### Why the ranking differs" in text
    assert "| method | runs | median ||theta||" in text
    assert (out / "latent_norm.png").exists() and (out / "latent_ridge.png").exists()
    assert "![ridge: test NLL against lambda](latent_ridge.png)" in text
    assert "Local optima from the same starts" in text and "| **all** |" in text
    assert "comparisons: " in text and "local optima" in text


def test_toy_section_counts_every_start(tiny_run):
    doc, out = tiny_run
    text = (out / "latent.md").read_text()
    toy = {r["method"]: r for r in doc["records"] if r["task"] == "toy"}
    for r in toy.values():
        assert len(r["metrics"]["test_accuracies"]) == 2
    em = toy["em-joint"]["metrics"]["test_accuracies"]
    assert f"generative EM reaches test accuracy {sum(em) / 2:.2f} on average" in text


def test_local_optima_counts_match_records(tiny_run):
    """The W/T/L totals of the report are recomputed here from the records."""
    import numpy as np

    from zbound_benchmarks.suites.latent.report import TIE

    doc, out = tiny_run
    text = (out / "latent.md").read_text()
    rc = {r["method"]: np.array(r["metrics"]["polished_objectives"])
          for r in doc["records"] if r["task"] == "ridge"}
    jb = rc.pop("bound")
    w = t = loss = 0
    for jm in rc.values():
        tol = TIE * np.maximum(1.0, np.abs(jm))
        w += int(np.sum(jb < jm - tol))
        loss += int(np.sum(jb > jm + tol))
        t += jb.size - int(np.sum(jb < jm - tol)) - int(np.sum(jb > jm + tol))
    assert f"lower in {w}, equal in {t} and higher in {loss} comparisons" in text


def test_stripes_layout():
    """The toy's layout: 8 clusters, classes alternate by stripe, balanced."""
    import numpy as np

    X, y = stripes(4000, 0)
    assert X.shape == (4000, 2) and set(np.unique(y)) == {0, 1}
    stripe = np.round(X[:, 1] + 1.5).astype(int)          # 0..3 from the bottom
    assert np.mean(y == (stripe % 2 == 0)) > 0.98           # bottom stripe is class 1
    assert abs(np.mean(y) - 0.5) < 0.05


@pytest.mark.slow
def test_toy_outcome_first_start():
    """Fig. 1 on our layout, first start of the suite: generative EM at chance, the bound (run
    to a strict rule) and conditional EM separate the stripes."""
    import numpy as np

    cfg = latent.Config(max_iter=300, time_budget_s=30.0)
    X, y = stripes(400, cfg.seed + 11)
    Xt, yt = stripes(400, cfg.seed + 12)
    x0 = cfg.start_scale * np.random.default_rng(cfg.seed + 13).standard_normal(12)
    acc = {}
    for method in ("em-joint", "bound-long", "em"):
        run = fit_once(X, y, 2, 2, 0.0, method, x0, cfg)
        lp = run["model"].loss.log_proba(run["res"].x, Xt)
        acc[method] = float(np.mean(lp.argmax(axis=1) == yt))
    assert acc["em-joint"] <= 0.6
    assert acc["bound-long"] >= 0.95 and acc["em"] >= 0.95
