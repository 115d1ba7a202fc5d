"""Speech synthesis with eSpeak NG, in memory, through ctypes (``pip install attnkit[speech]``).

The library and its voices come in the ``espeakng-loader`` wheel (``get_library_path()``,
``get_data_path()``), so synthesis needs no system package and no download. eSpeak is
initialised in ``AUDIO_OUTPUT_SYNCHRONOUS`` mode: :func:`synthesise` returns when the text is
spoken, and a synthesis callback collects the samples and the ``WORD`` events, each with the
sample where its word begins. eSpeak keeps one global state (voice, rate, pitch, callback), so
every call holds :data:`_LOCK` from loading the library to the last sample; and it keeps state
between calls that no API call resets (a pitch-flutter index, its noise), so each call loads a
private copy of the library afresh (a few milliseconds). Its random generator (the breath noise
of voices such as ``f2``, ``f3``, ``f5``) is seeded from the clock when it starts, so each call
also sets it to :data:`RANDOM_SEED`: the same settings give the same samples, whenever spoken.

Word events name a word by its character position in the text; eSpeak gives none for the
parts of a hyphenated word (``ninety-seven`` is one event), so callers that need each part's
timing speak it with spaces.
"""

from __future__ import annotations

import _ctypes
import atexit
import ctypes
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass

import numpy as np

from attnkit.errors import AttnkitError

INSTALL = "pip install attnkit[speech]"

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # a failed start returns an error instead of ending the process
_EVENT_LIST_TERMINATED, _EVENT_WORD, _EVENT_END = 0, 1, 5
_RATE, _PITCH = 1, 3  # espeak_PARAMETER
_POS_CHARACTER = 1
_CHARS_UTF8, _ENDPAUSE = 1, 0x1000
_PHONEMES_IPA = 2  # espeak_TextToPhonemes' phonememode: IPA, no separator

RATES = (80, 450)
"""eSpeak's speaking rates, words per minute (default 175)."""
PITCHES = (0, 100)
"""eSpeak's base pitch scale (default 50)."""
RANDOM_SEED = 0
"""eSpeak's random generator's seed at every call (eSpeak itself seeds it from the clock)."""


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):  # espeak_EVENT of speak_lib.h
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),  # 1-based character position of the word
        ("length", ctypes.c_int),  # characters of the word
        ("audio_position", ctypes.c_int),  # milliseconds
        ("sample", ctypes.c_int),  # samples since the start of this text
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


@dataclass(frozen=True)
class Word:
    """One word eSpeak spoke: characters ``[start, end)`` of the text, from sample ``sample``."""

    start: int
    end: int
    sample: int


@dataclass
class Speech:
    """A text spoken: ``samples`` int16 ``(N,)`` at ``sample_rate``; its words in order."""

    samples: np.ndarray
    sample_rate: int
    words: list[Word]


def _library_copy() -> str:
    """A private copy of the library, made once per process: loading it fresh for each call
    resets the state eSpeak keeps in function statics (pitch flutter, noise), which no API call
    resets, so the same settings give the same samples whatever was spoken before."""
    global _COPY
    if _COPY is None:
        try:
            import espeakng_loader
        except ImportError:
            raise AttnkitError(f"speech synthesis needs espeakng-loader: {INSTALL}") from None
        original = espeakng_loader.get_library_path()
        folder = tempfile.mkdtemp(prefix="attnkit-espeak-")
        atexit.register(shutil.rmtree, folder, True)
        _COPY = (shutil.copy(original, os.path.join(folder, os.path.basename(original))),)
        _COPY += (espeakng_loader.get_data_path(),)
    return _COPY[0]


def _open() -> ctypes.CDLL:
    """The library loaded afresh, initialised to synthesise in memory (hold :data:`_LOCK`)."""
    lib = ctypes.CDLL(_library_copy(), mode=getattr(os, "RTLD_LOCAL", 0))
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.espeak_Info.restype = ctypes.c_char_p
    lib.espeak_Info.argtypes = [ctypes.c_void_p]
    rate = lib.espeak_Initialize(
        _AUDIO_OUTPUT_SYNCHRONOUS, 0, _COPY[1].encode(), _INITIALIZE_DONT_EXIT
    )
    if rate <= 0:
        _close(lib)
        raise AttnkitError(f"eSpeak NG did not start (error {rate})")
    set_seed = getattr(lib, "espeak_ng_SetRandSeed", None)  # eSpeak NG 1.50 and later
    if set_seed is not None:
        set_seed.argtypes, set_seed.restype = [ctypes.c_long], None
        set_seed(RANDOM_SEED)
    lib.sample_rate = rate
    return lib


