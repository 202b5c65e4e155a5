"""The wheel a user installs, without extras: it holds no benchmark code and at most 29 000
lines of Python, it fits every estimator, its core needs at most
five direct dependencies besides NumPy, SciPy and scikit-learn, and the commands that need an
extra say which one. Run by .ci/run in a fresh virtual environment holding only the wheel."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np

import zbound

assert "site-packages" in zbound.__file__, f"zbound imported from the tree: {zbound.__file__}"

# The wheel is the library: no benchmark code (that is the zbound-benchmarks distribution)
(wheel,) = Path("dist").glob("zbound-*.whl")
names = zipfile.ZipFile(wheel).namelist()
bench = [n for n in names if n.startswith(("zbound/bench", "zbound_benchmarks", "zbound/demo"))]
assert not bench, f"the library wheel holds benchmark code: {bench[:5]}"
assert "zbound/py.typed" in names, "the wheel has no py.typed marker (PEP 561)"
lines = sum(zipfile.ZipFile(wheel).read(n).count(b"\n") for n in names if n.endswith(".py"))
assert lines <= 29_000, f"the library is {lines} lines of Python (at most 29 000)"

requires = [r for r in metadata.requires("zbound") or [] if "extra ==" not in r]
core = {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requires}
others = core - {"numpy", "scipy", "scikit-learn"}
assert len(others) <= 5, f"the core depends on {sorted(others)} besides NumPy, SciPy, scikit-learn"
for extra in ("matplotlib", "rich", "cvxpy", "dask", "torch", "pycrfsuite"):
    try:
        __import__(extra)
    except ImportError:
        continue
    raise AssertionError(f"{extra} is installed without any extra")

rng = np.random.default_rng(0)
X = rng.standard_normal((200, 4))
labels = np.where(X[:, 0] + 0.3 * rng.standard_normal(200) > 0, "yes", "no")
fitted = [
    zbound.BoundLogisticRegression().fit(X, labels),
    zbound.BoundSGDClassifier(random_state=0).fit(X, labels),
    zbound.LatentLogisticRegression(random_state=0).fit(X, labels),
    zbound.MixtureOfExperts(random_state=0).fit(X, labels),
    zbound.MixtureOfExperts(random_state=0).fit(X, X[:, 0] + 0.1 * rng.standard_normal(200)),
]
for est in fitted:
    assert np.isfinite(est.objective_) and est.solver_result_.trace.objective.size
    assert est.score(X, labels if hasattr(est, "classes_") else X[:, 0]) > 0.5, est
words = [["the", "cat", "sat"], ["a", "dog", "ran", "fast"]] * 10
tags = [["D", "N", "V"], ["D", "N", "V", "A"]] * 10
crf = zbound.ChainCRF().fit(words, tags)
assert crf.score(words, tags) > 0.9
graphs = [(w, [(t, t + 1) for t in range(len(w) - 1)] + [(0, len(w) - 1)]) for w in words]
graph_crf = zbound.GraphCRF().fit(graphs, tags)
assert graph_crf.score(graphs, tags) > 0.9
zbound.show_versions()                    # a bug report's helper runs on the core alone

cli = [sys.executable, "-m", "zbound.cli"]
for args in (["bench", "list"], ["report", "x.json"], ["demo"]):
    proc = subprocess.run(cli + args, capture_output=True, text=True)
    assert proc.returncode == 2 and "pip install ./benchmarks" in proc.stderr, (args, proc.stderr)
print(f"ci: the wheel ({len(names)} files, {lines} lines of Python, no benchmark code) fits all "
      f"six estimators without extras; core dependencies besides NumPy, SciPy, scikit-learn: "
      f"{', '.join(sorted(others))}")
