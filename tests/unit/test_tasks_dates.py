"""Date-normalisation task: locales, valid ISO targets, one target per source, exact sizes."""

import datetime as dt
import time

import pytest

from attnkit.data.tasks import dates


def _all(splits):
    return splits.train + splits.dev + splits.test


@pytest.fixture(scope="module")
def default_splits():
    start = time.perf_counter()
    splits = dates.generate(seed=0)
    return splits, time.perf_counter() - start


def test_default_sizes_are_exact_and_generation_is_fast(default_splits):
    splits, seconds = default_splits
    assert (len(splits.train), len(splits.dev), len(splits.test)) == (20000, 1000, 1000)
    assert seconds < 10  # about 1 s on a laptop core; generous for a shared machine


def test_every_target_is_an_iso_date_in_range(default_splits):
    for _, target in _all(default_splits[0]):
        day = dt.date.fromisoformat(target)
        assert day.isoformat() == target
        assert 1950 <= day.year <= 2049


def test_every_source_has_exactly_one_target(default_splits):
    pairs = _all(default_splits[0])
    assert len({s for s, _ in pairs}) == len(pairs)
    assert len(set(pairs)) == len(pairs)


def test_splits_are_disjoint(default_splits):
    splits = default_splits[0]
    train, dev, test = ({s for s, _ in p} for p in (splits.train, splits.dev, splits.test))
    assert not train & dev and not train & test and not dev & test


def test_sample_matches_generate_and_uses_many_locales_and_formats(default_splits):
    samples = dates.sample(seed=0, n=22000)
    assert {(s.source, s.target) for s in samples} == set(_all(default_splits[0]))
    locales = {s.locale for s in samples}
    assert len(locales) >= 6 and locales == set(dates.DEFAULT_LOCALES)
    assert {s.format for s in samples} == set(dates.DEFAULT_FORMATS)
    assert sum(len(s.source) for s in samples) / len(samples) < 40
    # the generated text really comes from the recorded locale
    assert any(s.locale == "de_DE" and "März" in s.source for s in samples)


def test_same_seed_same_splits_other_seed_other_splits():
    a = dates.generate(seed=5, n_train=300, n_dev=50, n_test=50)
    assert a == dates.generate(seed=5, n_train=300, n_dev=50, n_test=50)
    assert a.test != dates.generate(seed=6, n_train=300, n_dev=50, n_test=50).test


def test_day_month_order_ambiguity_is_dropped():
    # en_US writes M/d/yy and es_ES d/M/yy: "3/4/97" would mean two dates.
    samples = dates.sample(seed=0, n=3000, locales=("en_US", "es_ES"), formats=("short",))
    for s in samples:
        month_day = s.source.split("/")[:2]
        assert month_day[0] == month_day[1] or int(max(month_day, key=int)) > 12, s


def test_collisions_drawn_twice_are_dropped_even_without_the_parser(monkeypatch):
    # Disable the pattern parser: the draw-time check alone must keep sources unique.
    monkeypatch.setattr(dates, "_readings", lambda *args: set())
    samples = dates.sample(seed=0, n=3000, locales=("en_US", "es_ES"), formats=("short",))
    assert len({s.source for s in samples}) == 3000
    target_of = {}
    for s in samples:
        assert target_of.setdefault(s.source, s.target) == s.target


def test_two_digit_years_only_in_a_100_year_window():
    samples = dates.sample(seed=0, n=500, start_year=1900, end_year=2049, formats=("short", "long"))
    assert {s.target[:4] for s in samples} & {
        "1901",
        "1902",
        "1903",
        "1904",
        "1905",
    }  # range honoured
    for s in samples:  # every numeric source writes all four year digits
        if not any(c.isalpha() for c in s.source):
            assert s.target[:4] in s.source, s
    # en_US short is M/d/yy, so en_US may only use long over 150 years
    assert {s.format for s in samples if s.locale == "en_US"} == {"long"}


def test_bad_arguments():
    with pytest.raises(ValueError, match="xx_YY"):
        dates.generate(locales=("xx_YY",), n_train=10, n_dev=0, n_test=0)
    with pytest.raises(ValueError, match="start_year"):
        dates.generate(start_year=2000, end_year=1999)
    with pytest.raises(ValueError, match="day, a month and a year"):
        dates.generate(formats=("MMMM y",), n_train=10, n_dev=0, n_test=0)
    with pytest.raises(ValueError, match="found only"):
        dates.generate(
            start_year=2000, end_year=2000, formats=("dd.MM.y",), n_train=400, n_dev=0, n_test=0
        )
