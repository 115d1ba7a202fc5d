"""The checkpoints a server answers with: loaded once, read-only, each under a short name.

Each ``--model DIR`` is loaded by :func:`attnkit.load` (the Python API): a seq2seq model
(:class:`attnkit.api.Seq2SeqModel`) or a vision one (:class:`attnkit.api.VisionModel`), told
apart by the checkpoint's ``meta.json``. Nothing is written to the directories. A request names
a model by its name only, never by a path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attnkit.api import load
from attnkit.errors import ConfigError
from attnkit.serve.limits import Limits

#: path parts that name a checkpoint inside a run, not the run: skipped when naming a model
CHECKPOINT_PARTS = ("model", "best", "last", "averaged")
#: what each vision model type attends with
VISION_ATTENTION = {"ram": "glimpse", "show_attend_tell": "spatial", "attention_pooling": "spatial"}


@dataclass
class ServedModel:
    """One loaded checkpoint: the API's model object, seq2seq or vision."""

    name: str
    directory: Path
    family: str  # "seq2seq" or "vision"
    loaded: object

    @property
    def translator(self):
        return self.loaded.translator if self.family == "seq2seq" else None

    @property
    def can_explain(self) -> bool:
        """Whether saliency can be computed (one seq2seq model with an embedding encoder)."""
        if self.translator is None:
            return False
        from attnkit.explain.no_attention import can_explain

        return can_explain(self.translator) and hasattr(self.translator.model, "encoder")

    def info(self, limits: Limits) -> dict:
        """What ``GET /v1/models`` says of this model."""
        base = {"name": self.name, "family": self.family, "limits": limits.to_dict()}
        if self.family == "vision":
            cfg = self.loaded.config
            return {
                **base,
                "task": cfg.data.task,
                "attention": VISION_ATTENTION.get(cfg.model_type, cfg.model_type),
                "model_type": cfg.model_type,
                "has_attention": True,
                "layers": None,
                "heads": None,
                "has_gold": False,
                "explain": False,
            }
        from attnkit.data.tasks.gold import gold_aligner

        translator = self.translator
        cfg = translator.config
        layers, heads = layer_shape(cfg.model)
        return {
            **base,
            "task": cfg.data.task,
            "attention": "transformer" if layers is not None else cfg.model.attention,
            "has_attention": bool(translator.model.has_attention),
            "layers": layers,
            "heads": heads,
            "has_gold": gold_aligner(cfg.data) is not None,
            "explain": self.can_explain,
        }


def layer_shape(model_cfg) -> tuple[int | None, int | None]:
    """(decoder layers, attention heads) of a Transformer model config, else (None, None)."""
    return model_cfg.layers_and_heads


def model_name(directory: Path) -> str:
    """A short name from a checkpoint's path: its last part that is not one of
    :data:`CHECKPOINT_PARTS` (``runs/demo/model/best`` -> ``demo``)."""
    for part in reversed(Path(directory).resolve().parts):
        if part not in CHECKPOINT_PARTS and part != "/":
            return part
    return "model"


def model_names(directories: Sequence[Path], given: Sequence[str]) -> list[str]:
    """One unique name per directory: ``given`` in order, then names from the paths (made
    unique with ``-2``, ``-3``, ...)."""
    if len(given) > len(directories):
        raise ConfigError(f"{len(given)} --name for {len(directories)} --model: one name each")
    names: list[str] = []
    for i, directory in enumerate(directories):
        if i < len(given):
            if given[i] in names or not given[i].strip():
                raise ConfigError(f"--name {given[i]!r}: names must be unique and not blank")
            names.append(given[i])
            continue
        base = model_name(directory)
        name, n = base, 2
        while name in names or name in given:
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


#: the checkpoint families the explorer has views for
SERVED_FAMILIES = ("seq2seq", "vision")


def load_models(
    directories: Sequence[Path], given: Sequence[str] = (), device: str = "auto"
) -> dict[str, ServedModel]:
    """name -> loaded model, in the order given (the first answers requests naming none)."""
    if not directories:
        raise ConfigError("give at least one --model DIR")
    served = {}
    for name, directory in zip(model_names(directories, given), directories):
        model = load(Path(directory), device)
        if model.family not in SERVED_FAMILIES:
            raise ConfigError(
                f"--model {directory}: a {model.family} checkpoint; the explorer serves "
                f"{' and '.join(SERVED_FAMILIES)} models (a memory network: attnkit plot --story)"
            )
        served[name] = ServedModel(name, Path(directory), model.family, model)
    return served
