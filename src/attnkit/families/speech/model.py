"""A speech checkpoint as a model object: ``transcribe(audio)`` and ``evaluate()``.

::

    model = attnkit.load("runs/speech_numbers_las/best")
    heard = model.transcribe("ninety-seven.wav")   # or a speech Item, or float samples
    heard.digits, heard.attention                  # "97", (U, S): outputs over listener frames
    heard.plot("97.png")                           # the spectrogram, the attention path over it
    model.evaluate(split="test")                   # held-out voices: exact match and CER
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from attnkit.data.audio import read_wav
from attnkit.data.features import log_mel
from attnkit.data.tasks import speech
from attnkit.data.tasks.speech_set import OUTPUTS, decode, make_set
from attnkit.errors import InputError
from attnkit.evaluation.scores import Scores
from attnkit.families import arguments as check
from attnkit.families.speech.bundle import load_speech
from attnkit.families.speech.evaluate import MAX_DIGITS, score
from attnkit.viz.spectrogram import plot_listening


@dataclass
class Transcript:
    """What the model heard: ``digits``, and ``attention`` (U, S): each output's weights over
    the listener's frames (``2^pyramid_layers`` feature frames each)."""

    digits: str
    outputs: list[str]
    attention: np.ndarray
    features: np.ndarray  # (T, F) the log-mel features heard
    stride: int  # feature frames per listener frame
    words: list[tuple[str, int, int]] | None = None  # spoken words: (word, first, stop frame)

    def plot(self, path=None):
        """The spectrogram with the attention path over it, the attention beneath (a figure;
        saved to ``path`` when given)."""
        return plot_listening(
            self.features, self.attention, self.outputs, self.stride, path, self.words
        )


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
        return f"SpeechModel({self.config.model.attention} attention, path={self.path})"

    def transcribe(self, audio) -> Transcript:
        """``audio``: a WAV file's path, a :class:`~attnkit.data.tasks.speech.Item`, or float
        samples (N,) at the task's 22,050 Hz."""
        rate, words = self.config.data.mel.sample_rate, None
        if isinstance(audio, speech.Item):
            heard = speech.speak(audio, self.config.data.directory)
            samples, words = heard.samples, self._words(heard)
        elif isinstance(audio, str | Path):
            wav = read_wav(audio)
            if wav.sample_rate != rate:
                raise InputError(
                    f"{audio}: {wav.sample_rate} Hz; this model hears {rate} Hz audio", "audio"
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
        ids, weights = self.net.greedy(
            features[None].to(device), torch.tensor([len(features)]), MAX_DIGITS
        )
        ids = ids[0].tolist()
        steps = len(decode(ids)) + 1 if len(decode(ids)) < len(ids) else len(ids)
        return Transcript(
            decode(ids),
            [OUTPUTS[i] for i in ids[:steps]],
            weights[0, :steps].cpu().numpy(),
            features.numpy(),
            2**self.config.model.pyramid_layers,
            words,
        )

    def _words(self, heard: speech.Utterance) -> list[tuple[str, int, int]]:
        hop = self.config.data.mel.hop
        return [
            (heard.item.text[s.start : s.end], -(-s.first // hop), -(-s.stop // hop))
            for s in heard.segments
        ]

    def evaluate(self, split: str = "test", out=None) -> Scores:
        """Exact match and CER of greedy spellings of ``split`` (test: held-out voices), overall
        and per language; ``out``: a directory for ``scores.json``."""
        check.choice(split, "split", speech.SPLITS)
        data = make_set(self.config.data, split)
        scores = {"model": str(self.path), "family": "speech", "split": split}
        scores["task"] = self.config.data.task  # the scores table's first line names it
        scores["greedy"] = score(self.net, data)
        scores["metric"] = "exact_match"
        if out is not None:
            out = Path(out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
        return Scores(scores)
