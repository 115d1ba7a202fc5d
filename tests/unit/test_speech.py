"""The speech task: spoken numbers, their voices per split, gold timings and the audio cache."""

from __future__ import annotations

import re

import numpy as np
import pytest
from num2words import num2words

pytest.importorskip("espeakng_loader")

from attnkit.data import espeak  # noqa: E402
from attnkit.data.tasks import speech  # noqa: E402
from attnkit.data.tasks.speech import Item, Voice  # noqa: E402


def _item(text="siebenundneunzig", digits="97", lang="de", variant="m3", noise=0.0, seed=0):
    return Item(text, digits, Voice(lang, variant, 175, 50, noise, seed))


def test_words_are_spoken_one_by_one():
    assert speech.segments_of("siebenundneunzig", "de") == [(0, 6), (6, 9), (9, 16)]
    assert speech.segments_of("dreihundertzwei", "de") == [(0, 4), (4, 11), (11, 15)]
    assert speech.segments_of("ninety-seven", "en") == [(0, 6), (7, 12)]
    assert speech.segments_of("quatre-vingt-dix", "fr") == [(0, 6), (7, 12), (13, 16)]
    assert speech.segments_of("quatre-vingt-dix-huit", "fr") == [(0, 6), (7, 12), (13, 21)]


@pytest.mark.parametrize("lang", ["en", "fr", "es"])
def test_numbers_cut_into_words_are_pronounced_as_written(lang):
    """Speaking the words one by one changes no sound (German is cut inside its compounds, so
    its stress and final devoicing change: ``und`` alone is ``ʊnt``; it is left out)."""

    def sounds(text):  # stress and word breaks aside
        return re.sub(r"[\sˈˌ]", "", espeak.phonemes(text, lang))

    wrong = []
    for n in range(200):  # every word of 0..999 but the hundreds' (18, 78, 98 in French)
        text = num2words(n, lang=lang)
        spoken = " ".join(text[a:b] for a, b in speech.segments_of(text, lang))
        if sounds(spoken) != sounds(text):
            wrong.append((text, espeak.phonemes(text, lang), espeak.phonemes(spoken, lang)))
    assert not wrong


def test_an_utterance_is_audio_with_its_words_in_order_inside_it(tmp_path):
    heard = speech.speak(_item(), cache=tmp_path)
    assert heard.samples.dtype == np.float32 and len(heard.samples) > heard.sample_rate // 2
    text = heard.item.text
    assert [text[s.start : s.end] for s in heard.segments] == ["sieben", "und", "neunzig"]
    bounds = [(s.first, s.stop) for s in heard.segments]
    assert all(a < b for a, b in bounds)
    assert all(b1 == a2 for (_, b1), (a2, _) in zip(bounds, bounds[1:]))  # word after word
    assert bounds[-1][1] <= len(heard.samples)


