"""The helpers of the learning track: quick mode, Nadaraya-Watson attention pooling (kernels,
masking, a learnt width), and the bottleneck's data and length buckets."""

import pytest
import torch

from attnkit.errors import ConfigError
from attnkit.lessons import kernel_regression as kr
from attnkit.lessons import mode, sentiment, sequences


@pytest.mark.parametrize(
    "value, expected", [(None, True), ("1", True), ("0", False), ("false", False), ("yes", True)]
)
def test_quick_mode_is_on_unless_switched_off(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("QUICK", raising=False)
    else:
        monkeypatch.setenv("QUICK", value)
    assert mode.quick() is expected
    assert mode.pick("quick", "full") == ("quick" if expected else "full")


@pytest.mark.parametrize("value, expected", [(None, 0), ("", 0), ("2", 2), (" 7 ", 7)])
def test_the_seed_is_zero_unless_set(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("SEED", raising=False)
    else:
        monkeypatch.setenv("SEED", value)
    assert mode.seed() == expected
    overrides = {"train.epochs": 3}
    if expected == 0:  # the lesson as written: the config keeps its own seed
        assert mode.seeded(overrides) == overrides and mode.train_seed(1) == 1
    else:
        assert mode.seeded(overrides) == {"train.epochs": 3, "train.seed": 1000 + expected}
        assert mode.train_seed(1) == 1000 + expected
    assert overrides == {"train.epochs": 3}  # not changed in place


@pytest.mark.parametrize("value", ["-1", "two", "1.5", "99999999999"])
def test_a_bad_seed_is_one_line_naming_it(monkeypatch, value):
    monkeypatch.setenv("SEED", value)
    with pytest.raises(ConfigError, match=r"^SEED: expected a whole number >= 0"):
        mode.seed()


def test_weights_are_a_softmax_of_closeness():
    keys = torch.tensor([0.0, 1.0, 3.0])
    w = kr.kernel_weights(torch.tensor([0.9]), keys, "gaussian", width=0.5)
    assert torch.allclose(w.sum(-1), torch.ones(1))
    assert w[0].argmax() == 1 and w[0, 0] > w[0, 2]  # nearest first, farthest last
    wide = kr.kernel_weights(torch.tensor([0.9]), keys, "gaussian", width=100.0)
    assert torch.allclose(wide, torch.full((1, 3), 1 / 3), atol=1e-3)  # too wide: a plain mean
    assert kr.entropy(wide) > kr.entropy(w)


def test_the_boxcar_kernel_and_a_padding_mask_give_exact_zeros():
    keys = torch.tensor([0.0, 1.0, 2.0, 9.0])
    box = kr.kernel_weights(torch.tensor([1.0]), keys, "boxcar", width=1.0)
    assert box.tolist() == [[pytest.approx(1 / 3)] * 3 + [0.0]]
    padded = torch.tensor([True, True, False, False])  # the last two keys are padding
    w = kr.kernel_weights(torch.tensor([2.0, 9.0]), keys, "laplace", width=1.0, mask=padded)
    assert (w[:, 2:] == 0).all() and torch.allclose(w.sum(-1), torch.ones(2))
    nothing = kr.kernel_weights(torch.tensor([5.0]), keys, "boxcar", width=1.0)
    assert (nothing == 0).all()  # no key in reach: zeros, not NaN


def test_a_fitted_width_beats_a_constant_and_a_bad_width():
    x, y = kr.toy_data(60, seed=1)
    queries = torch.linspace(0, 5, 50)
    target = kr.truth(queries)
    width = kr.fit_width(x, y, steps=150)
    fitted = kr.mse(kr.nadaraya_watson(queries, x, y, width=width)[0], target)
    constant = kr.mse(torch.full_like(target, float(y.mean())), target)
    too_wide = kr.mse(kr.nadaraya_watson(queries, x, y, width=5.0)[0], target)
    assert 0.05 < width < 2.0
    assert fitted < 0.5 * constant and fitted < too_wide


def test_bad_kernel_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown kernel 'cosine'"):
        kr.kernel_weights(torch.zeros(1), torch.zeros(2), "cosine")
    with pytest.raises(ValueError, match="width must be > 0"):
        kr.kernel_weights(torch.zeros(1), torch.zeros(2), width=0.0)
    with pytest.raises(ValueError, match="boxcar"):
        kr.fit_width(torch.zeros(3), torch.zeros(3), "boxcar")


def test_digit_pairs_name_one_digit_per_word_and_splits_are_disjoint(tmp_path):
    splits = sequences.digit_splits(300, 40, 60, max_len=12, seed=2)
    assert (len(splits.train), len(splits.dev), len(splits.test)) == (300, 40, 60)
    for src, tgt in splits.train + splits.test:
        words, digits = src.split(), tgt.split()
        assert [sequences.DIGIT_WORDS[int(d)] for d in digits] == words
        assert 1 <= len(words) <= 12
    assert not {s for s, _ in splits.train} & {s for s, _ in splits.test}
    paths = sequences.write_splits(splits, tmp_path)
    lines = open(paths["test"], encoding="utf-8").read().splitlines()
    assert lines[0].split("\t") == list(splits.test[0])


def test_accuracy_by_length_buckets_by_source_words():
    pairs = [("one", "1"), ("one two", "1 2"), ("one two three", "1 2 3"), ("two", "2")]
    outputs = ["1", "1 2", "1 2 2", "3"]
    rows = sequences.accuracy_by_length(outputs, pairs, [1, 2, 3, 9])
    assert rows == [
        {"lengths": "1-1", "items": 2, "exact": 50.0},
        {"lengths": "2-2", "items": 1, "exact": 100.0},
        {"lengths": "3-8", "items": 1, "exact": 0.0},
        {"lengths": "9+", "items": 0, "exact": None},
    ]
    with pytest.raises(ValueError, match="3 outputs for 4 pairs"):
        sequences.accuracy_by_length(outputs[:3], pairs, [1])


def test_generated_sentiment_one_word_decides_and_is_written_as_tsv(tmp_path):
    examples = sentiment.sentences(300, min_len=4, max_len=9, seed=3)
    assert {e.label for e in examples} == set(sentiment.LABELS)
    for e in examples:
        assert 4 <= len(e.words) <= 9
        opinion = [i for i, w in enumerate(e.words) if w in sentiment.POSITIVE + sentiment.NEGATIVE]
        if e.label == "neutral":
            assert opinion == [] and e.cue is None
        else:
            assert opinion == [e.cue]  # exactly one opinion word, where cue says
            kind = sentiment.POSITIVE if e.label == "positive" else sentiment.NEGATIVE
            assert e.words[e.cue] in kind
    assert sentiment.sentences(20, seed=1) == sentiment.sentences(20, seed=1)
    paths, splits = sentiment.write_splits(tmp_path, 30, 10, 12, max_len=12, seed=0)
    assert [len(splits[k]) for k in ("train", "dev", "test")] == [30, 10, 12]
    lines = open(paths["test"], encoding="utf-8").read().splitlines()
    assert lines[0] == f"{splits['test'][0].label}\t{splits['test'][0].text}"
    assert splits["train"] != splits["test"]
    with pytest.raises(ValueError, match="min_len"):
        sentiment.sentences(1, min_len=5, max_len=3)
