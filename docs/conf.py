"""Sphinx configuration of the zbound documentation (build: see the README, "Documentation")."""

from __future__ import annotations

import os
from pathlib import Path

import zbound

project = "zbound"
author = "zbound developers"
copyright = "2026, zbound developers"
release = version = zbound.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

myst_heading_anchors = 3
suppress_warnings = ["myst.header", "myst.xref_missing"]

html_theme = "pydata_sphinx_theme"
html_title = f"zbound {release}"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}
html_static_path: list[str] = []

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": os.environ.get("ZBOUND_DOCS_PLOT", "True"),
}


def _performance_pages() -> None:
    """The performance pages: each suite's report written again from the records of its
    latest run (``docs/bench/SUITE.json.gz``, from ``zbound bench SUITE --quick``), as
    ``zbound report`` writes it, with the machine and date of the run."""
    from zbound_benchmarks.runner import render

    out = Path(__file__).parent / "generated" / "performance"
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted((Path(__file__).parent / "bench").glob("*.json.gz")):
        render(path, out)


_performance_pages()
