"""Suite ``stochastic`` with a tiny configuration (digits, 600 rows): records, tuning, report."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from zbound_benchmarks.records import read_suite
from zbound_benchmarks.runner import SUITES, run_suite
from zbound_benchmarks.suites import stochastic


def test_registered():
    assert SUITES["stochastic"] == "zbound_benchmarks.suites.stochastic"
    from zbound_benchmarks.cli import SUITE_INFO

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
        # momentum is also tuned over its beta (an equally sized grid to spfb-avg's damping,
        # which is tuned above dense_max only: not on digits)
        betas = (":momentum=0.9", ":momentum=0.95") if r["method"] == "momentum" else ("",)
        assert set(m["grid_epochs_to_1%"]) == {f"{s}:{lr}{b}" for s in scheds
                                                for lr in (0.1, 1.0) for b in betas}
        assert m["variant"] == ({} if r["method"] != "momentum"
                                else {"momentum": m["variant"]["momentum"]})
        assert m["lam"] == 1e-4 and m["lr_at_edge"]
        assert r["peer"] == (r["method"] in ("sgd", "momentum", "adam", "sklearn-sgd"))
        assert r["final_objective"] >= m["f_star"] * (1 - 1e-9)
        if r["reached"]:
            assert r["time_to_target_s"] >= 0 and m["epochs_to_target"] >= 1


def test_report_has_table_verdict_and_plot(tiny_run):
    _, out = tiny_run
    md = (out / "stochastic.md").read_text()
    assert "| data | lambda | method |" in md and "Verdict against the target" in md
    assert "**digits, lambda = 0.0001:" in md and "test loss at the optimum" in md
    assert (out / "stochastic_fig1.png").exists()


def test_trajectory_caps_and_prunes():
    """``max_epochs`` stops a run at the cap; ``ref`` prunes a run 10 times behind it; runs stop
    at ``stop_gap``."""
    from zbound_benchmarks.suites.stochastic.runs import epoch_batches, trajectory

    cfg = dataclasses.replace(stochastic.tiny(), stop_gap=1e-2)
    prob = stochastic.build_problem("digits", 1e-3, max_rows=600)
    stochastic.reference_optimum(prob)
    stream = epoch_batches(prob.T, 300, 6, 0)
    full = trajectory(prob, "momentum", 1.0, cfg, stream, "constant")
    capped = trajectory(prob, "momentum", 1.0, cfg, stream, "constant", max_epochs=2)
    assert len(capped["gap"]) == 3 and capped["status"] in ("budget", "reached")
    np.testing.assert_allclose(capped["gap"], full["gap"][:3])
    tiny_ref = [g * 1e-3 for g in full["gap"]]
    pruned = trajectory(prob, "sgd", 0.1, cfg, stream, "constant", ref=tiny_ref)
    assert pruned["status"] == "pruned" and len(pruned["gap"]) == 4
    assert full["status"] != "reached" or full["gap"][-1] <= 1e-2


def test_variants_tune_damping_and_beta_on_equal_grids():
    from types import SimpleNamespace

    from zbound_benchmarks.suites.stochastic.config import config
    from zbound_benchmarks.suites.stochastic.runs import make_solver, variants

    cfg = config(True)
    prob = stochastic.build_problem("digits", 1e-3, max_rows=100)
    betas = variants(cfg, "momentum", prob)
    shrinks = variants(cfg, "spfb-avg", SimpleNamespace(p=7850))    # above dense_max
    assert len(betas) == len(shrinks) == 3
    assert {v["gram_shrink"] for v in shrinks} == set(cfg.gram_shrinks)
    assert variants(cfg, "spfb-avg", prob) == [{}]          # p = 650: the dense path
    adam = variants(cfg, "adam", prob)                      # Adam's beta_1: equally sized
    assert len(adam) == 3 and {v["beta1"] for v in adam} == set(cfg.adam_beta1s)
    assert variants(cfg, "sgd", prob) == [{}]
    assert variants(stochastic.tiny(), "adam", prob) == [{}]    # none set: torch's default
    s = make_solver("momentum", 0.1, cfg, prob, 2, "constant", {"momentum": 0.95})
    assert s.opts["momentum"] == 0.95
    s = make_solver("adam", 0.1, cfg, prob, 2, "constant", {"beta1": 0.8})
    assert tuple(s.opts["betas"]) == (0.8, 0.999)
    assert tuple(make_solver("adam", 0.1, cfg, prob, 2).opts["betas"]) == (0.9, 0.999)
    s = make_solver("spfb-avg", 0.1, cfg, prob, 2, "constant", {"gram_shrink": 2.0})
    assert s.opts["gram_shrink"] == 2.0 and s.opts["late_refresh"] == "doubling"
    # spfb-avg's Gram factor: the first avg_gram_updates builds, decomposed at the first and
    # the last of them; the paper's SPFB keeps the suite's gram_updates for its preconditioner
    assert s.opts["gram_updates"] == cfg.avg_gram_updates == 1
    assert s.opts["gram_eig_builds"] == (1,)
    four = dataclasses.replace(cfg, avg_gram_updates=4)
    assert make_solver("spfb-avg", 0.1, four, prob, 2).opts["gram_eig_builds"] == (1, 4)
    assert make_solver("spfb", 0.1, cfg, prob, 2).opts["gram_updates"] == cfg.gram_updates


def test_every_method_is_tuned_on_the_same_schedules():
    """The quick and full grids offer every method (peers included) the same schedules, the
    fast-decaying inverse-0.5 among them."""
    from zbound_benchmarks.suites.stochastic.config import config
    from zbound_benchmarks.suites.stochastic.runs import schedule_options

    for quick in (True, False):
        assert "inverse-0.5" in config(quick).schedules
    assert schedule_options("inverse-0.5", 8) == {"schedule": "inverse", "decay": 4.0}
