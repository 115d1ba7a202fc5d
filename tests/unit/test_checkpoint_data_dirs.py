"""A loaded speech or vision checkpoint reads (and caches) its data where this machine keeps them,
never in the ``data.directory`` its config names (the training machine's, or any path a crafted
checkpoint names)."""

from __future__ import annotations

import yaml

import attnkit
from attnkit.data.tasks.paths import forget_directory
from attnkit.data.tasks.speech_set import SpeechData
from attnkit.families.speech.faults import tiny_checkpoint


def test_forget_directory_clears_a_named_directory_only():
    data = SpeechData(directory="/somewhere/else")
    forget_directory(data)
    assert data.directory is None and data.languages == SpeechData().languages
    forget_directory(object())  # a section without a directory: nothing to clear


def test_a_speech_checkpoint_naming_a_cache_directory_is_not_followed(tmp_path):
    ckpt = tmp_path / "ckpt"
    tiny_checkpoint(ckpt)
    config = yaml.safe_load((ckpt / "config.yaml").read_text())
    config["data"]["directory"] = str(tmp_path / "chosen-by-the-checkpoint")
    (ckpt / "config.yaml").write_text(yaml.safe_dump(config))
    model = attnkit.load(ckpt, device="cpu")
    assert model.config.data.directory is None
    assert not (tmp_path / "chosen-by-the-checkpoint").exists()


def test_a_vision_checkpoint_naming_a_data_directory_is_not_followed(tmp_path):
    from attnkit.families.vision.faults import tiny_checkpoint as vision_checkpoint

    ckpt = tmp_path / "ckpt"
    vision_checkpoint(ckpt)
    config = yaml.safe_load((ckpt / "config.yaml").read_text())
    config["data"]["directory"] = "/"
    (ckpt / "config.yaml").write_text(yaml.safe_dump(config))
    assert attnkit.load(ckpt, device="cpu").config.data.directory is None
