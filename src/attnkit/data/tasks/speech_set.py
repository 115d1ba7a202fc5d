"""The speech task as a model reads it: the ``data:`` section, features, targets and batches.

:class:`SpeechData` says which spoken numbers (:mod:`attnkit.data.tasks.speech`) and features
(:mod:`attnkit.data.features`) an experiment uses; :func:`make_set` speaks one split (from the
audio cache where it can) and turns it into log-mel features and digit targets, each ending
with ``</s>``. A split's features are kept beside the audio (:func:`features_path`), so the
models trained, evaluated or benchmarked on the same split extract them once. Outputs are
``<s>``, ``</s>`` and the ten digits.

Shapes: B batch, T feature frames, F mel bands, U output steps.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from attnkit.data.features import MelConfig, log_mel
from attnkit.data.tasks import speech
from attnkit.errors import ConfigError

OUTPUTS = ("<s>", "</s>", *"0123456789")
"""The speller's outputs, by id."""
BOS, EOS = 0, 1
PAD = -1  # a target position past the end of its spelling
_FEATURES_FORMAT = 1  # bump when the features made from the same audio change


@dataclass
class SpeechData:
    """The ``data:`` section of a speech experiment (``family: speech``)."""

    task: str = "numbers"  # numbers: spoken numbers -> digits
    languages: list[str] = field(
        default_factory=lambda: list(speech.LANGUAGES)
    )  # the languages spoken: any of en, de, fr, es
    max_number: int = 999  # numbers 0..max_number of each language, split as the numbers task
    # at most [train, dev, test] utterances of each language, drawn with the seed (null: all)
    max_items: list[int] | None = None
    seed: int = 0  # the split, and each item's voice, rate, pitch and noise
    rates: list[int] = field(default_factory=lambda: [130, 230])  # words a minute, low and high
    pitches: list[int] = field(default_factory=lambda: [25, 75])  # eSpeak's 0-100, low and high
    noise: list[float] = field(default_factory=lambda: [0.0, 0.1])  # noise RMS / speech RMS
    n_mels: int = 40  # mel bands of the features (23 ms windows, 10 ms hop at 22.05 kHz)
    directory: str | None = None  # the spoken-audio cache (null: the data directory's speech/)

    CHOICES = {"task": ("numbers",)}
    PATH_KEYS = ("directory",)

    def validate(self, where: str) -> None:
        if not self.languages or any(lang not in speech.LANGUAGES for lang in self.languages):
            raise ConfigError(
                f"{where}.languages: {self.languages!r}: choose from {', '.join(speech.LANGUAGES)}"
            )
        if self.max_number < 1:
            raise ConfigError(f"{where}.max_number: must be at least 1, got {self.max_number}")
        if self.max_items is not None and (len(self.max_items) != 3 or min(self.max_items) < 1):
            raise ConfigError(
                f"{where}.max_items: give [train, dev, test], each at least 1, "
                f"got {self.max_items!r}"
            )
        for name in ("rates", "pitches", "noise"):
            pair = getattr(self, name)
            if len(pair) != 2 or pair[0] > pair[1]:
                raise ConfigError(f"{where}.{name}: give [low, high], got {pair!r}")
        if not 8 <= self.n_mels <= 128:
            raise ConfigError(f"{where}.n_mels: must be 8 to 128, got {self.n_mels}")

    @property
    def mel(self) -> MelConfig:
        return MelConfig(n_mels=self.n_mels)

    def ranges(self) -> speech.VoiceRanges:
        return speech.VoiceRanges(tuple(self.rates), tuple(self.pitches), tuple(self.noise))


def encode(digits: str) -> list[int]:
    """``"97"`` -> the ids of 9, 7 and ``</s>``."""
    return [OUTPUTS.index(d) for d in digits] + [EOS]


