"""The command line: --version, plain-text help, and the benchmark commands without the
benchmarks installed."""

from __future__ import annotations

import re

import pytest

import zbound
from zbound import cli

RST = re.compile(r"``|:(func|class|mod|meth|data|attr):`")


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"zbound {zbound.__version__}"


@pytest.mark.parametrize("argv", [(), ("data",)])
def test_help_is_plain_text(capsys, argv):
    text = _help(capsys, *argv)
    assert not RST.search(text), text


@pytest.mark.parametrize("command", sorted(cli.BENCHMARK_COMMANDS))
def test_benchmark_commands_without_the_benchmarks_say_how_to_install_them(
        capsys, monkeypatch, command):
    monkeypatch.setattr(cli, "entry_points", lambda group: [])
    assert cli.main([command, "list", "--quick"]) == 2
    err = capsys.readouterr().err
    assert cli.BENCHMARKS_INSTALL in err and f"zbound {command}" in err