def _close(lib: ctypes.CDLL) -> None:
    lib.espeak_Terminate()
    unload = getattr(_ctypes, "dlclose", None) or _ctypes.FreeLibrary  # POSIX, else Windows
    unload(lib._handle)  # the next _open starts from the library's initial state


class _Collector:
    """What the synthesis callback is given during one call: samples and events."""

    def __init__(self):
        self.chunks: list[np.ndarray] = []
        self.events: list[tuple[int, int, int, int]] = []  # (type, text position, length, sample)
        self.callback = _CALLBACK(self._collect)  # kept here: ctypes must not free it

    def _collect(self, wav, count, events) -> int:
        if wav and count > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, (count,)).copy())
        i = 0
        while events[i].type != _EVENT_LIST_TERMINATED:
            e = events[i]
            self.events.append((e.type, e.text_position, e.length, e.sample))
            i += 1
        return 0  # go on


_LOCK = threading.Lock()
_COPY: tuple[str, str] | None = None  # (the library's private copy, the voices' directory)
_VERSION: str | None = None


def version() -> str:
    """The eSpeak NG release that speaks (part of every cache key of spoken audio)."""
    global _VERSION
    with _LOCK:
        if _VERSION is None:
            lib = _open()
            try:
                _VERSION = lib.espeak_Info(None).decode()
            finally:
                _close(lib)
        return _VERSION


def synthesise(text: str, voice: str, rate: int = 175, pitch: int = 50) -> Speech:
    """``text`` spoken by ``voice`` (a language, or language+variant: ``de+m3``) at ``rate``
    words per minute and base ``pitch`` (0-100). The same arguments give the same samples.

    Raises AttnkitError naming the voice eSpeak does not know, or a rate or pitch out of range.
    """
    if not (RATES[0] <= rate <= RATES[1]):
        raise AttnkitError(f"rate {rate}: eSpeak speaks {RATES[0]} to {RATES[1]} words a minute")
    if not (PITCHES[0] <= pitch <= PITCHES[1]):
        raise AttnkitError(f"pitch {pitch}: eSpeak's pitch is {PITCHES[0]} to {PITCHES[1]}")
    encoded = text.encode("utf-8")
    collector = _Collector()
    with _LOCK:  # eSpeak is one global: voice, parameters, callback
        lib = _open()
        try:
            lib.espeak_SetSynthCallback(collector.callback)
            if lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise AttnkitError(f"eSpeak NG has no voice {voice!r}")
            lib.espeak_SetParameter(_RATE, rate, 0)
            lib.espeak_SetParameter(_PITCH, pitch, 0)
            flags = _CHARS_UTF8 | _ENDPAUSE
            status = lib.espeak_Synth(
                encoded, len(encoded) + 1, 0, _POS_CHARACTER, 0, flags, None, None
            )
            lib.espeak_Synchronize()
            sample_rate = lib.sample_rate
        finally:
            _close(lib)
    if status != 0:
        raise AttnkitError(f"eSpeak NG could not speak {text!r} (error {status})")
    chunks = collector.chunks
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return Speech(samples, sample_rate, _words(text, collector.events))


def phonemes(text: str, voice: str) -> str:
    """What ``voice`` would say for ``text``, in IPA (eSpeak's ``espeak_TextToPhonemes``): a
    clause at a time, joined with spaces; nothing is synthesised.

    Raises AttnkitError naming a voice eSpeak does not know."""
    pointer = ctypes.c_char_p(text.encode("utf-8"))
    clauses = []
    with _LOCK:
        lib = _open()
        try:
            if lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise AttnkitError(f"eSpeak NG has no voice {voice!r}")
            convert = lib.espeak_TextToPhonemes
            convert.restype = ctypes.c_char_p
            convert.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int]
            while pointer.value:  # eSpeak moves the pointer past each clause it converts
                clause = convert(ctypes.byref(pointer), _CHARS_UTF8, _PHONEMES_IPA)
                if clause is None:
                    break
                clauses.append(clause.decode())
        finally:
            _close(lib)
    return " ".join(clauses)


def _words(text: str, events) -> list[Word]:
    """The WORD events as character spans of ``text`` (positions are counted in characters,
    1-based), in the order spoken."""
    return [
        Word(position - 1, position - 1 + length, sample)
        for kind, position, length, sample in events
        if kind == _EVENT_WORD and 0 < position <= len(text)
    ]
