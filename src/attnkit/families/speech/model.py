"""A speech checkpoint as a model object: ``transcribe(audio)`` and ``evaluate()``.

::

    model = attnkit.load("runs/speech_numbers_las/best")
    heard = model.transcribe("ninety-seven.wav")   # or a speech Item, or float samples
    heard.digits, heard.attention                  # "97", (U, S): outputs over listener frames
    heard.plot("97.png")                           # the spectrogram, the attention path over it
    heard.show()                                   # inline: the same with an audio player
    model.evaluate(split="test")                   # held-out voices: exact match and CER
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from attnkit.data.audio import Audio, read_wav, wav_bytes
from attnkit.data.features import log_mel
from attnkit.data.location import checkpoint_data
from attnkit.data.tasks import speech
from attnkit.data.tasks.speech_set import OUTPUTS, decode, make_set
from attnkit.errors import InputError
from attnkit.evaluation.scores import Scores
from attnkit.families import arguments as check
from attnkit.families.speech.bundle import load_speech
from attnkit.families.speech.evaluate import MAX_DIGITS, score
from attnkit.models.ctc import CTC
from attnkit.viz.inline import listening_html, listening_payload, show_html
from attnkit.viz.spectrogram import plot_listening


@dataclass
class Transcript:
    """What the model heard: ``digits``, and ``attention`` (U, S): each output's weights over
    the listener's frames (``stride`` feature frames each); for a CTC model, which has no
    attention, each output label's posterior at every frame."""

    digits: str
    outputs: list[str]
    attention: np.ndarray
    features: np.ndarray  # (T, F) the log-mel features heard
    stride: int  # feature frames per listener frame
    words: list[tuple[str, int, int]] | None = None  # spoken words: (word, first, stop frame)
    samples: np.ndarray | None = None  # (N,) the audio heard, in -1..1
    sample_rate: int = 22_050
    hop: int = 220  # samples per feature frame
    weights: str = "attention"  # what ``attention`` holds: "attention", or CTC's "posterior"

    def plot(self, path=None):
        """The spectrogram with the attention path over it, the attention beneath, the gold
        words' boundaries labelled (a figure; saved to ``path`` when given)."""
        return plot_listening(
            self.features, self.attention, self.outputs, self.stride, path, self.words, self.weights
        )

    def show(self) -> Path | None:
        """The spectrogram, the attention and an audio player whose cursor follows the played
        frame: inline in a notebook, else a page in a temporary file (its path is returned)."""
        return show_html(self._repr_html_(), "speech")

    def to_dict(self) -> dict:
        """Plain JSON types: the digits and what the inline view draws (the features, the
        weights, the words, the audio as a WAV ``data:`` URI)."""
        if self.samples is None:
            raise InputError("this transcript holds no audio to play", "samples")
        wav = wav_bytes(Audio(self.samples, self.sample_rate))
        return {
            "digits": self.digits,
            **listening_payload(
                self.features,
                self.attention,
                self.outputs,
                self.stride,
                self.hop,
                wav,
                self.sample_rate,
                self.words,
                self.weights,
            ),
        }

    def _repr_html_(self) -> str:
        return listening_html(self.to_dict())


def spoken(language: str, number: str) -> speech.Item:
    """``"de", "97"``: the number (at most 6 digits) as the first held-out voice speaks it."""
    if language not in speech.LANGUAGES:
        raise InputError(
            f"language: {language!r}; give one of {', '.join(speech.LANGUAGES)}", "language"
        )
    if not number.isdigit() or len(number) > 6:
        raise InputError(f"number: {number!r}; give a number of at most 6 digits", "number")
    from num2words import num2words

    voice = speech.Voice(language, speech.VARIANTS["test"][0], 175, 50, 0.0, 0)
    return speech.Item(num2words(int(number), lang=language), str(int(number)), voice)


