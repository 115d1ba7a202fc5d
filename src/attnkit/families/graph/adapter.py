"""The graph family's part of the training loop (:mod:`attnkit.training.loop`).

Node classification is transductive: the whole graph goes through the model at every update, and
the loss is taken over the training nodes only. An epoch is one update followed by a dev
evaluation. Early stopping is the GAT paper's (its reference code): patience counts the epochs
in which neither the dev accuracy rose to its best nor the dev loss fell to its lowest, and the
``best`` checkpoint is the last epoch that was at both at once (:class:`Stopping`).

An epoch takes milliseconds, so checkpoints are not written after each: ``best`` is kept in
memory when it changes and written with ``last`` every :data:`SAVE_EVERY` epochs, when the run
stops, and when a signal interrupts it (a crash loses at most that many epochs).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from attnkit.data.graph.graph_data import Graph, with_self_loops
from attnkit.families.graph import bundle as gckpt
from attnkit.families.graph.config import GraphConfig
from attnkit.models.graph import GraphNet
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.state import TrainerState

LOG_EVERY = 50  # epochs between log lines and history entries (better dev scores are logged too)
SPARSE_BELOW = 0.1  # features with fewer nonzeros than this share are kept as a sparse tensor
SAVE_EVERY = 100  # epochs between checkpoint writes (and at the end, and on a signal)
PICTURE_EVERY = 100  # epochs between TensorBoard pictures


@dataclass
class DeviceGraph:
    """A graph's tensors on the device, edges as the model attends over them (with self-loops
    where ``model.self_loops``), features as a sparse tensor where they are mostly zeros."""

    x: Tensor  # (N, D)
    y: Tensor  # (N,)
    edge_index: Tensor  # (2, E)
    masks: dict[str, Tensor]  # split -> (N,) bool

    @classmethod
    def of(cls, graph: Graph, self_loops: bool, device: torch.device) -> DeviceGraph:
        edges = (
            with_self_loops(graph.edge_index, graph.num_nodes) if self_loops else graph.edge_index
        )
        masks = {name: mask.to(device) for name, mask in graph.masks.items()}
        x = graph.x
        if float((x != 0).float().mean()) < SPARSE_BELOW:  # bag-of-words features: 1% nonzero
            x = x.to_sparse().coalesce()
        return cls(x.to(device), graph.y.to(device), edges.to(device), masks)


def node_scores(model: GraphNet, data: DeviceGraph, split: str) -> dict:
    """``{"nodes", "accuracy", "loss"}`` of ``model`` (in eval mode) on ``split``'s nodes."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        log_probs, _ = model(data.x, data.edge_index)
    model.train(was_training)
    mask = data.masks[split]
    nodes = int(mask.sum())
    if nodes == 0:
        return {"nodes": 0, "accuracy": 0.0, "loss": 0.0}
    picked, gold = log_probs[mask], data.y[mask]
    return {
        "nodes": nodes,
        "accuracy": float((picked.argmax(-1) == gold).float().mean()),
        "loss": float(F.nll_loss(picked, gold)),
    }


class Stopping:
    """The GAT paper's early stopping: the best dev accuracy and lowest dev loss so far."""

    def __init__(self, history: list[dict]):
        scored = [h["dev"] for h in history if "accuracy" in h.get("dev", {})]  # a resumed run's
        self.accuracy = max((dev["accuracy"] for dev in scored), default=float("-inf"))
        self.loss = min((dev["loss"] for dev in scored), default=float("inf"))

    def judge(self, dev: dict) -> tuple[bool, bool]:
        """(the new best checkpoint: dev accuracy and dev loss both at their best so far,
        progress for patience: either of them is) of one dev evaluation."""
        accuracy, loss = dev["accuracy"], dev["loss"]
        both = accuracy >= self.accuracy and loss <= self.loss
        either = accuracy >= self.accuracy or loss <= self.loss
        self.accuracy, self.loss = max(self.accuracy, accuracy), min(self.loss, loss)
        return both, either


class GraphAdapter:
    """A graph model's full-graph updates, dev score and checkpoints, for the training loop."""

    items = "nodes"

    def __init__(
        self,
        cfg: GraphConfig,
        out: Path,
        model: GraphNet,
        optimizer: torch.optim.Optimizer,
        data: DeviceGraph,
        figures: Callable[[], list] | None,
        signals,
        history: list[dict],
        graph: Graph | None = None,
    ):
        self.cfg, self.out, self.model, self.optimizer = cfg, out, model, optimizer
        self.graph = graph  # written into every checkpoint: loading reads no data path
        self.data, self.figures, self.signals = data, figures, signals
        self.train_mask = data.masks["train"]
        self.stopping = Stopping(history)
        self.best: tuple[dict, TrainerState] | None = None  # not yet written

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[None]:
        return [None]  # one update over the whole graph

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> None:
        return None  # Adam's constant rate

    def step(self, batch, update: int) -> Update:
        """Forward the whole graph, the loss over the training nodes, backward."""
        self.model.train()
        log_probs, _ = self.model(self.data.x, self.data.edge_index)
        picked, gold = log_probs[self.train_mask], self.data.y[self.train_mask]
        loss = F.nll_loss(picked, gold)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        correct = (picked.argmax(-1) == gold).sum()
        return Update(loss.detach(), loss.detach(), correct, int(gold.numel()))

    def evaluate(self, state: TrainerState) -> DevScore:
        """Dev accuracy and loss of the weights as they are, judged by :class:`Stopping`; the
        pictures of where nodes attend every :data:`PICTURE_EVERY` epochs."""
        dev = node_scores(self.model, self.data, "dev")
        best, progress = self.stopping.judge(dev)
        pictures = None
        if self.figures is not None and state.epoch % PICTURE_EVERY == 1:
            pictures = self.figures
        metrics = {"accuracy": dev["accuracy"], "loss": dev["loss"]}
        return DevScore(metrics, "accuracy", True, best=best, progress=progress, pictures=pictures)

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """``best``: kept in memory; ``last`` (and the ``best`` kept): written every
        :data:`SAVE_EVERY` epochs, when the run stops and when a signal stops it."""
        if name == "best":
            weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.best = (weights, copy.deepcopy(state))
            return
        due = state.stopped or self.signals.requested or state.epoch % SAVE_EVERY == 0
        if not due:
            return
        if self.best is not None:
            weights, best_state = self.best
            gckpt.save_weights(self.out / "best", weights, self.cfg, best_state, self.graph)
            self.best = None
        gckpt.save(
            self.out / name, self.model, self.optimizer, self.cfg, state, resumable, self.graph
        )

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""
