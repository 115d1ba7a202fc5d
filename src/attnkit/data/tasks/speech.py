"""Spoken numbers: the numbers task heard instead of read, synthesised offline with eSpeak NG.

Each item is a number of the numbers task (:mod:`attnkit.data.tasks.numbers`, words to
digits, split per language with its seed) spoken by one eSpeak voice: a language with a voice
variant (``de+m3``), a speaking rate, a base pitch and added white noise, all drawn from the
seed. The variants of the test split are heard in no other split, nor are dev's, so the held-out
scores measure a new speaker as well as a new number.

**Gold timings.** The words are spoken one by one: hyphens become spaces (eSpeak gives no event
for the parts of ``ninety-seven``) and German compounds are cut at ``hundert``, ``tausend`` and
``und`` (``sieben und neunzig``). French ``dix-huit`` stays one word: spoken apart, its ``dix``
loses the liaison (``dis huit``). eSpeak's WORD events give the sample where each spoken word
begins; it lasts until the next begins (the last, until its sound ends). The numbers task's gold
links each output digit to the characters of the words that name it (``9`` of 97 to ``neunzig``
and ``und``), so :func:`gold_samples` links it to those words' samples, and :func:`gold_frames`
to the feature frames centred in them.

**Cache.** eSpeak's output for a text, voice, rate and pitch is kept in ``<data dir>/speech/``
(:func:`attnkit.data.location.dataset_dir`) under a hash of those settings and eSpeak's version;
noise is added afterwards from the item's seed, so two items differing only in noise share it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnkit.data import espeak
from attnkit.data.features import frames_of
from attnkit.data.location import dataset_dir
from attnkit.data.tasks import numbers
from attnkit.data.tasks.alignment import Alignment

LANGUAGES = numbers.LANGUAGES
VARIANTS = {
    "train": ("m1", "m2", "m3", "m4", "m5", "m6", "f1", "f2", "f3", "klatt", "klatt2", "croak"),
    "dev": ("m8", "f5"),
    "test": ("m7", "f4", "klatt3"),
}
"""eSpeak voice variants of each split; no variant is in two."""
SPLITS = tuple(VARIANTS)
_COMPOUND = re.compile(r"hundert|tausend|und")  # German number words inside one written word
# French "dix huit" spoken apart is "dis huit": eSpeak (rightly) makes no liaison before "huit"
# alone, so 18 (and 78, 98) is spoken as written, one word, and its parts share one timing
_WORDS = {"fr": r"dix-huit|\w+"}
_FORMAT = 2  # bump when the cached file's contents change (2: eSpeak's noise seeded, not timed)


@dataclass(frozen=True)
class Voice:
    """How one item is spoken: ``noise`` is the white noise's RMS over the speech's RMS."""

    language: str
    variant: str
    rate: int
    pitch: int
    noise: float
    seed: int  # of the noise

    @property
    def name(self) -> str:
        """eSpeak's voice name, ``de+m3``."""
        return f"{self.language}+{self.variant}"


@dataclass(frozen=True)
class Item:
    """One number to speak: ``text`` as the numbers task writes it, ``digits`` its target."""

    text: str
    digits: str
    voice: Voice


@dataclass(frozen=True)
class Segment:
    """A spoken word: characters ``[start, end)`` of the item's text, samples ``[first, stop)``."""

    start: int
    end: int
    first: int
    stop: int


@dataclass
class Utterance:
    """An item heard: ``samples`` float32 ``(N,)`` in [-1, 1] at ``sample_rate``."""

    item: Item
    samples: np.ndarray
    sample_rate: int
    segments: list[Segment]


def segments_of(text: str, language: str) -> list[tuple[int, int]]:
    """The character spans of ``text`` spoken as separate words: runs of letters, German
    compounds cut around ``hundert``, ``tausend`` and ``und``, French ``dix-huit`` kept whole."""
    spans = []
    for word in re.finditer(_WORDS.get(language, r"\w+"), text):
        cuts = {word.start(), word.end()}
        if language == "de":
            for part in _COMPOUND.finditer(word.group()):
                cuts.update((word.start() + part.start(), word.start() + part.end()))
        ordered = sorted(cuts)
        spans.extend(zip(ordered, ordered[1:]))
    return spans


