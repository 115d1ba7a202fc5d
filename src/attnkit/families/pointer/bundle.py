"""A pointer network built from its config, and a checkpoint read back (config and model, shapes
checked before the weights are allocated)."""

from __future__ import annotations

from pathlib import Path

from attnkit import checkpoint as ckpt
from attnkit.checkpoint.validate import build_checked
from attnkit.device import resolve_device
from attnkit.families.pointer.config import FAMILY, PointerExperiment, parse_config
from attnkit.models.pointer import PointerNet


def build_model(cfg: PointerExperiment) -> PointerNet:
    """The pointer network ``cfg`` describes (untrained)."""
    return PointerNet(cfg.model, cfg.data.dims, cfg.data.permutation)


def load_pointer(
    directory: str | Path, device: str = "cpu"
) -> tuple[PointerExperiment, PointerNet]:
    """(config, model in eval mode) of a pointer checkpoint (or a run directory holding
    ``best/``)."""
    directory = ckpt.checkpoint_dir(directory)
    ckpt.read_meta(directory, FAMILY)
    cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"))
    model = build_checked(directory, lambda: build_model(cfg))  # shapes checked before allocating
    return cfg, model.to(resolve_device(device)).eval()
