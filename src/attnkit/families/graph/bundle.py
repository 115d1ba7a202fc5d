"""A graph run's checkpoints, and :func:`load_graph_model`: a checkpoint's model and graph.

``OUT/best`` holds the weights, the config and the counters; ``OUT/last`` also the optimizer
and the RNG (``--resume`` reads them back with :func:`restore`, each part checked first). The
counters are the run's :class:`~attnkit.training.state.TrainerState` under the names of
:data:`~attnkit.training.state.GRAPH`.

A checkpoint never chooses where attnkit reads, writes or downloads: the graph the model was
trained on travels inside it (:mod:`attnkit.families.graph.stored`: ``graph.safetensors`` and
``graph.json``, checked before use), so loading follows no path of the config's ``data``
section. A checkpoint written before the graph travelled with it is rebuilt from its ``data``
section with downloading forced off, through the bounded readers (regular files, caps); the
model's sizes are checked against its tensors before loading either way.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from attnkit import checkpoint as ckpt
from attnkit.checkpoint import checkpoint_dir
from attnkit.checkpoint.validate import build_checked
from attnkit.data.graph.graph_data import Graph
from attnkit.data.graph.sources import load_graph
from attnkit.device import resolve_device
from attnkit.families.graph.config import FAMILY, GraphConfig, parse_config
from attnkit.families.graph.stored import read_graph, write_graph
from attnkit.models.graph import GraphNet
from attnkit.training import resumable
from attnkit.training.guard import check_weights
from attnkit.training.state import TrainerState, to_trainer


def save(
    directory: Path,
    model: nn.Module,
    optimizer,
    cfg: GraphConfig,
    state: TrainerState,
    full: bool,
    graph: Graph | None = None,
) -> None:
    """Write a checkpoint (with ``graph``); ``full`` adds the optimizer and the RNG that
    ``--resume`` needs."""
    check_weights(model, f"epoch {state.epoch}: {directory} not written")
    trainer, tensors = resumable.trainer_files(state, optimizer if full else None)
    extra = None if graph is None else lambda tmp: write_graph(tmp, graph)
    ckpt.write_checkpoint(
        directory, FAMILY, model.state_dict(), cfg.to_dict(), trainer, tensors, extra
    )


def save_weights(
    directory: Path, weights: dict, cfg: GraphConfig, state: TrainerState, graph: Graph | None
) -> None:
    """Write a ``best`` checkpoint of ``weights`` (a state dict kept when it was the best)."""
    trainer = to_trainer(state)
    extra = None if graph is None else lambda tmp: write_graph(tmp, graph)
    ckpt.write_checkpoint(directory, FAMILY, weights, cfg.to_dict(), trainer, extra=extra)


def restore(directory: Path, model: nn.Module, optimizer) -> TrainerState:
    """Weights, optimizer, counters and RNG of ``directory``, each checked before it is loaded."""
    return resumable.restore(directory, FAMILY, model, optimizer)


def build_model(cfg: GraphConfig, graph: Graph) -> GraphNet:
    """The model of ``cfg`` for ``graph``'s feature width and classes."""
    return GraphNet(cfg.model, graph.num_features, len(graph.classes))


def load_graph_model(
    model_dir: str | Path, device: str | torch.device = "cpu"
) -> tuple[GraphConfig, Graph, GraphNet]:
    """(config, graph, model in eval mode) of a graph checkpoint (or a run holding ``best/``)."""
    directory = checkpoint_dir(model_dir)
    ckpt.read_meta(directory, FAMILY)
    cfg = parse_config(ckpt.read_config(directory), str(directory / "config.yaml"))
    graph = read_graph(directory)
    if graph is None:  # an older checkpoint: its data section, never downloading
        cfg.data.download = False
        graph = load_graph(cfg.data)
    # the file's shapes checked before any memory is allocated
    model = build_checked(directory, lambda: build_model(cfg, graph))
    device = resolve_device(device) if isinstance(device, str) else device
    return cfg, graph, model.to(device).eval()
