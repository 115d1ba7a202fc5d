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
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm import tqdm

from attnkit.data.graph.graph_data import Graph, with_self_loops
from attnkit.families.graph import bundle as gckpt
from attnkit.families.graph.config import GraphConfig
from attnkit.models.graph import GraphNet
from attnkit.training import tensorboard as tb
from attnkit.training.loop import Update
from attnkit.training.state import TrainerState

LOG_EVERY = 50  # epochs between log lines (better dev scores are logged too)
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
        scored = [h for h in history if "dev_accuracy" in h]  # a resumed run's record
        self.accuracy = max((h["dev_accuracy"] for h in scored), default=float("-inf"))
        self.loss = min((h["dev_loss"] for h in scored), default=float("inf"))

    def count(self, state: TrainerState, dev: dict) -> bool:
        """Count one dev evaluation into ``state``; True when it is the new best checkpoint
        (dev accuracy and dev loss both at their best so far)."""
        accuracy, loss = dev["accuracy"], dev["loss"]
        both = accuracy >= self.accuracy and loss <= self.loss
        either = accuracy >= self.accuracy or loss <= self.loss
        state.bad_evals = 0 if either else state.bad_evals + 1
        if both:
            state.best, state.best_step, state.best_epoch = (
                100.0 * accuracy,
                state.step,
                state.epoch,
            )
        self.accuracy, self.loss = max(self.accuracy, accuracy), min(self.loss, loss)
        return both


class GraphAdapter:
    """A graph model's full-graph updates, dev score and checkpoints, for the training loop."""

    unit = "step"
    counts_epoch_first = True

    def __init__(
        self,
        cfg: GraphConfig,
        out: Path,
        model: GraphNet,
        optimizer: torch.optim.Optimizer,
        data: DeviceGraph,
        figures: Callable[[], list],
        board: tb.Board,
        signals,
        history: list[dict],
    ):
        self.cfg, self.out, self.model, self.optimizer = cfg, out, model, optimizer
        self.data, self.figures, self.board, self.signals = data, figures, board, signals
        self.train_mask = data.masks["train"]
        self.stats: dict = {}
        self.stopping = Stopping(history)
        self.best: tuple[dict, TrainerState] | None = None  # not yet written

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[None]:
        self.began = time.perf_counter()
        return [None]  # one update over the whole graph

    def begin_epoch(self, state: TrainerState, n_batches: int) -> None:
        self.model.train()

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> None:
        return None  # Adam's constant rate

    def step(self, batch, update: int) -> Update:
        """Forward the whole graph, the loss over the training nodes, backward."""
        log_probs, _ = self.model(self.data.x, self.data.edge_index)
        picked, gold = log_probs[self.train_mask], self.data.y[self.train_mask]
        loss = F.nll_loss(picked, gold)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        correct = (picked.argmax(-1) == gold).sum()
        return Update(loss.detach(), loss.detach(), correct, int(gold.numel()))

    def counted(self, state: TrainerState, update: Update, applied: bool, index: int) -> None:
        self.stats = {
            "train_loss": float(update.reported),
            "train_accuracy": float(update.correct) / max(update.count, 1),
            "skipped": not applied,
        }

    def end_epoch(self, state: TrainerState) -> None:
        if self.board.window.pending:
            self.board.train(state.step, self.cfg.train.lr, state.skipped_updates)

    def score(self, state: TrainerState, elapsed: Callable[[], float]) -> bool:
        dev = node_scores(self.model, self.data, "dev")
        self.board.scalars(state.step, {"accuracy": dev["accuracy"], "loss": dev["loss"]}, "dev")
        if state.epoch % PICTURE_EVERY == 1:
            self.board.pictures(state.step, self.figures())
        state.elapsed_s = elapsed()
        improved = self.stopping.count(state, dev)
        if not (improved or state.epoch % LOG_EVERY == 0):
            return improved  # the history keeps the epochs that the log shows
        state.history.append(
            {
                "epoch": state.epoch,
                **self.stats,
                "dev_accuracy": dev["accuracy"],
                "dev_loss": dev["loss"],
                "seconds": round(time.perf_counter() - self.began, 4),
            }
        )
        if self.cfg.train.verbose:
            tqdm.write(
                f"epoch {state.epoch}  loss {self.stats['train_loss']:.4f}  train acc "
                f"{100 * self.stats['train_accuracy']:.2f}%  dev acc "
                f"{100 * dev['accuracy']:.2f}%  dev loss {dev['loss']:.4f}"
                f"{' *' if improved else ''}",
                file=sys.stderr,
            )
        return improved

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
            gckpt.save_weights(self.out / "best", weights, self.cfg, best_state)
            self.best = None
        gckpt.save(self.out / name, self.model, self.optimizer, self.cfg, state, resumable)

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""

    def where(self, state: TrainerState) -> str:
        return f"epoch {state.epoch + 1}"