def decode(ids) -> str:
    """Ids up to the first ``</s>`` -> their digits (``<s>`` left out)."""
    text = []
    for i in ids:
        if i == EOS:
            break
        if i != BOS:
            text.append(OUTPUTS[i])
    return "".join(text)


@dataclass
class SpeechSet:
    """One split heard: per item, features (T, F) and its target ids (ending ``</s>``)."""

    items: list[speech.Item]
    features: list[Tensor]
    targets: list[list[int]]

    def __len__(self) -> int:
        return len(self.items)

    def batch(self, indices) -> tuple[Tensor, Tensor, Tensor]:
        """Items ``indices`` -> features (B, T, F) zero-padded, lengths (B,), targets (B, U)
        padded with :data:`PAD`."""
        feats = [self.features[i] for i in indices]
        lengths = torch.tensor([len(f) for f in feats])
        padded = torch.nn.utils.rnn.pad_sequence(feats, batch_first=True)  # (B, T, F)
        longest = max(len(self.targets[i]) for i in indices)
        targets = torch.full((len(feats), longest), PAD, dtype=torch.long)
        for row, i in enumerate(indices):
            targets[row, : len(self.targets[i])] = torch.tensor(self.targets[i])
        return padded, lengths, targets


def make_set(cfg: SpeechData, split: str) -> SpeechSet:
    """The items of ``split`` (train, dev or test) spoken and made features, read from the
    features cache when this split was made before with the same audio and features."""
    try:
        most = None if cfg.max_items is None else tuple(cfg.max_items)
        items = speech.generate(
            cfg.seed, tuple(cfg.languages), cfg.max_number, cfg.ranges(), max_items=most
        )
    except ValueError as exc:
        raise ConfigError(f"data: {exc}") from None
    chosen = items[split]
    path = features_path(chosen, cfg.mel, speech.cache_dir(cfg.directory))
    features = _read_features(path, len(chosen), cfg.n_mels)
    if features is None:
        features = [
            log_mel(torch.from_numpy(speech.speak(item, cfg.directory).samples), cfg.mel)
            for item in chosen
        ]
        _write_features(path, features)
    return SpeechSet(chosen, features, [encode(item.digits) for item in chosen])


def features_path(items: list[speech.Item], mel: MelConfig, directory: Path) -> Path:
    """The file holding the features of ``items`` in ``directory``, named by a hash of each
    item's audio (its eSpeak output's cache key, its noise) and of ``mel``: training runs,
    evaluations and benchmarks over the same split share one extraction."""
    settings = {
        "format": _FEATURES_FORMAT,
        "mel": asdict(mel),
        "items": [[speech.item_key(i), i.voice.noise, i.voice.seed] for i in items],
    }
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:32]
    return directory / f"features-{digest}.safetensors"


def _read_features(path: Path, count: int, n_mels: int) -> list[Tensor] | None:
    """The ``count`` features ``(T, n_mels)`` stored at ``path``; None where there is no such
    file or it does not hold them (it is made again)."""
    if not path.is_file():
        return None
    try:
        stored = load_file(path)
        frames, lengths = stored["frames"], stored["lengths"]
    except (OSError, KeyError, SafetensorError):
        return None
    if (
        lengths.shape != (count,)
        or (count and int(lengths.min()) < 1)
        or frames.dtype != torch.float32
        or frames.shape != (int(lengths.sum()), n_mels)
    ):
        return None
    return list(frames.split(lengths.tolist()))


def _write_features(path: Path, features: list[Tensor]) -> None:
    """Store ``features`` at ``path`` atomically; a cache that cannot be written is left
    unwritten (the features were made, only not kept)."""
    if not features:
        return
    lengths = torch.tensor([len(f) for f in features], dtype=torch.long)
    partial = path.with_name(f"{path.stem}.{os.getpid()}-{threading.get_ident()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file({"frames": torch.cat(features).contiguous(), "lengths": lengths}, partial)
        os.replace(partial, path)
    except (OSError, SafetensorError):
        partial.unlink(missing_ok=True)
