"""Scoring spoken numbers: WER over the words a number is spoken as, and the gold word timings
at the listener's resolution."""

from __future__ import annotations

import pytest

pytest.importorskip("espeakng_loader")

from attnkit.data.tasks import speech  # noqa: E402
from attnkit.families.speech.evaluate import _figures, listener_gold, spoken_words  # noqa: E402


def test_spoken_words_cut_german_compounds_as_espeak_speaks_them():
    assert spoken_words("97", "de") == "sieben und neunzig"
    assert spoken_words("97", "en") == "ninety seven"
    assert spoken_words("", "en") == "" and spoken_words("9x", "en") == ""


def test_one_wrong_digit_is_one_wrong_word_and_one_wrong_character():
    voice = speech.Voice("de", "m7", 175, 50, 0.0, 0)
    items = [speech.Item("siebenundneunzig", "97", voice), speech.Item("drei", "3", voice)]
    figures = _figures(["96", "3"], items)
    assert figures["exact_match"] == 50.0
    assert figures["cer"] == pytest.approx(100 * 1 / 3, abs=0.01)  # 1 of 3 digits
    assert figures["wer"] == pytest.approx(100 * 1 / 4, abs=0.01)  # sechs for sieben, of 4 words


def test_the_gold_links_reach_the_listener_frames_of_the_digits_words(tmp_path):
    item = speech.Item("ninety-seven", "97", speech.Voice("en", "m7", 175, 50, 0.0, 0))
    heard = speech.speak(item, tmp_path)
    fine = speech.gold_frames(heard, 220)
    coarse = listener_gold(heard, 220, 6)
    assert not coarse.sure
    for j in (0, 1):
        frames = {t for jj, t in fine.possible if jj == j}
        assert coarse.sources_of(j) == {t // 6 for t in frames}
    assert min(coarse.sources_of(1)) > 0  # the 7 is named by seven alone, after ninety