def speak(item: Item, cache: str | os.PathLike | None = None) -> Utterance:
    """``item`` spoken, from the cache directory ``cache`` (default: the data directory's
    ``speech/``) when it was spoken before."""
    spans = segments_of(item.text, item.voice.language)
    spoken = " ".join(item.text[a:b] for a, b in spans)
    samples, rate, firsts = _cached(spoken, item.voice, cache_dir(cache))
    bounds = list(firsts[1:]) + [_end_of_sound(samples)]
    segments = [Segment(a, b, f, s) for (a, b), f, s in zip(spans, firsts, bounds)]
    audio = samples.astype(np.float32) / 32768.0
    return Utterance(item, _noisy(audio, item.voice), rate, segments)


def cache_dir(cache: str | os.PathLike | None = None) -> Path:
    """The spoken-audio cache: ``cache``, else the data directory's ``speech/``."""
    return Path(cache or dataset_dir("speech"))


def item_key(item: Item) -> str:
    """The hash naming ``item``'s eSpeak output in the cache (:func:`cache_key`)."""
    spans = segments_of(item.text, item.voice.language)
    return cache_key(" ".join(item.text[a:b] for a, b in spans), item.voice)


def _end_of_sound(samples: np.ndarray) -> int:
    """One past the last sample louder than 1% of the peak (eSpeak ends with a pause)."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > 0.01 * np.abs(samples).max(initial=1))
    return int(loud[-1]) + 1 if len(loud) else len(samples)


def cache_key(spoken: str, voice: Voice) -> str:
    """The hash naming eSpeak's output for ``spoken`` in ``voice`` (noise left out)."""
    settings = {
        "text": spoken,
        "voice": voice.name,
        "rate": voice.rate,
        "pitch": voice.pitch,
        "espeak": espeak.version(),
        "format": _FORMAT,
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:32]


def _cached(spoken: str, voice: Voice, directory: Path) -> tuple[np.ndarray, int, list[int]]:
    """eSpeak's int16 samples, sample rate and each spoken word's first sample."""
    path = directory / f"{cache_key(spoken, voice)}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as stored:
            return stored["samples"], int(stored["rate"]), stored["firsts"].tolist()
    speech = espeak.synthesise(spoken, voice.name, voice.rate, voice.pitch)
    firsts = _word_starts(spoken, speech)
    directory.mkdir(parents=True, exist_ok=True)
    # a name of this process and thread: processes filling one cache at once never share it
    partial = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.partial.npz")
    np.savez(partial, samples=speech.samples, rate=speech.sample_rate, firsts=np.array(firsts))
    os.replace(partial, path)
    return speech.samples, speech.sample_rate, firsts


def _word_starts(spoken: str, speech: espeak.Speech) -> list[int]:
    """The first sample of each space-separated word of ``spoken``; a word eSpeak gave no
    event for starts where the one before it did (it was spoken with it)."""
    starts = [m.start() for m in re.finditer(r"\S+", spoken)]
    at = {word.start: word.sample for word in speech.words}
    firsts, last = [], 0
    for start in starts:
        last = max(last, at.get(start, last))
        firsts.append(last)
    return firsts


def _noisy(audio: np.ndarray, voice: Voice) -> np.ndarray:
    if voice.noise <= 0:
        return audio
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2))) or 1.0
    noise = np.random.default_rng(voice.seed).normal(0.0, voice.noise * rms, audio.shape)
    return np.clip(audio + noise.astype(np.float32), -1.0, 1.0)


def gold_samples(utterance: Utterance) -> list[list[tuple[int, int]]]:
    """For each output digit, the sample spans ``[first, stop)`` of the words naming it (none
    for a digit no word names: the 0 of 90)."""
    item = utterance.item
    gold = numbers.gold_alignment(item.text, item.digits, (item.voice.language,))
    if gold is None:
        raise ValueError(f"{item.text!r} -> {item.digits!r} is not a pair of the numbers task")
    return [
        [
            (seg.first, seg.stop)
            for seg in utterance.segments
            if any(seg.start <= i < seg.end for i in gold.sources_of(j))
        ]
        for j in range(len(item.digits))
    ]


