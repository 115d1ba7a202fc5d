"""A speech model built from its config (``model.kind``: Listen, Attend and Spell, CTC, or the
Transformer over frames),
and a checkpoint read back (config and model, shapes checked before the weights are
allocated)."""

from __future__ import annotations

from pathlib import Path

from attnkit import checkpoint as ckpt
from attnkit.checkpoint.validate import build_checked
from attnkit.data.location import checkpoint_data
from attnkit.data.tasks.speech_set import BOS, EOS, OUTPUTS
from attnkit.device import resolve_device
from attnkit.errors import CheckpointError, ConfigError
from attnkit.families.speech.config import FAMILY, SpeechExperiment, parse_config
from attnkit.models.ctc import CTC
from attnkit.models.las import LAS
from attnkit.models.speech_transformer import SpeechTransformer


def build_model(cfg: SpeechExperiment) -> LAS | CTC | SpeechTransformer:
    """The model ``cfg`` describes (untrained). CTC's blank is ``<s>``'s id, which no target
    holds."""
    if cfg.model.kind == "ctc":
        return CTC(cfg.model, cfg.data.n_mels, len(OUTPUTS), blank=BOS)
    if cfg.model.kind == "transformer":
        return SpeechTransformer(cfg.model, cfg.data.n_mels, len(OUTPUTS), BOS, EOS)
    return LAS(cfg.model, cfg.data.n_mels, len(OUTPUTS), BOS, EOS)


def load_speech(
    directory: str | Path, device: str = "cpu"
) -> tuple[SpeechExperiment, LAS | CTC | SpeechTransformer]:
    """(config, model in eval mode) of a speech checkpoint (or a run directory holding
    ``best/``). The config's ``data.directory`` is not followed: the audio is spoken into (and
    read from) ``$ATTNKIT_DATA_DIR/speech``, else the user cache."""
    directory = ckpt.checkpoint_dir(directory)
    ckpt.read_meta(directory, FAMILY)
    try:
        cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"))
    except ConfigError as exc:  # the checkpoint's own config: the checkpoint is at fault
        raise CheckpointError(str(exc)) from None
    cfg.data = checkpoint_data(cfg.data)  # its audio cache is this machine's, not the config's
    model = build_checked(directory, lambda: build_model(cfg))
    return cfg, model.to(resolve_device(device)).eval()
