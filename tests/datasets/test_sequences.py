"""Sequence corpora: sentence and token counts and tag sets of SOURCES.md."""

import pytest

from zbound.datasets import load, load_conll2000, load_conll2002, load_treebank

pytestmark = pytest.mark.data


def _counts(sentences):
    return len(sentences), sum(len(s) for s in sentences)


@pytest.mark.parametrize(
    ("subset", "n_sent", "n_tok", "n_tags"),
    [("train", 8936, 211727, 22), ("test", 2012, 47377, 19)],
)
def test_conll2000(subset, n_sent, n_tok, n_tags):
    sents = load_conll2000(subset)
    assert _counts(sents) == (n_sent, n_tok)
    assert all(len(tok) == 3 for s in sents for tok in s)
    assert len({tok[2] for s in sents for tok in s}) == n_tags
    if subset == "train":
        assert sents[0][0] == ("Confidence", "NN", "B-NP")


NER_TAGS = {"O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"}


@pytest.mark.parametrize(
    ("subset", "n_sent", "n_tok", "differing_token", "word"),
    [("train", 8323, 264715, 214887, "San"), ("testa", 1915, 52923, 29784, "Río"),
     ("testb", 1517, 51533, 9029, "Calidad")],
)
def test_conll2002_both_copies(subset, n_sent, n_tok, differing_token, word):
    plain = load_conll2002(subset)
    with_pos = load_conll2002(subset, pos=True)
    assert _counts(plain) == _counts(with_pos) == (n_sent, n_tok)
    assert all(len(t) == 2 for s in plain for t in s)
    assert all(len(t) == 3 for s in with_pos for t in s)
    assert {t[-1] for s in plain for t in s} == NER_TAGS
    flat_plain = [t for s in plain for t in s]
    flat_pos = [t for s in with_pos for t in s]
    assert [t[0] for t in flat_plain] == [t[0] for t in flat_pos]
    # SOURCES.md: exactly one NER tag differs per file (I- in NLTK, B- in the main files),
    # at the 0-based token index it gives.
    diffs = [i for i, (a, b) in enumerate(zip(flat_plain, flat_pos)) if a[1] != b[2]]
    assert diffs == [differing_token] and flat_plain[differing_token][0] == word
    assert flat_plain[diffs[0]][1].startswith("B-") and flat_pos[diffs[0]][2].startswith("I-")


def test_conll2002_plain_first_sentence_and_errors():
    assert load_conll2002("train")[0][:3] == [("Melbourne", "B-LOC"), ("(", "O"),
                                              ("Australia", "B-LOC")]
    with pytest.raises(ValueError, match="subset"):
        load_conll2002("test")


def test_treebank_with_and_without_traces():
    sents = load_treebank()
    assert _counts(sents) == (3914, 100676)
    tags = {t[1] for s in sents for t in s}
    assert len(tags) == 46 and "-NONE-" in tags
    assert sents[0][:2] == [("Pierre", "NNP"), ("Vinken", "NNP")]
    clean = load("treebank", traces=False)
    assert _counts(clean) == (3914, 100676 - 6592)
    assert "-NONE-" not in {t[1] for s in clean for t in s}
