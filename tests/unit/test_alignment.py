"""Gold links (the sure rule, word-level diffs) and the metrics that score attention with them."""

import math

import numpy as np
import pytest

from attnkit.data.tasks.alignment import Alignment, changed_positions, whole_words
from attnkit.evaluation.alignment import AlignmentTotals, alignment_metrics


def test_a_link_is_sure_when_it_is_its_outputs_only_link():
    a = Alignment.from_possible({(0, 0), (1, 1), (1, 2), (3, 4)})
    assert a.sure == {(0, 0), (3, 4)}
    assert a.possible == {(0, 0), (1, 1), (1, 2), (3, 4)}
    assert a.linked_outputs() == [0, 1, 3]
    assert a.sources_of(1) == {1, 2}
    assert a.to_json() == {"sure": [[0, 0], [3, 4]], "possible": [[0, 0], [1, 1], [1, 2], [3, 4]]}


def test_words_are_compared_as_words_and_compounds_letter_by_letter():
    # words are matched as words; within one word replaced by one, letter by letter ("-enta"
    # names the tens in both)
    assert changed_positions("noventa y siete", "sesenta y siete") == {0, 1, 2}
    assert changed_positions("noventa y siete", "diecisiete") == set(range(15))
    # one compound replaced by one: its letters are compared
    assert changed_positions("siebenundneunzig", "achtundneunzig") == set(range(6))
    # a word that only gains letters counts as rewritten, unless told otherwise
    assert changed_positions("ciento", "doscientos") == set(range(6))
    assert changed_positions("neunzig", "einundneunzig", grown_words=False) == set()
    # a pure insertion of words changes nothing of the original
    assert changed_positions("cent", "deux cent") == set()
    # gaps inside a word are filled, never across words
    assert whole_words("abcd ef", {0, 3, 5}) == {0, 1, 2, 3, 5}


def _one_hot(rows, s):
    w = np.zeros((len(rows), s))
    w[np.arange(len(rows)), rows] = 1.0
    return w


def test_aer_by_hand():
    gold = Alignment(frozenset({(0, 0)}), frozenset({(0, 0), (0, 1), (1, 2)}))
    # argmax: output 0 -> source 1 (possible, not sure), output 1 -> source 2 (possible)
    m = alignment_metrics([(_one_hot([1, 2], 3), gold)])
    # A = {(0,1), (1,2)}, S = {(0,0)}: 1 - (0 + 2) / (2 + 1)
    assert m["aer"] == pytest.approx(100 / 3, abs=0.01)
    assert m["argmax_in_span"] == 100.0


def test_perfect_and_wrong_attention():
    gold = Alignment.from_possible({(0, 2), (1, 1), (2, 0)})
    perfect = alignment_metrics([(_one_hot([2, 1, 0], 4), gold)])
    assert perfect["aer"] == 0.0 and perfect["argmax_in_span"] == 100.0
    wrong = alignment_metrics([(_one_hot([0, 0, 2], 4), gold)])
    assert wrong["aer"] == 100.0 and wrong["argmax_in_span"] == 0.0
    assert perfect["entropy_nats"] == 0.0 and perfect["entropy_normalised"] == 0.0


def test_the_gold_linked_rule_leaves_unlinked_outputs_and_missing_rows_out():
    gold = Alignment.from_possible({(0, 0), (2, 1)})  # output 1 ("-") has no links
    weights = _one_hot([0, 3, 1], 4)
    m = alignment_metrics([(weights, gold)], rule="gold_linked")
    assert m["linked_steps"] == 2 and m["aer"] == 0.0
    short = alignment_metrics([(weights[:1], gold)], rule="gold_linked")  # shorter than its gold
    assert short["linked_steps"] == 1


def _aer_py(hypothesis: set, sure: set, possible: set) -> float:
    """AER as the standard aer.py (awesome-align, alignment-scripts) computes it: every
    hypothesis link counts, ``1 - (|A & S| + |A & P|) / (|A| + |S|)``, in %."""
    return 100.0 * (
        1.0 - (len(hypothesis & sure) + len(hypothesis & possible)) / (len(hypothesis) + len(sure))
    )


def test_by_default_every_output_tokens_link_is_scored_as_the_standard_aer_py():
    gold = Alignment.from_possible({(0, 0), (2, 1)})  # output 1 has no gold link
    weights = _one_hot([0, 3, 1], 4)
    m = alignment_metrics([(weights, gold)])
    hypothesis = {(j, int(weights[j].argmax())) for j in range(len(weights))}
    assert m["linked_steps"] == 3
    assert m["aer"] == pytest.approx(
        _aer_py(hypothesis, set(gold.sure), set(gold.possible)), abs=0.01
    )
    assert m["aer"] == pytest.approx(20.0)  # 1 - (2 + 2) / (3 + 2)
    assert m["argmax_in_span"] == pytest.approx(200 / 3, abs=0.01)


def test_a_corpus_scores_as_the_standard_aer_py_pooled():
    rng = np.random.default_rng(0)
    items, hyp, sure, possible = [], set(), set(), set()
    for n in range(30):
        t, s = rng.integers(2, 8), rng.integers(2, 8)
        links = {(j, i) for j in range(t) for i in range(s) if rng.random() < 0.15}
        gold = Alignment.from_possible(links)
        weights = rng.random((t, s))
        items.append((weights, gold))
        hyp |= {(n, j, int(weights[j].argmax())) for j in range(t)}
        sure |= {(n, *link) for link in gold.sure}
        possible |= {(n, *link) for link in gold.possible}
    assert alignment_metrics(items)["aer"] == pytest.approx(_aer_py(hyp, sure, possible), abs=0.01)
    with pytest.raises(ValueError, match="gold_linked"):
        AlignmentTotals(rule="nope")


def test_entropy_and_coverage_of_uniform_attention():
    t, s = 3, 5
    m = alignment_metrics([(np.full((t, s), 1 / s), None)])
    assert m["entropy_nats"] == pytest.approx(math.log(s), abs=1e-4)
    assert m["entropy_normalised"] == pytest.approx(1.0, abs=1e-4)
    assert m["unattended_pct"] == 0.0  # each source token gets 3/5
    assert m["coverage_deviation"] == pytest.approx(0.4, abs=1e-4)
    assert "aer" not in m  # no gold: no alignment error


def test_unattended_source_tokens():
    m = alignment_metrics([(_one_hot([0, 0, 1], 4), None)])
    assert m["unattended_pct"] == 50.0  # sources 2 and 3 receive nothing


def test_scores_pool_links_over_the_corpus():
    gold_a = Alignment.from_possible({(0, 0)})
    gold_b = Alignment.from_possible({(0, 0), (1, 1), (2, 2)})
    totals = AlignmentTotals()
    totals.add(_one_hot([1], 2), gold_a)  # 1 wrong link
    totals.add(_one_hot([0, 1, 2], 3), gold_b)  # 3 right links
    assert totals.metrics()["argmax_in_span"] == 75.0  # pooled, not the mean of 0 and 100


def test_bad_weights_are_refused():
    with pytest.raises(ValueError, match="non-empty"):
        AlignmentTotals().add(np.zeros((0, 3)), None)
