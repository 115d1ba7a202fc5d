"""``attnkit.load``: any checkpoint directory as the model object of its family."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit import zoo
from attnkit.errors import CheckpointError
from attnkit.families import FAMILIES, checkpoint_family


def load(path: str | Path | Sequence[str | Path], device: str = "auto"):
    """The checkpoint at ``path`` as the model object of its family (its ``meta.json`` says
    which): :class:`Seq2SeqModel` (RNN or Transformer: ``translate``, ``explain``,
    ``evaluate``), :class:`VisionModel` (``classify``, ``evaluate``), :class:`PointerModel`
    (``solve``, ``evaluate``), :class:`GraphModel` (``explain_node``, ``evaluate``),
    :class:`TextModel` (``classify``, ``explain``, ``evaluate``) or :class:`MemoryModel`
    (``answer``, ``evaluate``). Several directories of a family that ensembles (seq2seq) load
    as one ensemble. A run directory holding ``best/`` loads its best checkpoint.
    ``zoo:NAME`` loads a model of the zoo (:func:`attnkit.zoo.names`)."""
    paths = [path] if isinstance(path, str | Path) else list(path)
    paths = [zoo.resolve(p) for p in paths]
    if not paths:
        raise CheckpointError("load: give a checkpoint directory")
    family = checkpoint_family(Path(paths[0]))
    if len(paths) > 1 and not family.ensembles:
        ensembling = [name for name, f in FAMILIES.items() if f.ensembles]
        raise CheckpointError(f"{paths[0]}: ensembles are for {', '.join(ensembling)} checkpoints")
    return family.model_class().load(paths if len(paths) > 1 else paths[0], device)
