"""Suite ``crf``: chain CRFs on CoNLL-2000, CoNLL-2002 (Spanish NER) and the Penn Treebank sample
against python-crfsuite (L-BFGS and l2sgd) with the same features and the same L2 objective.

Modules: :mod:`.runs` (config, data, the peers, timed runs, records) and :mod:`.report`
(tables beside the paper's Table 1, verdicts).
"""

from zbound_benchmarks.suites.crf.report import PAPER_TABLE1, report
from zbound_benchmarks.suites.crf.runs import OPTIONS, Config, config, run, tiny

__all__ = ["Config", "OPTIONS", "PAPER_TABLE1", "config", "report", "run", "tiny"]