def test_the_gold_links_each_digit_to_the_words_that_name_it(tmp_path):
    heard = speech.speak(_item(), cache=tmp_path)
    sieben, und, neunzig = ((s.first, s.stop) for s in heard.segments)
    nine, seven = speech.gold_samples(heard)
    assert set(nine) == {und, neunzig} and set(seven) == {sieben, und}
    assert min(nine)[0] > min(seven)[0]  # the 9 is heard after the 7: attention must go back
    gold = speech.gold_frames(heard, hop=220)
    frames_of_nine = gold.sources_of(0)
    assert (
        min(frames_of_nine) == -(-und[0] // 220) and max(frames_of_nine) == (neunzig[1] - 1) // 220
    )
    assert not gold.sure  # each digit of 97 is named by two words


def test_a_digit_no_word_names_has_no_frames(tmp_path):
    heard = speech.speak(_item("ninety", "90", "en"), cache=tmp_path)
    tens, units = speech.gold_samples(heard)
    assert tens and units == []


def test_the_same_item_sounds_the_same_and_a_held_out_voice_differently(tmp_path):
    first = speech.speak(_item(noise=0.05, seed=3), cache=tmp_path / "a")
    again = speech.speak(_item(noise=0.05, seed=3), cache=tmp_path / "b")  # synthesised again
    assert np.array_equal(first.samples, again.samples)
    other_noise = speech.speak(_item(noise=0.05, seed=4), cache=tmp_path / "a")
    assert not np.array_equal(first.samples, other_noise.samples)
    held_out = speech.speak(_item(variant=speech.VARIANTS["test"][0]), cache=tmp_path)
    clean = speech.speak(_item(), cache=tmp_path)
    assert len(held_out.samples) != len(clean.samples) or not np.array_equal(
        held_out.samples, clean.samples
    )


def test_spoken_audio_is_read_from_the_cache_the_second_time(tmp_path, monkeypatch):
    first = speech.speak(_item(noise=0.02, seed=1), cache=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1

    def no_synthesis(*args, **kwargs):
        raise AssertionError("spoke again what the cache holds")

    monkeypatch.setattr(espeak, "synthesise", no_synthesis)
    again = speech.speak(_item(noise=0.02, seed=1), cache=tmp_path)
    assert np.array_equal(first.samples, again.samples) and first.segments == again.segments
    noisier = speech.speak(_item(noise=0.08, seed=9), cache=tmp_path)  # the noise is not cached
    assert len(noisier.samples) == len(first.samples)
    with pytest.raises(AssertionError, match="spoke again"):
        speech.speak(_item(variant="f1"), cache=tmp_path)
    assert speech.cache_key("a", _item().voice) != speech.cache_key("b", _item().voice)


def test_splits_hold_out_numbers_and_voices():
    items = speech.generate(seed=1, languages=("en", "de"), max_number=99)
    assert {name: len(items[name]) for name in speech.SPLITS} == {
        "train": 160,
        "dev": 20,
        "test": 20,
    }
    for name, variants in speech.VARIANTS.items():
        assert {item.voice.variant for item in items[name]} <= set(variants)
    for lang in ("en", "de"):
        numbers = {
            n: {i.digits for i in items[n] if i.voice.language == lang} for n in speech.SPLITS
        }
        assert not numbers["train"] & numbers["test"] and not numbers["dev"] & numbers["test"]
    assert speech.generate(seed=1, languages=("en", "de"), max_number=99) == items
    assert speech.generate(seed=2, languages=("en", "de"), max_number=99) != items
    voices = [item.voice for item in items["train"]]
    ranges = speech.VoiceRanges()
    assert all(ranges.rates[0] <= v.rate <= ranges.rates[1] for v in voices)
    assert len({v.rate for v in voices}) > 10 and len({v.variant for v in voices}) > 5


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        speech.generate(languages=("xx",))
    with pytest.raises(ValueError, match="languages is empty"):
        speech.generate(languages=())
    with pytest.raises(ValueError, match="rates"):
        speech.generate(ranges=speech.VoiceRanges(rates=(10, 100)))
    with pytest.raises(ValueError, match="range 5..1 is empty"):
        speech.generate(ranges=speech.VoiceRanges(pitches=(5, 1)))
    with pytest.raises(ValueError, match="not a pair of the numbers task"):
        speech.gold_samples(speech.speak(_item("sieben", "8"), cache=tmp_path))


def test_max_items_keeps_a_seeded_subset_of_each_split_per_language():
    full = speech.generate(seed=1, languages=("en", "de"), max_number=99)
    some = speech.generate(seed=1, languages=("en", "de"), max_number=99, max_items=(30, 5, 200))
    for lang in ("en", "de"):
        counts = {
            name: sum(1 for item in some[name] if item.voice.language == lang)
            for name in speech.SPLITS
        }
        assert counts == {"train": 30, "dev": 5, "test": 10}  # test holds 10 per language
    for name in speech.SPLITS:  # the same items, voices included, in the full splits' order
        kept = [full[name].index(item) for item in some[name]]
        assert kept == sorted(kept)
    again = speech.generate(seed=1, languages=("en", "de"), max_number=99, max_items=(30, 5, 200))
    other = speech.generate(seed=2, languages=("en", "de"), max_number=99, max_items=(30, 5, 200))
    assert again == some and other["train"] != some["train"]
    with pytest.raises(ValueError, match="max_items"):
        speech.generate(max_number=99, max_items=(30, 0, 5))
