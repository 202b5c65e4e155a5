"""Every suite without the benchmark data (a new user's machine): the data sets that need it are
skipped and named once, the rest runs, the JSON and the report are written, the command exits
0 and says how to get the data. The suites' own tests run without the data too (the
repository's conftest.py hides ZBOUND_DATA from every test not marked ``data``); here each
smallest configuration is given at least one data set that needs the data."""

from __future__ import annotations

import dataclasses
import json

import pytest

from zbound.datasets import ENV_VAR
from zbound_benchmarks.runner import load_suite, run_suite


def _configs():
    from zbound_benchmarks.suites import (
        crf,
        estimators,
        latent,
        logreg_large,
        logreg_small,
        moe,
        scale,
        sparse,
        stochastic,
    )

    return {
        "logreg-small": (logreg_small.tiny(table3_sets=("wine", "bupa"), weak_sets=()),
                         {"bupa"}),
        "logreg-large": (logreg_large.tiny(paper_sets=("srbct",), large_sets=("adult",)),
                         {"srbct", "adult"}),
        "latent": (latent.tiny(datasets=("wine", "ionosphere"), ridge_lams=()),
                   {"ionosphere"}),
        "moe": (moe.tiny(datasets=("digits", "kmnist"),
                         instances={"digits": 1, "kmnist": 1}), {"kmnist"}),
        "stochastic": (dataclasses.replace(stochastic.tiny(), datasets=("adult",)), {"adult"}),
        "crf": (crf.tiny(), {"conll2000"}),
        "scale": (dataclasses.replace(scale.tiny(), adult=True), {"adult"}),
        "estimators": (estimators.tiny(), {"ssl-text"}),
        "sparse": (sparse.tiny(binary=("ssl-text", "tfidf")), {"ssl-text"}),
    }


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["logreg-small", "logreg-large", "latent", "moe",
                                   "stochastic", "crf", "scale", "estimators", "sparse"])
def test_suite_without_data_skips_what_needs_it_and_reports(suite, tmp_path, capsys):
    if suite == "crf":
        pytest.importorskip("pycrfsuite", reason="the crf suite compares with python-crfsuite")
    if suite == "scale":
        pytest.importorskip("distributed", reason="the scale suite runs on a Dask cluster")
    cfg, needs_data = _configs()[suite]
    doc = run_suite(suite, quick=True, out=tmp_path, show_progress=False,
                    options={"config": cfg})
    skipped = doc["extra"]["skipped_datasets"]
    assert set(skipped) == needs_data
    assert not any(r["dataset"] in needs_data for r in doc["records"])
    on_disk = json.loads((tmp_path / f"{suite}.json").read_text())
    assert on_disk["extra"]["skipped_datasets"] == skipped
    report = (tmp_path / f"{suite}.md").read_text()
    assert "## Data sets not run" in report and ENV_VAR in report
    err = capsys.readouterr().err
    assert err.count("Skipped") == 1 and ENV_VAR in err        # said once, with the remedy
    assert hasattr(load_suite(suite), "run")


def test_bench_command_without_data_exits_0(tmp_path, capsys):
    """``zbound bench crf --quick`` with no data: exit 0, a report, one message."""
    pytest.importorskip("pycrfsuite", reason="the crf suite compares with python-crfsuite")
    from zbound.cli import main

    assert main(["bench", "crf", "--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "crf.md").is_file() and (tmp_path / "crf.json").is_file()
    err = capsys.readouterr().err
    assert "Skipped 3 data set(s)" in err and ENV_VAR in err
