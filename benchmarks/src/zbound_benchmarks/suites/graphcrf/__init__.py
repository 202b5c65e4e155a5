"""Suite ``graphcrf``: CRFs on graphs of small treewidth. Exact junction-tree inference against
enumeration on thousands of random graphs; the skip-chain CRF on CoNLL-2002 against the chain
CRF and CRFsuite (F1, fit time, time per evaluation, and ``GraphCRF`` on chains against
``ChainCRF``); the cost of a pass against treewidth and graph size.

Modules: :mod:`.runs` (config, tasks, records) and :mod:`.report` (tables and verdicts).
"""

from zbound_benchmarks.suites.graphcrf.report import report
from zbound_benchmarks.suites.graphcrf.runs import OPTIONS, SUITE, Config, config, run, tiny

__all__ = ["Config", "OPTIONS", "SUITE", "config", "report", "run", "tiny"]
