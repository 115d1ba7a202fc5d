"""The checkpoints a server answers with: loaded once, read-only, each under a short name.

Each ``--model DIR`` is loaded by :func:`attnkit.load` (the Python API): a seq2seq model
(:class:`attnkit.api.Seq2SeqModel`), a vision one (:class:`attnkit.api.VisionModel`), a text
classifier (:class:`attnkit.api.TextModel`), a graph, memory or pointer network, told apart by
the checkpoint's ``meta.json``.
Nothing is written to the directories. A request names a model by its name only, never by a
path.
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
#: the endpoint that answers each family's models
ENDPOINTS = {
    "seq2seq": "/v1/translate",
    "vision": "/v1/classify",
    "graph": "/v1/graph/node",
    "text": "/v1/classify_text",
    "memnet": "/v1/answer",
    "pointer": "/v1/solve",
}
#: what each vision model type attends with
VISION_ATTENTION = {"ram": "glimpse", "show_attend_tell": "spatial", "attention_pooling": "spatial"}


#: the families the server has views for
SERVED_FAMILIES = ("seq2seq", "vision", "graph", "text", "memnet", "pointer")


@dataclass
class ServedModel:
    """One loaded checkpoint: the API's model object of its family."""

    name: str
    directory: Path
    family: str  # one of SERVED_FAMILIES
    loaded: object

    def wrong_endpoint(self) -> str:
        """The message for a request this model's family is not answered at."""
        return f"model: {self.name!r} is a {self.family} model: use {ENDPOINTS[self.family]}"

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
        if self.family in FAMILY_INFO:
            return {**base, **FAMILY_INFO[self.family](self.loaded)}
        if self.family == "graph":
            cfg, net = self.loaded.config, self.loaded.net
            return {
                **base,
                "task": self.loaded.graph.name,
                "attention": cfg.model.attention if net.has_attention else "none (gcn)",
                "model_type": cfg.model.type,
                "has_attention": bool(net.has_attention),
                "layers": sum(1 for _ in net.layers) if net.has_attention else None,
                "heads": cfg.model.heads if net.has_attention else None,
                "nodes": self.loaded.graph.num_nodes,
                "has_gold": False,
                "explain": True,
            }
        if self.family == "text":
            cfg = self.loaded.config
            heads = self.loaded.net.heads
            return {
                **base,
                "task": cfg.data.task,
                "attention": cfg.model.attention,
                "encoder": cfg.model.encoder,
                "labels": list(self.loaded.labels),
                "has_attention": heads > 0,
                "layers": None,
                "heads": heads if heads > 1 else None,
                "has_gold": False,
                "explain": True,
            }
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


def _memnet_info(loaded) -> dict:
    cfg = loaded.config
    return {
        "task": str(cfg.data.task),
        "attention": f"{cfg.model.hops} hops ({cfg.model.memory})",
        "has_attention": True,
        "layers": None,
        "heads": None,
        "hops": cfg.model.hops,
        "memory_size": loaded.vocab.memory_size,
        "has_gold": True,  # a bAbI question's supporting facts
        "explain": True,
    }


def _pointer_info(loaded) -> dict:
    data = loaded.config.data
    return {
        "task": data.task,
        "attention": "pointer (additive)",
        "has_attention": True,
        "layers": None,
        "heads": None,
        "points": data.points,
        "dims": data.dims,
        "has_gold": False,
        "explain": False,
    }


#: what ``GET /v1/models`` adds for a family with a function of its own (model object -> dict)
FAMILY_INFO = {"memnet": _memnet_info, "pointer": _pointer_info}


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
                f"--model {directory}: a {model.family} checkpoint; attnkit serve serves "
                f"{', '.join(SERVED_FAMILIES)} models"
            )
        served[name] = ServedModel(name, Path(directory), model.family, model)
    return served
