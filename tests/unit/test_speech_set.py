"""The speech task as a model reads it: its data section, targets, features and batches."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("espeakng_loader")

from attnkit.config import from_dict  # noqa: E402
from attnkit.data.tasks import speech_set  # noqa: E402
from attnkit.data.tasks.speech_set import EOS, PAD, SpeechData, decode, encode  # noqa: E402
from attnkit.errors import ConfigError  # noqa: E402


def test_digits_become_ids_ending_the_spelling_and_back():
    assert encode("97") == [11, 9, EOS]
    assert decode([11, 9, EOS, 3, 4]) == "97"
    assert decode([0, 2, 3]) == "01"  # <s> is left out; no </s>: all of it


def test_bad_data_keys_are_named():
    with pytest.raises(ConfigError, match=r"data\.languages"):
        from_dict(SpeechData, {"languages": ["xx"]}, "data")
    with pytest.raises(ConfigError, match=r"data\.rates: give \[low, high\]"):
        from_dict(SpeechData, {"rates": [200, 100]}, "data")
    with pytest.raises(ConfigError, match=r"data\.max_items: give \[train, dev, test\]"):
        from_dict(SpeechData, {"max_items": [100, 10]}, "data")
    with pytest.raises(ConfigError, match=r"data\.max_items"):
        from_dict(SpeechData, {"max_items": [100, 0, 10]}, "data")
    with pytest.raises(ConfigError, match=r"data\.n_mels"):
        from_dict(SpeechData, {"n_mels": 2}, "data")


def test_a_split_is_features_and_targets_batched_with_padding(tmp_path):
    cfg = SpeechData(languages=["es"], max_number=19, directory=str(tmp_path), n_mels=24)
    data = speech_set.make_set(cfg, "test")
    assert len(data) == 2 and all(f.shape[1] == 24 for f in data.features)
    features, lengths, targets = data.batch([0, 1])
    assert features.shape == (2, int(lengths.max()), 24)
    assert lengths.tolist() == [len(f) for f in data.features]
    for row, item in enumerate(data.items):
        assert decode([t for t in targets[row].tolist() if t != PAD]) == item.digits
    short = int(lengths.argmin())
    assert torch.all(features[short, int(lengths[short]) :] == 0)


def test_max_items_caps_the_utterances_a_split_speaks(tmp_path):
    cfg = SpeechData(languages=["es"], max_number=99, max_items=[40, 3, 3], directory=str(tmp_path))
    data = speech_set.make_set(cfg, "dev")
    assert len(data) == 3 and len(data.features) == 3


def _unspeakable(item, cache=None):
    raise AssertionError(f"{item.text!r} was spoken again")


def test_a_split_made_again_reads_its_features_from_the_cache(tmp_path, monkeypatch):
    cfg = SpeechData(languages=["es"], max_number=19, directory=str(tmp_path), n_mels=24)
    first = speech_set.make_set(cfg, "test")
    stored = list(tmp_path.glob("features-*.safetensors"))
    assert len(stored) == 1
    monkeypatch.setattr(speech_set.speech, "speak", _unspeakable)
    again = speech_set.make_set(cfg, "test")
    assert [i.text for i in again.items] == [i.text for i in first.items]
    for a, b in zip(first.features, again.features):
        assert a.dtype == b.dtype and torch.equal(a, b)
    # other features, or other audio (its noise), are another file: made, not read
    with pytest.raises(AssertionError, match="was spoken again"):
        speech_set.make_set(SpeechData(**{**cfg.__dict__, "n_mels": 32}), "test")
    with pytest.raises(AssertionError, match="was spoken again"):
        speech_set.make_set(SpeechData(**{**cfg.__dict__, "noise": [0.2, 0.3]}), "test")


def test_a_damaged_or_unwritable_features_cache_is_made_again(tmp_path, monkeypatch):
    cfg = SpeechData(languages=["es"], max_number=19, directory=str(tmp_path), n_mels=24)
    first = speech_set.make_set(cfg, "test")
    (stored,) = tmp_path.glob("features-*.safetensors")
    stored.write_bytes(b"not safetensors")
    again = speech_set.make_set(cfg, "test")
    assert all(torch.equal(a, b) for a, b in zip(first.features, again.features))
    assert stored.stat().st_size > 100  # written anew

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    stored.unlink()
    monkeypatch.setattr(speech_set, "save_file", full_disk)
    third = speech_set.make_set(cfg, "test")
    assert all(torch.equal(a, b) for a, b in zip(first.features, third.features))
    assert not list(tmp_path.glob("features-*")) and not list(tmp_path.glob("*.partial"))