def gold_frames(utterance: Utterance, hop: int) -> Alignment:
    """Links ``(output digit j, feature frame t)`` for frames centred in the words naming digit
    ``j`` (frames of hop ``hop``, :func:`attnkit.data.features.frames_of`); sure where one word
    alone names it."""
    links = set()
    sure = set()
    for j, spans in enumerate(gold_samples(utterance)):
        frames = {t for first, stop in spans for t in frames_of(first, stop, hop)}
        links.update((j, t) for t in frames)
        if len(spans) == 1:
            sure.update((j, t) for t in frames)
    return Alignment(frozenset(sure), frozenset(links))


@dataclass(frozen=True)
class VoiceRanges:
    """The ranges voices are drawn from, each inclusive."""

    rates: tuple[int, int] = (130, 230)
    pitches: tuple[int, int] = (25, 75)
    noise: tuple[float, float] = (0.0, 0.1)


def generate(
    seed: int = 0,
    languages=LANGUAGES,
    max_number: int = 999,
    ranges: VoiceRanges = VoiceRanges(),  # noqa: B008 (frozen)
    max_items: tuple[int, int, int] | None = None,
) -> dict[str, list[Item]]:
    """Train, dev and test items: per language, the numbers task's splits of its numbers (with
    ``seed``), each number spoken by a voice of its split's variants drawn from ``seed``.
    ``max_items`` (train, dev, test) keeps at most that many items of each split per language,
    drawn from ``seed`` in their order (the voices are those of the full splits), so a large
    ``max_number`` need not be spoken whole.

    Raises ValueError naming a bad language, range or count."""
    if max_items is not None and (len(max_items) != len(SPLITS) or min(max_items) < 1):
        raise ValueError(f"max_items {max_items}: give one count >= 1 for each of {SPLITS}")
    for low, high in (ranges.rates, ranges.pitches, ranges.noise):
        if low > high:
            raise ValueError(f"range {low}..{high} is empty")
    if ranges.rates[0] < espeak.RATES[0] or ranges.rates[1] > espeak.RATES[1]:
        raise ValueError(f"rates {ranges.rates}: eSpeak speaks {espeak.RATES} words a minute")
    if ranges.pitches[0] < espeak.PITCHES[0] or ranges.pitches[1] > espeak.PITCHES[1]:
        raise ValueError(f"pitches {ranges.pitches}: eSpeak's pitch is {espeak.PITCHES}")
    if ranges.noise[0] < 0:
        raise ValueError(f"noise {ranges.noise}: must be >= 0")
    languages = (languages,) if isinstance(languages, str) else tuple(languages)
    if not languages:
        raise ValueError(f"languages is empty; choose from {', '.join(LANGUAGES)}")
    items: dict[str, list[Item]] = {name: [] for name in SPLITS}
    for lang in languages:
        splits = numbers.generate(seed=seed, languages=(lang,), max_number=max_number)
        rng = np.random.default_rng([seed, LANGUAGES.index(lang)])
        for name in SPLITS:
            for text, digits in getattr(splits, name):
                voice = Voice(
                    lang,
                    str(rng.choice(VARIANTS[name])),
                    int(rng.integers(ranges.rates[0], ranges.rates[1] + 1)),
                    int(rng.integers(ranges.pitches[0], ranges.pitches[1] + 1)),
                    round(float(rng.uniform(*ranges.noise)), 4),
                    int(rng.integers(2**31)),
                )
                items[name].append(Item(text, digits, voice))
        if max_items is not None:  # a subset per language, from a generator of its own
            pick = np.random.default_rng([seed, LANGUAGES.index(lang), 1])
            for name, most in zip(SPLITS, max_items):
                mine = [i for i, item in enumerate(items[name]) if item.voice.language == lang]
                if len(mine) > most:
                    dropped = set(mine) - set(pick.choice(mine, most, replace=False).tolist())
                    items[name] = [x for i, x in enumerate(items[name]) if i not in dropped]
    return items
