"""The commands the benchmarks add to ``zbound``: suite descriptions in the help, written
paths printed, unknown suites refused."""

from __future__ import annotations

import pytest

from test_cli import RST, _help  # the library's command-line tests (tests/test_cli.py)
from zbound import cli
from zbound_benchmarks import cli as bench_cli
from zbound_benchmarks.runner import SUITES


def test_every_registered_suite_has_a_description_and_quick_time():
    assert set(bench_cli.SUITE_INFO) == set(SUITES)
    for name, (description, quick) in bench_cli.SUITE_INFO.items():
        assert description and "min" in quick, name


@pytest.mark.parametrize("argv", [("bench",), ("report",), ("demo",)])
def test_help_is_plain_text(capsys, argv):
    text = _help(capsys, *argv)
    assert not RST.search(text), text


def test_bench_help_lists_suites_with_description_and_quick_time(capsys):
    text = " ".join(_help(capsys, "bench").split())
    for name, (description, quick) in bench_cli.SUITE_INFO.items():
        assert f"{name} {description} (--quick: {quick} on 2 cores)" in text


def test_bench_list(capsys):
    assert cli.main(["bench", "list"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, (description, quick) in bench_cli.SUITE_INFO.items():
        assert f"{name} {description} (--quick: {quick} on 2 cores)" in text


def test_unknown_suite_exits_2(capsys, tmp_path):
    assert cli.main(["bench", "no-such-suite", "--out", str(tmp_path)]) == 2
    assert "known suites" in capsys.readouterr().err


def test_bench_prints_every_written_file(capsys, tmp_path, monkeypatch):
    (tmp_path / "old.txt").write_text("not written by this run")

    def fake_run_suite(name, quick=False, out="bench-out", show_progress=True):
        (out / f"{name}.json").write_text("{}")
        (out / f"{name}.md").write_text("# report")
        (out / f"{name}-plot.png").write_bytes(b"png")
        return {"records": [1, 2]}

    monkeypatch.setattr("zbound_benchmarks.runner.run_suite", fake_run_suite)
    assert cli.main(["bench", "logreg-small", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for suffix in (".json", ".md", "-plot.png"):
        assert str(tmp_path / f"logreg-small{suffix}") in out
    assert "old.txt" not in out
    assert "Files written (3)" in out



def test_demo_prints_every_written_file(capsys, tmp_path, monkeypatch):
    def fake_run_demo(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "figure.png").write_bytes(b"png")
        (out / "report.md").write_text("# zbound demo")
        return out / "report.md"

    monkeypatch.setattr("zbound_benchmarks.demo.run_demo", fake_run_demo)
    assert cli.main(["demo", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "d" / "report.md") in out
    assert str(tmp_path / "d" / "figure.png") in out
