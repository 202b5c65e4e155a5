"""Sequence-labelling corpora: CoNLL-2000 chunking, CoNLL-2002 Spanish NER, Penn Treebank sample.

Each loader returns a list of sentences; a sentence is a list of tuples of strings, one per
token. Formats (ZBOUND_DATA/SOURCES.md, section 5): one token per line, fields separated by a
space (a tab for the treebank file), an empty line between sentences.
"""

from __future__ import annotations

import gzip

from ._base import data_file

Sentence = list[tuple[str, ...]]


def _read_sentences(relpath: str, n_fields: int, sep: str | None = None) -> list[Sentence]:
    opener = gzip.open if relpath.endswith(".gz") else open
    with opener(data_file(relpath), "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    sentences: list[Sentence] = []
    current: Sentence = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if current:
                sentences.append(current)
                current = []
            continue
        fields = tuple(line.split(sep))
        if len(fields) != n_fields:
            raise ValueError(
                f"{relpath}: line {number} has {len(fields)} fields, expected {n_fields}: "
                f"{line!r}"
            )
        current.append(fields)
    if current:
        sentences.append(current)
    return sentences


def load_conll2000(subset: str = "train") -> list[Sentence]:
    """CoNLL-2000 chunking: sentences of ``(word, pos, chunk_tag)`` (IOB2 chunk tags).

    Tjong Kim Sang & Buchholz (2000); WSJ sections 15-18 (``"train"``, 8936 sentences,
    211727 tokens, 22 chunk tags) and 20 (``"test"``, 2012 sentences, 47377 tokens), from
    NLTK's copy (``conll2000/{train,test}.txt.gz``). WSJ text is LDC material.
    """
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    return _read_sentences(f"conll2000/{subset}.txt.gz", 3)


def load_conll2002(subset: str = "train", pos: bool = False) -> list[Sentence]:
    """CoNLL-2002 Spanish NER: sentences of ``(word, tag)``, or ``(word, pos, tag)`` with ``pos``.

    Tjong Kim Sang (2002); EFE news, tags B-/I- PER, ORG, LOC, MISC and O (9 tags).
    ``subset``: ``"train"`` (8323 sentences, 264715 tokens), ``"testa"`` (1915 / 52923, the
    development set) or ``"testb"`` (1517 / 51533, the test set).

    ``pos=False`` reads the main files ``conll2002/esp.*``; ``pos=True`` reads NLTK's copy
    ``conll2002/nltk_with_pos/esp.*.gz``, which adds POS tags and has the same words but one
    different NER tag per file (an I- where the main files have B-; SOURCES.md). Research use
    in the context of the shared task only (original README).
    """
    if subset not in ("train", "testa", "testb"):
        raise ValueError(f"subset must be 'train', 'testa' or 'testb', got {subset!r}")
    if pos:
        return _read_sentences(f"conll2002/nltk_with_pos/esp.{subset}.gz", 3, " ")
    return _read_sentences(f"conll2002/esp.{subset}", 2, " ")


def load_treebank(traces: bool = True) -> list[Sentence]:
    """Penn Treebank WSJ sample (NLTK's tenth, wsj_0001-wsj_0199): sentences of ``(word, tag)``.

    3914 sentences, 100676 tokens, 45 POS tags plus ``-NONE-`` for the 6592 trace tokens
    (``treebank/wsj_sample_tagged.txt.gz``, made from ``combined/*.mrg``, like NLTK's
    ``treebank.tagged_sents()``). ``traces=False`` removes the ``-NONE-`` tokens (sentences
    that would become empty are dropped; none do in this sample). (C) LDC 1995, non-commercial
    use only.
    """
    sentences = _read_sentences("treebank/wsj_sample_tagged.txt.gz", 2, "\t")
    if not traces:
        sentences = [[tok for tok in s if tok[1] != "-NONE-"] for s in sentences]
        sentences = [s for s in sentences if s]
    return sentences
