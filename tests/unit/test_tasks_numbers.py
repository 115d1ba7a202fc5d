"""Number-translation task: content, determinism, disjoint splits, argument errors."""

import pytest

from attnkit.data.tasks import numbers
from attnkit.data.tasks.base import Splits, split_disjoint


def _all(splits: Splits):
    return splits.train + splits.dev + splits.test


@pytest.fixture(scope="module")
def default_splits():
    return numbers.generate(seed=0)


def test_german_97_is_in_some_split(default_splits):
    assert ("siebenundneunzig", "97") in _all(default_splits)


def test_default_sizes_cover_every_number_in_every_language(default_splits):
    pairs = _all(default_splits)
    sources = {s for s, _ in pairs}
    assert len(sources) == len(pairs)  # deduplicated
    # 4 languages x 1000 numbers, minus words two languages share ("six" is 6 in en and fr)
    assert 3900 < len(pairs) <= 4000
    assert {t for _, t in pairs} == {str(n) for n in range(1000)}
    assert len(default_splits.dev) == len(default_splits.test) == round(0.1 * len(pairs))


def test_same_seed_same_splits_other_seed_other_splits(default_splits):
    assert numbers.generate(seed=0) == default_splits
    assert numbers.generate(seed=1).test != default_splits.test


def test_splits_are_disjoint_by_source(default_splits):
    train = {s for s, _ in default_splits.train}
    dev = {s for s, _ in default_splits.dev}
    test = {s for s, _ in default_splits.test}
    assert not train & dev and not train & test and not dev & test


def test_digits2words_and_both():
    d2w = _all(numbers.generate(languages=("de",), direction="digits2words", max_number=120))
    assert ("de: 97", "siebenundneunzig") in d2w
    assert len(d2w) == 121
    both = _all(
        numbers.generate(languages=("de", "en"), direction="both", max_number=99, n_dev=5, n_test=5)
    )
    assert ("de: 97", "siebenundneunzig") in both and ("siebenundneunzig", "97") in both
    assert ("en: 42", "forty-two") in both and ("forty-two", "42") in both
    assert len(both) == 2 * 2 * 100


def test_explicit_held_out_sizes():
    s = numbers.generate(languages=("fr",), max_number=99, n_dev=7, n_test=3)
    assert (len(s.train), len(s.dev), len(s.test)) == (90, 7, 3)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"languages": ("xx",)}, ["'xx'", "en", "de", "fr", "es"]),
        ({"direction": "sideways"}, ["'sideways'", "words2digits", "digits2words", "both"]),
        ({"max_number": 0}, ["max_number", "0"]),
    ],
)
def test_bad_arguments_name_the_value_and_the_choices(kwargs, words):
    with pytest.raises(ValueError) as err:
        numbers.generate(**kwargs)
    for word in words:
        assert word in str(err.value)


def test_split_disjoint_rejects_a_source_with_two_targets():
    with pytest.raises(ValueError, match="'a'"):
        split_disjoint([("a", "1"), ("b", "2"), ("a", "3")], n_dev=0, n_test=0, seed=0)


def test_split_disjoint_ignores_input_order_and_duplicates():
    pairs = [(str(i), str(i * 2)) for i in range(50)]
    a = split_disjoint(pairs, n_dev=5, n_test=5, seed=3)
    b = split_disjoint(list(reversed(pairs)) + pairs[:10], n_dev=5, n_test=5, seed=3)
    assert a == b and len(a.train) == 40
    with pytest.raises(ValueError, match="only 50 distinct"):
        split_disjoint(pairs, n_dev=30, n_test=30, seed=0)
