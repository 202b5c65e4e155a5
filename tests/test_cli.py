"""The command line: --version, suite descriptions in the help, written paths printed."""

from __future__ import annotations

import re
from importlib.util import find_spec

import pytest

import zbound
from zbound import cli
from zbound.bench.runner import SUITES

needs_bench = pytest.mark.skipif(
    not all(find_spec(m) for m in ("rich", "matplotlib", "cvxpy")),
    reason="zbound bench and demo need the bench extra: pip install 'zbound[bench]'")

RST = re.compile(r"``|:(func|class|mod|meth|data|attr):`")


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_every_registered_suite_has_a_description_and_quick_time():
    assert set(cli.SUITE_INFO) == set(SUITES)
    for name, (description, quick) in cli.SUITE_INFO.items():
        assert description and "min" in quick, name


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"zbound {zbound.__version__}"


@pytest.mark.parametrize("argv", [(), ("bench",), ("demo",)])
def test_help_is_plain_text(capsys, argv):
    text = _help(capsys, *argv)
    assert not RST.search(text), text


def test_bench_help_lists_suites_with_description_and_quick_time(capsys):
    text = " ".join(_help(capsys, "bench").split())
    for name, (description, quick) in cli.SUITE_INFO.items():
        assert f"{name} {description} (--quick: {quick} on 2 cores)" in text


@needs_bench
def test_bench_list(capsys):
    assert cli.main(["bench", "list"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, (description, quick) in cli.SUITE_INFO.items():
        assert f"{name} {description} (--quick: {quick} on 2 cores)" in text


@needs_bench
def test_unknown_suite_exits_2(capsys, tmp_path):
    assert cli.main(["bench", "no-such-suite", "--out", str(tmp_path)]) == 2
    assert "known suites" in capsys.readouterr().err


@needs_bench
def test_bench_prints_every_written_file(capsys, tmp_path, monkeypatch):
    (tmp_path / "old.txt").write_text("not written by this run")

    def fake_run_suite(name, quick=False, out="bench-out", show_progress=True):
        (out / f"{name}.json").write_text("{}")
        (out / f"{name}.md").write_text("# report")
        (out / f"{name}-plot.png").write_bytes(b"png")
        return {"records": [1, 2]}

    monkeypatch.setattr("zbound.bench.runner.run_suite", fake_run_suite)
    assert cli.main(["bench", "logreg-small", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for suffix in (".json", ".md", "-plot.png"):
        assert str(tmp_path / f"logreg-small{suffix}") in out
    assert "old.txt" not in out
    assert "Files written (3)" in out


@needs_bench
def test_demo_prints_every_written_file(capsys, tmp_path, monkeypatch):
    def fake_run_demo(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "figure.png").write_bytes(b"png")
        (out / "report.md").write_text("# zbound demo")
        return out / "report.md"

    monkeypatch.setattr("zbound.demo.run_demo", fake_run_demo)
    assert cli.main(["demo", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "d" / "report.md") in out
    assert str(tmp_path / "d" / "figure.png") in out
