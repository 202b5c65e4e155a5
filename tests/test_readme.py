"""The README stays true: its tour runs as written, and CI runs its test command verbatim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _runs_verbatim(command: str, script: str) -> bool:
    """``command`` is a line of ``script`` as written, its failure checked by ``|| fail ...``."""
    return any(ln.startswith(command + " || fail ") for ln in script.splitlines())


def test_tour_runs_as_written(capsys):
    """Every ``python`` block, in order, in one namespace (they build on each other)."""
    blocks = _blocks("python")
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "__readme__"}
    for k, code in enumerate(blocks):
        try:
            exec(compile(code, f"README.md python block {k + 1}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"README python block {k + 1} fails: {type(exc).__name__}: {exc}")
    res, plain = namespace["res"], namespace["plain"]
    assert res.converged and plain.fun >= res.fun - 1e-8 * abs(res.fun)
    bound, exact = namespace["quantum_bound"](namespace["m"]).bound, \
        namespace["exact"].log_partition(namespace["m"])
    assert bound >= exact


def test_ci_runs_the_readme_commands():
    """The two set-up commands open the README, and .ci/run holds the second one verbatim."""
    (bash,) = _blocks("bash")[:1]
    commands = [ln for ln in bash.splitlines() if ln and not ln.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("zbound demo")
    ci = (ROOT / ".ci" / "run").read_text()
    assert _runs_verbatim(commands[1], ci)
    assert "ZBOUND_DATA" in ci and "shared/data" in ci


def test_ci_builds_the_documentation_as_the_readme_says():
    """The README's documentation command runs in CI verbatim (warnings as errors)."""
    docs = [b for b in _blocks("bash") if "sphinx" in b]
    assert docs, "the README has no documentation build command"
    (command,) = [ln for ln in docs[0].splitlines() if "sphinx" in ln]
    assert "-W" in command
    assert _runs_verbatim(command, (ROOT / ".ci" / "run").read_text())


def test_the_first_screen_sells_and_starts():
    """The first 40 lines hold the two set-up commands, why a user picks the library (with
    measured numbers), `pip install zbound` and an estimator quickstart that runs."""
    first = "\n".join(README.splitlines()[:40])
    assert "zbound demo" in first and "pytest" in first
    assert "pip install zbound" in first
    assert re.search(r"\d\.\d+x", first), "no measured ratio in the first screen"
    quick = re.findall(r"```python\n(.*?)```", first, flags=re.S)
    assert quick and ".fit(" in quick[0]
    exec(compile(quick[0], "README quickstart", "exec"), {})
