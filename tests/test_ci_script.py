""".ci/run fails when any of its steps fails.

The script runs in a throwaway copy of the repository with a stand-in toolchain on ``PATH``:
``python3`` (and a newer ``python3.14``) make virtual environments whose ``python``, ``pip`` and
``ruff`` only record their call and fail where the test says. This checks the script's control
flow in well under a second, without installing anything; the real steps run in CI itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash")

# One stand-in for every tool of a virtual environment: it appends "<venv>|<tool>|<kernels>|<args>"
# to $FAKE_LOG and exits 1 when that line matches the glob $FAKE_FAIL.
TOOL = r"""#!/usr/bin/env bash
venv="$(basename "$(dirname "$(dirname "$0")")")"
line="$venv|$(basename "$0")|${OPENBLAS_CORETYPE:-}|$*"
echo "$line" >> "$FAKE_LOG"
if [ -n "${FAKE_FAIL:-}" ]; then
  case "$line" in $FAKE_FAIL) exit 1 ;; esac
fi
exit 0
"""

# A stand-in interpreter: "-m venv DIR" makes DIR/bin/{python,pip,ruff}; "-c CODE" runs CODE with
# the real interpreter (python3), or answers "newer than python3" (python3.14).
INTERPRETER = r"""#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  for t in python pip ruff; do ln -sf "$FAKE_TOOL" "$3/bin/$t"; done
  exit 0
fi
if [ "$1" = "-c" ]; then
  %s
fi
exit 2
"""


def _toolchain(tmp_path: Path) -> Path:
    bin_ = tmp_path / "fakebin"
    bin_.mkdir()
    tool = tmp_path / "fake-tool"
    tool.write_text(TOOL)
    tool.chmod(0o755)
    for name, on_c in [("python3", f'exec "{sys.executable}" "$@"'), ("python3.14", "exit 0")]:
        path = bin_ / name
        path.write_text(INTERPRETER % on_c)
        path.chmod(0o755)
    return bin_


def _run_ci(tmp_path: Path, fail: str | None):
    """.ci/run in a copy of the repository beside a shared/data folder; (exit status, log)."""
    repo = tmp_path / "zbound"              # the folder name `git clone` gives
    (repo / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (tmp_path / "shared" / "data").mkdir(parents=True)
    log = tmp_path / "calls.log"
    log.touch()
    env = {
        "PATH": f"{_toolchain(tmp_path)}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYENV_ROOT": str(tmp_path / "no-pyenv"),
        "OPENBLAS_CORETYPE": "SkylakeX",
        "FAKE_TOOL": str(tmp_path / "fake-tool"),
        "FAKE_LOG": str(log),
    }
    if fail is not None:
        env["FAKE_FAIL"] = fail
    proc = subprocess.run([BASH, str(repo / ".ci" / "run")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    return proc, log.read_text().splitlines()


pytestmark = pytest.mark.skipif(BASH is None or os.name != "posix", reason="needs bash (POSIX)")


def test_every_step_runs_when_all_pass(tmp_path):
    proc, calls = _run_ci(tmp_path, fail=None)
    assert proc.returncode == 0, proc.stderr
    assert "ci: all steps passed" in proc.stdout
    pytest_calls = [c for c in calls if "|python|" in c and "-m pytest" in c]
    # first lane (SkylakeX), second lane (another family), newest-Python lane
    assert len(pytest_calls) == 3, calls
    assert pytest_calls[0].startswith(".venv|python|SkylakeX|")
    assert not pytest_calls[1].startswith(".venv|python|SkylakeX|")
    assert pytest_calls[2].startswith(".venv-newest|python|")
    assert any("-m sphinx" in c for c in calls)
    assert any(c.startswith(".venv-wheel|python|") for c in calls)


def test_a_failure_in_the_first_kernel_lane_only_fails_ci(tmp_path):
    """The mutation of the issue: one test fails under the first kernel family, nowhere else."""
    proc, calls = _run_ci(tmp_path, fail=".venv|python|SkylakeX|-m pytest*")
    assert proc.returncode != 0
    assert "SkylakeX" in proc.stderr and "FAILED" in proc.stderr
    assert calls[-1].startswith(".venv|python|SkylakeX|-m pytest"), calls   # nothing ran after


@pytest.mark.parametrize("fail", [
    ".venv|pip|*|install -q torch*",                  # the PyTorch install
    ".venv|pip|*|install -q -e .[[]test]*",           # the README's install
    ".venv|ruff|*|check .",                           # lint after passing tests
    ".venv|python|Haswell|-m pytest*",                # the second kernel family
    ".venv|python|Sandybridge|-m pytest*",
    ".venv-newest|pip|*",
    ".venv-newest|python|*|-m pytest*",
    ".venv|pip|*|install -q -e .[[]docs]",
    ".venv|python|*|-m sphinx*",
    ".venv|pip|*|wheel*",                             # the wheel without extras
    ".venv-wheel|pip|*",
    ".venv-wheel|python|*",
])
def test_any_failing_step_fails_ci(tmp_path, fail):
    proc, calls = _run_ci(tmp_path, fail=fail)
    second = next(c for c in calls if "-m pytest" in c and "|SkylakeX|" not in c
                  ) if "Haswell" in fail or "Sandybridge" in fail else None
    if second is not None and f"|{fail.split('|')[2]}|" not in second:
        pytest.skip("this CPU's second kernel family is another one")
    assert proc.returncode != 0, (fail, calls)
    assert "ci: all steps passed" not in proc.stdout
    assert "FAILED" in proc.stderr
