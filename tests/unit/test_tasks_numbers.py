"""Number-translation task: content, determinism, disjoint splits, argument errors."""

import pytest
import yaml

from attnkit.data.tasks import numbers
from attnkit.data.tasks.base import Splits, split_disjoint
from attnkit.data.tasks.registry import build_splits
from attnkit.errors import ConfigError
from attnkit.families.seq2seq.config import load_experiment


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


# Lists (data.count > 1): several numbers written out one after another, the long-input variant.


def _words_to_digits(source: str, lang: str) -> str:
    """The digits of a list's words, each number read back through num2words' own table."""
    table = {numbers.num2words(n, lang=lang): str(n) for n in range(1000)}
    return " ".join(table[w] for w in source.split(numbers.LIST_SEPARATOR))


def test_lists_hold_count_numbers_in_their_language_and_their_digits_in_order():
    s = numbers.generate_lists(seed=3, languages=("de",), count=6, sizes=(40, 5, 7))
    assert (len(s.train), len(s.dev), len(s.test)) == (40, 5, 7)
    for source, target in _all(s):
        assert len(target.split(" ")) == 6 and len(source.split(numbers.LIST_SEPARATOR)) == 6
        assert _words_to_digits(source, "de") == target  # each number read back in place


def test_lists_are_long_deterministic_and_disjoint_by_source():
    kwargs = {"languages": ("en", "de"), "count": 20, "sizes": (200, 20, 30)}
    s = numbers.generate_lists(seed=0, **kwargs)
    assert numbers.generate_lists(seed=0, **kwargs) == s
    assert numbers.generate_lists(seed=1, **kwargs).test != s.test
    lengths = [len(src) for src, _ in _all(s)]
    assert 300 < min(lengths) and sum(lengths) / len(lengths) > 400  # ~25 characters a number
    train, dev, test = ({src for src, _ in part} for part in (s.train, s.dev, s.test))
    assert not train & dev and not train & test and not dev & test
    english = {numbers.num2words(n, lang="en") for n in range(1000)}
    in_english = [set(src.split(numbers.LIST_SEPARATOR)) <= english for src, _ in s.train]
    assert 50 < sum(in_english) < 150  # one language a list, each drawn about half the time


def test_lists_digits2words_and_both():
    d2w = numbers.generate_lists(
        languages=("en",), direction="digits2words", count=2, sizes=(3, 1, 1)
    )
    source, target = d2w.test[0]
    assert source.startswith("en: ") and _words_to_digits(target, "en") == source[4:]
    both = numbers.generate_lists(languages=("en",), direction="both", count=2, sizes=(4, 2, 2))
    assert len(both.train) == 8 and len(both.test) == 4  # each list in both directions


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"count": 1}, ["count", ">= 2", "1"]),
        ({"sizes": (10, 0, 5)}, ["dev_size", "0"]),
        ({"max_number": 3, "count": 2, "sizes": (10, 5, 5)}, ["4^2", "20 distinct", "max_number"]),
        ({"direction": "up"}, ["'up'", "words2digits"]),
    ],
)
def test_bad_list_arguments_are_one_line_naming_the_value(kwargs, words):
    with pytest.raises(ValueError) as err:
        numbers.generate_lists(languages=("en",), **{"count": 3, **kwargs})
    assert "\n" not in str(err.value)
    for word in words:
        assert word in str(err.value)


def test_the_config_keys_reach_the_lists_and_are_refused_in_one_line(tmp_path):
    base = {"name": "x", "data": {"task": "numbers", "languages": ["en"]}}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(base), encoding="utf-8")
    sets = ["data.count=3", "data.train_size=12", "data.dev_size=2", "data.test_size=4"]
    splits = build_splits(load_experiment(path, sets).data)
    assert splits.sizes() == {"train": 12, "dev": 2, "test": 4}
    assert all(len(t.split(" ")) == 3 for _, t in splits.train)
    refused = {
        ("data.train_size=12",): "data.train_size: read only with data.count > 1",
        ("data.count=0",): "data.count",
        ("data.count=3", "data.test_size=0"): "data.test_size",
        ("data.count=3", "data.max_number=2", "data.train_size=30"): "too few",
    }
    for overrides, message in refused.items():
        with pytest.raises(ConfigError) as err:
            build_splits(load_experiment(path, list(overrides)).data)
        assert message in str(err.value) and "\n" not in str(err.value), str(err.value)
