"""``attnkit.load``: any checkpoint directory as a model object of its family."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from attnkit import zoo
from attnkit.api.graph import GraphModel
from attnkit.api.memnet import MemoryModel
from attnkit.api.pointer import PointerModel
from attnkit.api.seq2seq import Seq2SeqModel
from attnkit.api.text import TextModel
from attnkit.api.vision import VisionModel
from attnkit.checkpoint import read_meta
from attnkit.errors import CheckpointError

#: a checkpoint's family (``meta.json``) -> its loader: (directory, device) -> model object
LOADERS: dict[str, Callable] = {
    "seq2seq": Seq2SeqModel.load,
    "vision": VisionModel.load,
    "pointer": PointerModel.load,
    "graph": GraphModel.load,
    "text": TextModel.load,
    "memnet": MemoryModel.load,
}


def load(path: str | Path | Sequence[str | Path], device: str = "auto"):
    """The checkpoint at ``path`` as a model: :class:`Seq2SeqModel` (RNN or Transformer:
    ``translate``, ``explain``, ``evaluate``), :class:`VisionModel` (``classify``,
    ``evaluate``), :class:`PointerModel` (``solve``, ``evaluate``), :class:`GraphModel`
    (``explain_node``, ``evaluate``), :class:`TextModel` (``classify``, ``explain``,
    ``evaluate``) or :class:`MemoryModel` (``answer``, ``evaluate``). Several seq2seq directories
    load as one ensemble. A run directory holding ``best/`` loads its best checkpoint.
    ``zoo:NAME`` loads a model of the zoo (:func:`attnkit.zoo.names`)."""
    paths = [path] if isinstance(path, str | Path) else list(path)
    paths = [zoo.resolve(p) for p in paths]
    if not paths:
        raise CheckpointError("load: give a checkpoint directory")
    family = checkpoint_family(Path(paths[0]))
    if family != "seq2seq" and len(paths) > 1:
        raise CheckpointError(f"{paths[0]}: ensembles are for seq2seq checkpoints")
    return LOADERS[family](paths if len(paths) > 1 else paths[0], device)


def checkpoint_family(directory: Path) -> str:
    """The family named by a checkpoint's ``meta.json`` (a run directory: its best/)."""
    if not (directory / "meta.json").exists() and (directory / "best" / "meta.json").exists():
        directory = directory / "best"
    family = read_meta(directory)["family"]
    if family not in LOADERS:
        raise CheckpointError(
            f"{directory}: a {family!r} checkpoint; this attnkit loads {', '.join(LOADERS)}"
        )
    return family
