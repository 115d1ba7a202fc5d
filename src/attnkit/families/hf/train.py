"""Pretrained models are loaded, not trained, here: the registry's ``train`` refuses in one line."""

from __future__ import annotations

from attnkit.errors import ConfigError


def train(data, request) -> None:
    """A ConfigError: ``attnkit.train`` does not fine-tune Hugging Face models."""
    raise ConfigError(
        f"{request.config}: pretrained models are loaded, not trained here: "
        "attnkit.load('hf:DIR') opens one (fine-tune it with transformers' own Trainer)"
    )
