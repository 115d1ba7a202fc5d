"""Subword maps brought to words, and word alignments scored against human links."""

from __future__ import annotations

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
