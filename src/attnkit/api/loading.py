"""``attnkit.load``: any checkpoint directory as the model object of its family, or a model a
family names by its scheme (``"<scheme>:<rest>"``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit import zoo
from attnkit.errors import CheckpointError
from attnkit.families import FAMILIES, checkpoint_family, scheme_family


def load(path: str | Path | Sequence[str | Path], device: str = "auto", **options):
    """The checkpoint at ``path`` as the model object of its family (its ``meta.json`` says
    which): :class:`Seq2SeqModel` (RNN or Transformer: ``translate``, ``explain``,
    ``evaluate``), :class:`VisionModel` (``classify``, ``evaluate``), :class:`PointerModel`
    (``solve``, ``evaluate``), :class:`GraphModel` (``explain_node``, ``evaluate``),
    :class:`TextModel` (``classify``, ``explain``, ``evaluate``) or :class:`MemoryModel`
    (``answer``, ``evaluate``). Several directories of a family that ensembles (seq2seq) load
    as one ensemble. A run directory holding ``best/`` loads its best checkpoint.
    ``zoo:NAME`` loads a model of the zoo (:func:`attnkit.zoo.names`). A name
    ``"<scheme>:<rest>"`` of a family with a scheme loads through that family, as given:
    ``"hf:DIR"`` or ``"hf:MODEL_ID"`` a pretrained Hugging Face model
    (:class:`PretrainedModel`: ``classify``, ``encode``, ``generate``, ``translate``).
    ``options`` go to the family's loader (``download=``, ``dtype=`` of a pretrained model)."""
    from attnkit.families import arguments as check

    if isinstance(path, str | Path):
        paths = [path]
    elif isinstance(path, Sequence) and not isinstance(path, bytes):
        paths = [check.path(p, f"path[{i}]") for i, p in enumerate(path)]
    else:
        check.path(path, "path")  # None, a number: one line naming the argument
    if not paths:
        raise CheckpointError("load: give a checkpoint directory")
    named = scheme_family(paths[0])
    if named is not None:
        if len(paths) > 1:
            raise CheckpointError(f"{paths[0]}: give one model; several do not load as one")
        return named.model_class().load(str(paths[0]), device, **options)
    paths = [zoo.resolve(p) for p in paths]
    family = checkpoint_family(Path(paths[0]))
    if len(paths) > 1 and not family.ensembles:
        ensembling = [name for name, f in FAMILIES.items() if f.ensembles]
        raise CheckpointError(f"{paths[0]}: ensembles are for {', '.join(ensembling)} checkpoints")
    return family.model_class().load(paths if len(paths) > 1 else paths[0], device, **options)