class SpeechModel:
    """A trained Listen-Attend-Spell model (see the module docstring)."""

    family = "speech"

    def __init__(self, config, net, path: Path | None = None):
        self.config, self.net, self.path = config, net, path

    @classmethod
    def load(cls, directory: str | Path, device: str = "auto") -> SpeechModel:
        config, net = load_speech(directory, device)
        return cls(config, net, Path(directory))

    def __repr__(self) -> str:
        kind = {"ctc": "CTC", "transformer": "Transformer over frames"}.get(
            self.config.model.kind, f"{self.config.model.attention} attention"
        )
        return f"SpeechModel({kind}, path={self.path})"

    def transcribe(self, audio) -> Transcript:
        """``audio``: a WAV file's path, an :class:`~attnkit.data.audio.Audio` (as
        :func:`~attnkit.data.audio.wav_from_bytes` reads one), a
        :class:`~attnkit.data.tasks.speech.Item` (:func:`spoken`), or float samples (N,) at the
        task's 22,050 Hz."""
        rate, words = self.config.data.mel.sample_rate, None
        if isinstance(audio, speech.Item):
            heard = speech.speak(audio, self.config.data.directory)
            samples, words = heard.samples, self._words(heard)
        elif isinstance(audio, str | Path | Audio):
            wav = read_wav(audio) if isinstance(audio, str | Path) else audio
            if wav.sample_rate != rate:
                name = "audio" if isinstance(audio, Audio) else audio
                raise InputError(
                    f"{name}: {wav.sample_rate} Hz; this model hears {rate} Hz audio", "audio"
                )
            samples = wav.samples
        elif isinstance(audio, np.ndarray | torch.Tensor | list | tuple):
            try:  # a list holding None or text is no samples: said as one, not converted
                samples = np.asarray(audio, dtype=np.float32)
            except (TypeError, ValueError):
                samples = np.empty(0, np.float32)
            if samples.ndim != 1 or samples.size == 0 or not np.isfinite(samples).all():
                raise InputError("audio: give finite samples (N,), N >= 1", "audio")
        else:
            raise InputError(
                "audio: give a WAV file's path, an Item or samples (N,), "
                f"not {type(audio).__name__}",
                "audio",
            )
        features = log_mel(torch.from_numpy(samples), self.config.data.mel)  # (T, F)
        device = next(self.net.parameters()).device
        lengths = torch.tensor([len(features)])
        ctc = isinstance(self.net, CTC)
        if ctc:
            labels, posteriors = self.net.greedy(features[None].to(device), lengths)
            ids = labels[0]
            weights = posteriors[0, :, ids].T.cpu().numpy()  # (U, S): each label's posterior
        else:
            found, attention = self.net.greedy(features[None].to(device), lengths, MAX_DIGITS)
            ids = found[0].tolist()
            steps = len(decode(ids)) + 1 if len(decode(ids)) < len(ids) else len(ids)
            ids, weights = ids[:steps], attention[0, :steps].cpu().numpy()
        return Transcript(
            decode(ids),
            [OUTPUTS[i] for i in ids],
            weights,
            features.numpy(),
            self.net.listener.stride,
            words,
            np.asarray(samples, dtype=np.float32),
            rate,
            self.config.data.mel.hop,
            "posterior" if ctc else "attention",
        )

    def _words(self, heard: speech.Utterance) -> list[tuple[str, int, int]]:
        hop = self.config.data.mel.hop
        return [
            (heard.item.text[s.start : s.end], -(-s.first // hop), -(-s.stop // hop))
            for s in heard.segments
        ]

    def evaluate(self, split: str = "test", out=None, data_dir=None) -> Scores:
        """Exact match and CER of greedy spellings of ``split`` (test: held-out voices), overall
        and per language; ``out``: a directory for ``scores.json``; ``data_dir``: the audio
        cache to speak into and read from (default ``$ATTNKIT_DATA_DIR/speech``, else the user
        cache; the checkpoint's own ``data.directory`` is not followed)."""
        check.choice(split, "split", speech.SPLITS)
        if data_dir is not None:
            check.path(data_dir, "data_dir")
        data = make_set(checkpoint_data(self.config.data, data_dir), split)
        scores = {"model": str(self.path), "family": "speech", "split": split}
        scores["task"] = self.config.data.task  # the scores table's first line names it
        scores["greedy"] = score(self.net, data)
        scores["metric"] = "exact_match"
        if out is not None:
            out = Path(out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
        return Scores(scores)
