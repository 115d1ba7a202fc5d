import random

import pytest
import sacrebleu

from attnkit.errors import ConfigError
from attnkit.evaluation import metrics
from attnkit.evaluation.metrics import (
    bleu,
    char_error_rate,
    chrf,
    edit_distance,
    exact_match,
    g2p_scores,
    sequence_metrics,
    text_scores,
    word_error_rate,
)


def test_exact_match_fraction():
    assert exact_match(["a b", "c", "d "], ["a b", "x", "d"]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        exact_match(["a"], ["a", "b"])


@pytest.mark.parametrize(
    "a, b, d",
    [
        ("", "", 0),
        ("abc", "", 3),
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        (["AH", "B"], ["AH", "K", "B"], 1),
    ],
)
def test_edit_distance_known_cases(a, b, d):
    assert edit_distance(list(a), list(b)) == d
    assert metrics._levenshtein_dp(list(a), list(b)) == d


def test_edit_distance_library_equals_dp():
    rng = random.Random(0)
    for _ in range(200):
        a = [rng.choice("ABCD") for _ in range(rng.randint(0, 8))]
        b = [rng.choice("ABCD") for _ in range(rng.randint(0, 8))]
        assert edit_distance(a, b) == metrics._levenshtein_dp(a, b)


def test_g2p_any_reference_counts_and_per_uses_closest():
    refs = {
        "ABS": ["AE B Z", "EY B IY EH S"],  # hypothesis equals the SECOND reference: right
        "ACE": ["EY S"],  # one substitution in 2 phones
        "ALTOS": ["AE L T OW Z", "AO L T OW S"],  # 1 edit from the second, 2 from the first
    }
    hyps = {"ABS": "EY B IY EH S", "ACE": "EY Z", "ALTOS": "AO L T OW Z"}
    scores = g2p_scores(hyps, refs)
    assert scores["words"] == 3
    assert scores["wer"] == pytest.approx(100 * 2 / 3, abs=1e-3)
    # distances to the closest refs: 0 (len 5) + 1 (len 2) + 1 (len 5)
    assert scores["per"] == pytest.approx(100 * 2 / 12, abs=1e-3)
    # list form gives the same
    assert g2p_scores(list(hyps.values()), list(refs.values())) == scores


def test_g2p_per_takes_closest_not_first_reference():
    scores = g2p_scores(["K AE T"], [["D AO G Z", "K AE T S"]])
    assert scores == {"wer": 100.0, "per": 25.0, "words": 1}
    assert g2p_scores(["K  AE T "], [["K AE T"]])["wer"] == 0.0  # whitespace-insensitive


def test_g2p_dict_needs_every_word():
    with pytest.raises(ValueError, match="without a hypothesis"):
        g2p_scores({"A": "AH"}, {"A": ["AH"], "B": ["B IY"]})


HYPS = [
    "A dog runs across the green field.",
    "Two men are playing soccer.",
    "A woman sits on a bench.",
]
REFS = [
    "A dog is running across a green field.",
    "Two men play soccer.",
    "A woman is sitting on a bench.",
]


def test_bleu_and_chrf_equal_sacrebleu():
    assert bleu(HYPS, REFS) == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score)
    assert chrf(HYPS, REFS) == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS]).score)
    assert bleu(REFS, REFS) == pytest.approx(100.0)
    assert 0 < bleu(HYPS, REFS) < 100


def test_sequence_metrics_dispatch():
    assert sequence_metrics("exact", ["a", "b"], ["a", "c"]) == {"exact_match": 50.0}
    assert sequence_metrics("g2p", ["AH"], [["AH"]]) == {"wer": 0.0, "per": 0.0, "words": 1}
    out = sequence_metrics("bleu", HYPS, REFS)
    assert out == {"bleu": bleu(HYPS, REFS), "chrf": chrf(HYPS, REFS)}
    with pytest.raises(ConfigError, match="exact"):
        sequence_metrics("rouge", HYPS, REFS)


def test_word_error_rate_is_corpus_level():
    # line 1: "the cat sat" vs "the cat sat down": 1 deletion; line 2: "a dog" vs "the dog":
    # 1 substitution. Corpus: 2 edits over 4 + 2 reference words, not the mean of 25% and 50%.
    hyps, refs = ["the cat sat", "a dog"], ["the cat sat down", "the dog"]
    assert word_error_rate(hyps, refs) == pytest.approx(100 * 2 / 6)
    assert word_error_rate(refs, refs) == 0.0
    # insertions count too: an output longer than its reference passes 100%
    assert word_error_rate(["x y z"], ["w"]) == pytest.approx(300.0)


def test_char_error_rate_counts_characters_with_spaces():
    # "ab c" vs "abc": one inserted space; "xy" vs "xyz": one deletion -> 2 edits / 6 characters
    assert char_error_rate(["ab c", "xy"], ["abc", "xyz"]) == pytest.approx(100 * 2 / 6)
    assert char_error_rate(["  abc "], ["abc"]) == 0.0  # surrounding whitespace is not scored
    with pytest.raises(ValueError):
        char_error_rate(["a"], ["a", "b"])


def test_text_scores_hold_every_line_metric():
    out = text_scores(HYPS, REFS)
    assert out["bleu"] == bleu(HYPS, REFS) and out["chrf"] == chrf(HYPS, REFS)
    assert out["wer"] == word_error_rate(HYPS, REFS) and out["cer"] == char_error_rate(HYPS, REFS)
    assert out["exact_match"] == pytest.approx(100 * exact_match(HYPS, REFS), abs=1e-4)
    assert sequence_metrics("text", HYPS, REFS) == out
