"""Subword maps brought to words, and word alignments scored against human links."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnkit.data.tasks.alignment import Alignment
from attnkit.data.tokenizers import WhitespaceTokenizer
from attnkit.errors import AttnkitError
from attnkit.evaluation.alignment import alignment_metrics
from attnkit.evaluation.word_alignment import to_words, word_pieces


class Pieces:
    """A tokenizer that cuts every word into 2-letter pieces (like a subword model would)."""

    def tokenize(self, text):
        return [w[i : i + 2] for w in text.split() for i in range(0, len(w), 2)]


def test_word_pieces_gives_each_token_its_word():
    assert word_pieces(Pieces(), ["maison", "la"], "x") == [0, 0, 0, 1]
    assert word_pieces(WhitespaceTokenizer(False), ["a", "b"], "x") == [0, 1]


def test_a_tokenizer_that_joins_words_is_refused():
    class Joins(Pieces):
        def tokenize(self, text):
            return [text.replace(" ", "")]

    with pytest.raises(AttnkitError, match="pair 3 source: the tokenizer splits"):
        word_pieces(Joins(), ["a", "b"], "pair 3 source")


def test_to_words_sums_source_pieces_averages_target_pieces_and_drops_eos():
    # target words: t0 = pieces 0,1; t1 = piece 2; source words: s0 = piece 0; s1 = pieces 1,2
    weights = np.array(
        [
            [0.6, 0.2, 0.1, 0.1],  # piece of t0
            [0.2, 0.3, 0.3, 0.2],  # piece of t0
            [0.0, 0.5, 0.5, 0.0],  # t1
            [0.9, 0.0, 0.0, 0.1],  # </s> row: dropped
        ]
    )
    words = to_words(weights, [0, 0, 1], [0, 1, 1])
    # t0: source sums per piece row (0.6, 0.3) and (0.2, 0.6), averaged (0.4, 0.45), renormalised
    np.testing.assert_allclose(words[0], np.array([0.4, 0.45]) / 0.85)
    np.testing.assert_allclose(words[1], [0.0, 1.0])
    np.testing.assert_allclose(words.sum(axis=1), 1.0)


def test_scoring_word_maps_counts_precision_recall_and_aer():
    gold = Alignment(frozenset({(0, 0)}), frozenset({(0, 0), (1, 1), (1, 0)}))
    right = np.array([[0.9, 0.1], [0.2, 0.8]])  # t0 -> s0 (sure), t1 -> s1 (possible)
    wrong = np.array([[0.1, 0.9], [0.2, 0.8]])  # t0 -> s1 (no link), t1 -> s1 (possible)
    perfect = alignment_metrics([(right, gold)])
    assert perfect["aer"] == 0.0 and perfect["recall"] == 100.0
    assert perfect["argmax_in_span"] == 100.0
    half = alignment_metrics([(wrong, gold)])
    # A = {(0,1), (1,1)}, S = {(0,0)}, P = S + {(1,1), (1,0)}: AER = 1 - (0 + 1) / (2 + 1)
    assert half["aer"] == pytest.approx(100 * (1 - 1 / 3), abs=0.01)
    assert half["recall"] == 0.0 and half["argmax_in_span"] == 50.0


def _aer_py(gold_lines: list[str], hypotheses: list[set]) -> float:
    """AER (%) as the standard aer.py (awesome-align's, the alignment-scripts') computes it from
    the gold file's text: ``i-j`` sure, ``ipj`` possible, every hypothesis link counted."""
    a = s = a_s = a_p = 0
    for line, hypothesis in zip(gold_lines, hypotheses, strict=True):
        sure = {tuple(map(int, x.split("-"))) for x in line.split() if "-" in x}
        possible = sure | {tuple(map(int, x.split("p"))) for x in line.split() if "p" in x}
        a, s = a + len(hypothesis), s + len(sure)
        a_s, a_p = a_s + len(hypothesis & sure), a_p + len(hypothesis & possible)
    return 100.0 * (1.0 - (a_s + a_p) / (a + s))


def test_hansards_aer_is_the_standard_aer_py_by_default():
    """Random maps' argmax links over the 447 Hansards pairs, scored by attnkit and by the standard
    rule from the gold file itself; the gold-linked rule, kept as an option, scores lower."""
    import os

    from attnkit.data.tasks.human_gold import read_human_gold

    # tests/conftest.py points ATTNKIT_DATA_DIR at the shared data (a bare "from conftest import"
    # finds whichever conftest module the run imported first)
    directory = Path(os.environ.get("ATTNKIT_DATA_DIR", "").strip() or "/nonexistent")
    directory /= "gold_alignments"
    if not (directory / "enfr.gold").is_file():
        pytest.skip("no Hansards gold: set ATTNKIT_DATA_DIR to a folder holding gold_alignments/")
    pairs = read_human_gold(directory / "enfr.src-tgt", directory / "enfr.gold")
    lines = (directory / "enfr.gold").read_text(encoding="utf-8").splitlines()
    rng = np.random.default_rng(0)
    maps = [rng.random((len(p.target), len(p.source))) for p in pairs]
    # links "source-target", 1-based, as the gold file writes them
    hypotheses = [{(int(m[j].argmax()) + 1, j + 1) for j in range(len(m))} for m in maps]
    standard = alignment_metrics(zip(maps, (p.gold for p in pairs), strict=True))["aer"]
    assert standard == pytest.approx(_aer_py(lines, hypotheses), abs=0.01)
    old = alignment_metrics(zip(maps, (p.gold for p in pairs), strict=True), rule="gold_linked")
    assert old["aer"] < standard
