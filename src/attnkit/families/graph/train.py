"""Training for the graph attention family (``family: graph``).

:func:`train_graph` (``attnkit train`` and :func:`attnkit.train` call it) reads the graph
(:mod:`attnkit.data.graph.sources`), builds the model (:mod:`attnkit.models.graph`) and trains
it in the training loop (:mod:`attnkit.training.loop`) with the graph adapter
(:mod:`attnkit.families.graph.adapter`): one full-graph update per epoch, a dev evaluation after
each, early stopping (``train.patience``), ``OUT/best`` (best dev score) and ``OUT/last``
(``--resume``), TensorBoard event files in ``OUT/tensorboard``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from attnkit.config import apply_overrides
from attnkit.data.graph.sources import load_graph
from attnkit.device import resolve_device
from attnkit.errors import ConfigError
from attnkit.families.base import TrainRequest
from attnkit.families.graph import bundle as gckpt
from attnkit.families.graph.adapter import DeviceGraph, GraphAdapter
from attnkit.families.graph.config import GraphConfig, parse_config
from attnkit.training import distributed, resumable, resume_config, rundir
from attnkit.training import tensorboard as tb
from attnkit.training.loop import LoopSettings, TrainingLoop
from attnkit.training.state import TrainerState

__all__ = ["train_graph"]


def _say(cfg: GraphConfig) -> Callable[[str], None]:
    return lambda line: print(line, file=sys.stderr) if cfg.train.verbose else None


def train_graph(
    config: dict,
    output_dir: Path | None = None,
    resume: bool = False,
    source: str = "config",
    overwrite: bool = False,
    overrides: Sequence[str] | None = None,
    figures: Callable | None = None,
) -> Path:
    """Train the model of ``config`` (the parsed YAML, with ``overrides`` applied: ``--set``);
    returns the best checkpoint directory, ``OUT/best``.

    ``resume`` goes on from ``OUT/last`` with its saved config, taking from ``config`` only the
    keys ``overrides`` name; a fresh run refuses an OUT holding checkpoints unless
    ``overwrite``. ``figures(model, graph, data)``: the (tag, figure) pairs TensorBoard gets now and
    then (passed in: ``training/`` imports nothing of ``explain/``, which makes them).
    """
    cfg = parse_config(apply_overrides(config, overrides or ()), source)
    if distributed.world_size() > 1:
        raise ConfigError(f"{source}: a graph model trains in one process (no torchrun)")
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume:
        cfg = resumable.config_to_resume(
            cfg, out / "last", overrides or (), source, parse_config, resume_config.GRAPH
        )
    say = _say(cfg)
    with (
        rundir.claim_run_dir(out, resume, overwrite, say),
        rundir.StopSignals() as signals,
        tb.Board(out / rundir.LOG_NAME, cfg.train.tensorboard, say, "nodes") as board,
    ):
        return _train(cfg, out, resume, signals, board, figures)


def _train(cfg: GraphConfig, out: Path, resume: bool, signals, board, figures) -> Path:
    t_cfg = cfg.train
    if t_cfg.threads:
        torch.set_num_threads(t_cfg.threads)
    device = resolve_device(t_cfg.device)
    torch.manual_seed(t_cfg.seed)
    graph = load_graph(cfg.data)
    model = gckpt.build_model(cfg, graph).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=t_cfg.lr, weight_decay=t_cfg.weight_decay)
    state = TrainerState(planned_epochs=t_cfg.epochs)
    if resume:
        state = gckpt.restore(out / "last", model, optimizer)
        state.stopped, state.planned_epochs = "", t_cfg.epochs
    board.start(state.step)
    data = DeviceGraph.of(graph, cfg.model.self_loops, device)
    say = _say(cfg)
    parameters = sum(p.numel() for p in model.parameters())
    say(
        f"training {cfg.model.type}/{cfg.model.attention} ({device}), {parameters:,} parameters, "
        f"{graph.describe()}"
    )
    pictures = (lambda: figures(model, graph, data)) if figures else list
    adapter = GraphAdapter(
        cfg, out, model, optimizer, data, pictures, board, signals, state.history
    )
    TrainingLoop(adapter, LoopSettings.of(t_cfg), out, signals, board, say).run(state)
    best = "none" if state.best is None else f"{state.best:.2f}"
    say(
        f"stopped ({state.stopped or 'done'}) after {state.epoch} epochs, {state.elapsed_s:.1f}s; "
        f"best dev score {best} (accuracy %) at epoch {state.best_epoch}; checkpoints in {out}"
    )
    return out / "best"


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a graph experiment: its best checkpoint."""
    from attnkit.explain.graph import training_figures

    return train_graph(
        data,
        output_dir=request.output_dir,
        resume=request.resume,
        source=str(request.config),
        overwrite=request.overwrite,
        overrides=request.overrides,
        figures=training_figures,
    )
