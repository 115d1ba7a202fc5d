"""Gold alignments of the generated tasks, checked on hand-made cases in every language."""

import pytest
from num2words import num2words

from attnkit.data.tasks import dates, numbers
from attnkit.data.tasks.gold import gold_aligner
from attnkit.families.seq2seq.config import experiment_from_dict


def _named(source: str, target: str, align) -> list[str]:
    """For each output character, the source characters linked to it, as text."""
    a = align(source, target)
    return ["".join(source[i] for i in sorted(a.sources_of(j))) for j in range(len(target))]


def _sure_outputs(source, target, align) -> set[int]:
    return {j for j, _ in align(source, target).sure}


@pytest.mark.parametrize(
    "words, digits, expected",
    [
        # German names the units before the tens; "und" belongs to both
        ("siebenundneunzig", "97", ["undneunzig", "siebenund"]),
        # French 97 = 4*20 + 10 + 7: "dix" depends on the tens and the units
        ("quatre-vingt-dix-sept", "97", ["quatre-vingt-dix-", "dix-sept"]),
        # a zero is named by nothing: no units word
        ("neunzig", "90", ["neunzig", ""]),
        # words are compared as words: no letter of "noventa" matches "sesenta"'s; the tens
        # reach "siete" as 17 is "diecisiete"
        ("noventa y siete", "97", ["noventa y siete", " y siete"]),
        # an implied 1 is named by the word it multiplies, a zero by nothing
        ("cent un", "101", ["cent", "un", " un"]),
        # a tens digit of 1 rewrites the units word too ("eleven")
        ("seventy-one", "71", ["seventy-one", "-one"]),
    ],
)
def test_words2digits_links_each_digit_to_the_words_that_name_it(words, digits, expected):
    assert _named(words, digits, numbers.gold_alignment) == expected
    # a digit named by several characters has possible links only
    assert _sure_outputs(words, digits, numbers.gold_alignment) == set()


def test_digits2words_links_each_letter_to_its_digits_sure_where_one_names_it():
    source, target = "de: 97", "siebenundneunzig"
    named = _named(source, target, numbers.gold_alignment)
    assert named == ["7"] * 6 + ["97"] * 3 + ["9"] * 7
    sure = _sure_outputs(source, target, numbers.gold_alignment)
    assert sure == set(range(6)) | set(range(9, 16))  # "und" has two sources: possible only


@pytest.mark.parametrize("lang", numbers.LANGUAGES)
def test_every_digit_of_a_long_number_is_named_by_something_but_zeros(lang):
    n = 123456789
    a = numbers.gold_alignment(num2words(n, lang=lang), str(n))
    assert a.linked_outputs() == list(range(9))
    assert a.sure <= a.possible


def test_pairs_the_generator_does_not_write_have_no_alignment():
    assert numbers.gold_alignment("siebenundneunzig", "98") is None
    assert numbers.gold_alignment("de: 97", "neunundsiebzig") is None
    assert numbers.gold_alignment("xx: 97", "siebenundneunzig") is None
    assert numbers.gold_alignment("siebenundneunzig", "97", languages=("en",)) is None


def test_numeric_dates_link_digit_to_digit_right_aligned():
    source, target = "3/4/97", "1997-03-04"  # en_US short
    named = _named(source, target, dates.gold_alignment)
    # the century and the month's and day's leading zeros are named by their whole field
    assert named == ["97", "97", "9", "7", "", "3", "3", "", "4", "4"]
    assert _sure_outputs(source, target, dates.gold_alignment) == {2, 3, 5, 6, 8, 9}


def test_a_month_name_names_both_month_digits_and_weekdays_name_nothing():
    source, target = "Dienstag, 4. März 1997", "1997-03-04"  # de_DE full
    named = _named(source, target, dates.gold_alignment)
    assert named == ["1", "9", "9", "7", "", "März", "März", "", "4", "4"]
    assert _sure_outputs(source, target, dates.gold_alignment) == {0, 1, 2, 3, 8, 9}


def test_every_generated_date_has_an_alignment():
    for s in dates.sample(seed=3, n=200):
        a = dates.gold_alignment(s.source, s.target)
        assert a is not None, s
        assert set(a.linked_outputs()) >= {0, 1, 2, 3, 5, 6, 8, 9} - {0, 1}  # centuries may be


def test_a_date_no_format_writes_has_no_alignment():
    assert dates.gold_alignment("3/4/97", "1997-03-05") is None
    assert dates.gold_alignment("3/4/97", "not a date") is None


def test_the_aligner_follows_the_task_and_its_levels():
    numbers_cfg = experiment_from_dict({"data": {"task": "numbers", "languages": ["de"]}}).data
    align = gold_aligner(numbers_cfg)
    assert align("siebenundneunzig", "97") is not None
    assert align("seventy-one", "71") is None  # English is not among the task's languages
    dates_cfg = experiment_from_dict({"data": {"task": "dates"}}).data
    assert gold_aligner(dates_cfg) is dates.gold_alignment
    g2p_cfg = experiment_from_dict({"data": {"task": "g2p", "directory": "cmudict"}}).data
    assert gold_aligner(g2p_cfg) is None
