"""A vision checkpoint's bundle: the model with its experiment config (:class:`VisionBundle`),
written and read as one directory of the common format (:mod:`attnkit.checkpoint`).

:func:`load_vision` reads a checkpoint (or a run directory holding ``best/``), checks its files,
builds the model its config names (:data:`attnkit.models.vision.VISION_MODELS`) and loads its
weights. The trainer's counters, optimizer and RNG that ``last`` also holds are the training
package's (:mod:`attnkit.families.vision.bundle`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from attnkit.checkpoint import checkpoint_dir, read_config, read_meta, write_checkpoint
from attnkit.checkpoint.validate import build_checked
from attnkit.models.vision import VISION_MODELS
from attnkit.vision_experiment import FAMILY, VisionConfig, parse_config


@dataclass
class VisionBundle:
    """What a vision checkpoint holds, in memory: the model and the experiment config it was
    built from."""

    model: nn.Module
    config: VisionConfig

    def save(
        self,
        directory: str | Path,
        trainer_state: dict | None = None,
        trainer_tensors: dict[str, torch.Tensor] | None = None,
    ) -> Path:
        """Write the bundle as a checkpoint directory, atomically (with the trainer's state for
        ``best`` and ``last``)."""
        return write_checkpoint(
            directory,
            FAMILY,
            self.model.state_dict(),
            self.config.to_dict(),
            trainer_state,
            trainer_tensors,
        )


def load_vision(model_dir: str | Path, device: torch.device) -> VisionBundle:
    """A vision checkpoint (or a run holding ``best/``) as a bundle: its model built from the
    saved config, given the saved weights, on ``device`` in eval mode.

    A checkpoint written before the train keys were renamed loads too: its saved config is
    translated (:mod:`attnkit.renamed_keys`)."""
    directory = checkpoint_dir(model_dir)
    read_meta(directory, FAMILY)
    cfg = parse_config(read_config(directory), str(directory / "config.yaml"), user=False)
    # the file's shapes checked before any memory is allocated
    model = build_checked(directory, lambda: VISION_MODELS[cfg.model_type].build(cfg.model))
    return VisionBundle(model.to(device).eval(), cfg)
