"""Training for the graph attention family (``family: graph``).

:func:`train_graph` (``attnkit train`` and :func:`attnkit.train` call it) reads the graph
(:mod:`attnkit.data.graph.sources`), builds the model (:mod:`attnkit.models.graph`) and trains
it in the training driver (:mod:`attnkit.training.run`) with the graph adapter
(:mod:`attnkit.families.graph.adapter`): one full-graph update per epoch, a dev evaluation after
each, early stopping (``train.patience``, the GAT paper's rule), ``OUT/best`` and ``OUT/last``
(``--resume``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from attnkit.config import apply_overrides
from attnkit.data.graph.sources import load_graph
from attnkit.families.base import TrainRequest
from attnkit.families.graph import bundle as gckpt
from attnkit.families.graph.adapter import LOG_EVERY, DeviceGraph, GraphAdapter
from attnkit.families.graph.config import GraphConfig, parse_config
from attnkit.training import resumable, resume_config
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState

__all__ = ["train_graph"]


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
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume:
        cfg = resumable.config_to_resume(
            cfg, out / "last", overrides or (), source, parse_config, resume_config.GRAPH
        )
    # an epoch takes milliseconds: its line is shown every LOG_EVERY epochs, and when it is best
    plan = Plan(out, cfg.train, "nodes", resume, overwrite, source, show_every=LOG_EVERY)
    return run(plan, lambda context: _start(cfg, figures, context))


def _start(cfg: GraphConfig, figures, context: Context) -> Started:
    """The graph on the device, the model and optimizer (fresh, or ``last``'s), the adapter."""
    t_cfg, out, device = cfg.train, context.plan.out, context.device
    graph = load_graph(cfg.data)
    model = gckpt.build_model(cfg, graph).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=t_cfg.lr, weight_decay=t_cfg.weight_decay)
    state = TrainerState(planned_epochs=t_cfg.epochs)
    if context.plan.resume:
        state = gckpt.restore(out / "last", model, optimizer)
        state.stopped, state.planned_epochs = "", t_cfg.epochs
    data = DeviceGraph.of(graph, cfg.model.self_loops, device)
    parameters = sum(p.numel() for p in model.parameters())
    context.log(
        f"training {cfg.model.type}/{cfg.model.attention} ({device}), {parameters:,} parameters, "
        f"{graph.describe()}"
    )
    pictures = (lambda: figures(model, graph, data)) if figures else None
    adapter = GraphAdapter(
        cfg, out, model, optimizer, data, pictures, context.signals, state.history, graph
    )
    return Started(adapter, state)


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a graph experiment: its best checkpoint."""
    from attnkit.explain.graph import training_figures

    return train_graph(data, **request.run_options(), figures=training_figures)
