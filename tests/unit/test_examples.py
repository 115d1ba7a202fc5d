"""Which examples a report shows (errors first, within bounds) and what it says of each."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu

from attnkit.data.tasks.registry import data_from_dict
from attnkit.evaluation.examples import (
    choose,
    group_references,
    is_translation,
    judge,
    judged_record,
    sentence_chrf,
    tally,
    within_cells,
)
from attnkit.families.seq2seq.translator import Translation
from attnkit.viz import load_records, save_records


def translation(source: str, output: str) -> Translation:
    src, out = source.split() + ["</s>"], output.split() + ["</s>"]
    weights = np.full((len(out), len(src)), 1.0 / len(src))  # (T, S)
    return Translation(source, src, output, out, weights, score=-1.5)


def test_each_source_is_scored_once_against_all_its_references():
    pairs = [("vier", "4"), ("zwei", "2"), ("vier", "IV"), ("vier", "4"), ("eins", "1")]
    grouped = group_references(pairs)
    assert list(grouped) == ["vier", "zwei", "eins"]  # first seen first, each once
    assert grouped["vier"] == ["4", "IV"]  # every reference, none twice
    assert judge(["IV", "3", "1"], list(grouped.values())) == [True, False, True]


def test_every_error_comes_first_then_right_answers_fill_the_bound():
    right = [True, True, False, True, False, True, True]
    chosen = choose(right, max_errors=10, max_examples=5)
    assert chosen[:2] == [2, 4]  # both errors, in the order decoded
    assert chosen[2:] == [0, 1, 3]  # then the first right answers, up to 5 in all
    assert choose([True] * 3, max_errors=10, max_examples=5) == [0, 1, 2]


def test_errors_are_bounded_and_may_fill_the_page():
    right = [i % 3 == 0 for i in range(30)]  # 20 errors
    wrong = [i for i, ok in enumerate(right) if not ok]
    assert choose(right, max_errors=8, max_examples=12) == wrong[:8] + [0, 3, 6, 9]
    assert choose(right, max_errors=8, max_examples=6) == wrong[:8]  # no room for right ones


def test_an_output_is_right_when_it_equals_any_of_its_references():
    assert judge(["97", "79", "x"], [["97"], ["97", "79"], ["y"]]) == [True, True, False]
    counts = tally(judge(["a", "b", "c"], [["a"], ["x"], ["y"]]))
    assert (counts.wrong, counts.total) == (2, 3)


def test_sentence_chrf_is_sacrebleus_score_of_that_one_sentence():
    ref = "a man is riding a horse on the beach"
    close, far = "a man rides a horse on the beach", "two dogs play in the snow"
    for hyp in (close, far):
        alone = sacrebleu.corpus_chrf([hyp], [[ref]]).score  # the corpus of one sentence
        assert sentence_chrf(hyp, ref) == pytest.approx(alone)
    assert sentence_chrf(ref, ref) == pytest.approx(100.0)
    assert 0.0 <= sentence_chrf(far, ref) < sentence_chrf(close, ref) < 100.0


def test_a_judged_record_names_the_reference_it_matched_and_its_chrf(tmp_path):
    hit = judged_record(translation("sieben und neunzig", "9 7"), ["97", "9 7"], 4, chrf=True)
    assert (hit.reference, hit.right, hit.correct, hit.index) == ("9 7", True, True, 4)
    assert hit.chrf == pytest.approx(100.0)
    miss = judged_record(translation("ein hund", "a cat"), ["a dog", "one dog"], 7, chrf=True)
    assert (miss.reference, miss.right, miss.correct) == ("a dog", False, False)
    assert miss.chrf == pytest.approx(round(sentence_chrf("a cat", "a dog"), 2))
    assert judged_record(translation("x", "y"), ["y"], 0, chrf=False).chrf is None
    for name in ("r.json", "r.npz"):  # what the report reads back
        save_records([hit, miss], tmp_path / name)
        back = load_records(tmp_path / name)
        assert [(r.index, r.right, r.chrf) for r in back] == [
            (r.index, r.right, r.chrf) for r in (hit, miss)
        ]


@pytest.mark.parametrize(
    "data, translates",
    [
        ({"task": "multi30k"}, True),
        ({"task": "parallel", "metric": "bleu"}, True),
        ({"task": "parallel", "metric": "chrf"}, True),
        ({"task": "parallel", "metric": "wer"}, False),
        ({"task": "parallel", "metric": "exact"}, False),
        ({"task": "numbers"}, False),
        ({"task": "g2p"}, False),
    ],
)
def test_translation_tasks_are_those_scored_by_bleu_or_chrf(data, translates):
    if data["task"] == "parallel":
        data = {**data, "train": "a.tsv", "dev": "b.tsv", "test": "c.tsv"}  # never read
    assert is_translation(data_from_dict(data)) is translates


def test_the_examples_kept_are_the_first_whose_maps_fit_the_bound():
    cells = [400, 300, 500, 100, 50]
    assert within_cells([2, 0, 1, 3], cells, max_cells=1000) == [2, 0]  # 900; 1,200 would pass
    assert within_cells([3, 4, 1], cells, max_cells=1000) == [3, 4, 1]  # all fit: none left out
    assert within_cells([0, 3], cells, max_cells=350) == []  # the first alone passes: none kept
    assert within_cells([], cells) == []
