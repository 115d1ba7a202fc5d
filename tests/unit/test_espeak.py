"""eSpeak NG through ctypes: audio in memory, word events in order, determinism, thread safety."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytest.importorskip("espeakng_loader")

from attnkit.data import espeak  # noqa: E402
from attnkit.errors import AttnkitError  # noqa: E402


def test_speech_is_audio_with_its_words_in_order_inside_it():
    text = "nine hundred and ninety seven"
    speech = espeak.synthesise(text, "en+m3")
    assert speech.sample_rate == 22_050 and speech.samples.dtype == np.int16
    assert 0.5 < len(speech.samples) / speech.sample_rate < 5  # a second or two of speech
    assert np.abs(speech.samples).max() > 1000  # not silence
    assert [text[w.start : w.end] for w in speech.words] == text.split()
    samples = [w.sample for w in speech.words]
    assert samples == sorted(samples) and len(set(samples)) == len(samples)
    assert 0 <= samples[0] and samples[-1] < len(speech.samples)


def test_word_positions_count_characters_not_bytes():
    text = "fünf hundert drei"  # ü is two bytes in UTF-8
    words = espeak.synthesise(text, "de").words
    assert [(w.start, w.end) for w in words] == [(0, 4), (5, 12), (13, 17)]


def test_phonemes_say_what_a_voice_would_speak_without_synthesising():
    joined, apart = espeak.phonemes("dix-huit", "fr"), espeak.phonemes("dix huit", "fr")
    assert "z" in joined and "z" not in apart  # the liaison of 18, lost when spoken apart
    assert espeak.phonemes("noventa y siete", "es").count(" ") == 2  # three words
    with pytest.raises(AttnkitError, match="no voice 'xx-nope'"):
        espeak.phonemes("one", "xx-nope")


def test_the_same_settings_give_the_same_samples_and_another_voice_others():
    first = espeak.synthesise("sieben und neunzig", "de+m3", rate=160, pitch=40)
    again = espeak.synthesise("sieben und neunzig", "de+m3", rate=160, pitch=40)
    assert np.array_equal(first.samples, again.samples)
    other = espeak.synthesise("sieben und neunzig", "de+f4", rate=160, pitch=40)
    faster = espeak.synthesise("sieben und neunzig", "de+m3", rate=300, pitch=40)
    assert not np.array_equal(first.samples, other.samples)
    assert len(faster.samples) < len(first.samples)


def test_a_breathy_voice_sounds_the_same_a_second_later():
    """eSpeak seeds the random generator of its breath noise (voice variant f2) from the clock
    when it starts; attnkit sets the seed, so the clock's second does not change the samples."""
    first = espeak.synthesise("acht", "de+f2", rate=134, pitch=68)
    time.sleep(1.1)
    again = espeak.synthesise("acht", "de+f2", rate=134, pitch=68)
    assert np.array_equal(first.samples, again.samples)


def test_threads_share_the_engine_one_at_a_time():
    expected = {v: espeak.synthesise("quarante deux", f"fr+{v}").samples for v in ("m1", "f2")}
    got: dict[str, list[np.ndarray]] = {"m1": [], "f2": []}

    def speak(variant):
        for _ in range(3):
            got[variant].append(espeak.synthesise("quarante deux", f"fr+{variant}").samples)

    threads = [threading.Thread(target=speak, args=(v,)) for v in got]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for variant, runs in got.items():
        assert all(np.array_equal(run, expected[variant]) for run in runs)


def test_bad_settings_are_one_line_each():
    with pytest.raises(AttnkitError, match="no voice 'xx-nope'"):
        espeak.synthesise("one", "xx-nope")
    with pytest.raises(AttnkitError, match="rate 20: eSpeak speaks 80 to 450"):
        espeak.synthesise("one", "en", rate=20)
    with pytest.raises(AttnkitError, match="pitch 101"):
        espeak.synthesise("one", "en", pitch=101)
    assert espeak.version()[0].isdigit()
