"""The memory-network family's part of the training loop (:mod:`attnkit.training.loop`).

An epoch is a shuffled pass over the training questions in batches of ``train.batch_size``, each
batch with the paper's *random noise* (empty memories inserted, ``model.noise`` per fact) and
the summed cross-entropy of its answers (the reference code's loss, which its learning rate of
0.01 is tuned for). The first ``train.linear_start`` epochs train without the softmax of the
hops (*linear start*); the model's ``linear`` buffer says which, and is saved with it. Each
epoch is counted, then scored on the validation questions (the callable the adapter is given).
``train.restart_after_linear_start`` and ``train.clip_each`` follow the paper's reference code
where it differs from one step decay and one global clip: a constant rate through linear start
with the decay counted from its end, and each weight matrix's gradient clipped apart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor
from torch.nn import functional as F

from attnkit import checkpoint as ckpt
from attnkit.data.babi_vectors import BabiVocab, QABatch, add_noise
from attnkit.families.memnet.bundle import VOCAB_FILE
from attnkit.families.memnet.config import FAMILY, MemnetConfig
from attnkit.models.memn2n import MemN2N
from attnkit.training import schedules
from attnkit.training.guard import check_weights
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.resumable import trainer_files
from attnkit.training.state import TrainerState


class MemnetAdapter:
    """A memory network's batches, updates, dev score and checkpoints, for the training loop.

    ``dev_score()`` returns ``{"questions", "error_pct", "loss"}`` of the validation questions;
    ``pictures()`` the TensorBoard figures of a validation question's hops."""

    items = "questions"

    def __init__(
        self,
        cfg: MemnetConfig,
        out: Path,
        model: MemN2N,
        vocab: BabiVocab,
        train: QABatch,
        dev_score: Callable[[], dict],
        pictures: Callable[[], list],
    ):
        self.cfg, self.t_cfg, self.out = cfg, cfg.train, out
        self.model, self.vocab, self.train = model, vocab, train
        self.dev_score, self.pictures = dev_score, pictures
        self.optimizer = torch.optim.SGD(model.parameters(), lr=cfg.train.lr)
        self.noise = torch.Generator().manual_seed(cfg.train.seed)

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[Tensor]:
        """The index batches (B,) of epoch ``state.epoch``: a shuffle seeded by the run's seed
        and the epoch, so a run is the same every time."""
        self.model.linear.fill_(state.epoch < self.t_cfg.linear_start)  # linear start, or not
        order = torch.randperm(
            len(self.train), generator=torch.Generator().manual_seed(self.t_cfg.seed + state.epoch)
        )
        return list(order.split(self.t_cfg.batch_size))

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float:
        epochs_done = state.epoch + index / n_batches
        if self.t_cfg.restart_after_linear_start:  # constant through LS, then decay from its end
            epochs_done = max(0.0, epochs_done - self.t_cfg.linear_start)
        return schedules.learning_rate(self.t_cfg, state.step, 0.0, epochs_done)

    def step(self, batch: Tensor, update: int) -> Update:
        """Forward and backward of one update on the questions ``batch`` (B,) indexes."""
        self.model.train()
        b = add_noise(self.train.take(batch), self.cfg.model.noise, self.noise)
        out = self.model(b.stories, b.counts, b.queries)
        loss = F.cross_entropy(out.logits, b.answers, reduction="sum")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.t_cfg.clip_each and self.t_cfg.clip:
            clip_each_weight(self.model.parameters(), self.t_cfg.clip)
        correct = int((out.logits.argmax(-1) == b.answers).sum())
        loss = loss.detach()
        return Update(loss, float(loss) / len(b), correct, len(b))

    def evaluate(self, state: TrainerState) -> DevScore:
        """The validation error % (lower is better) and loss, with pictures of a validation
        question's hops; the history says whether the epoch trained in linear start."""
        dev = self.dev_score()
        return DevScore(
            {"error_pct": dev["error_pct"], "loss": dev["loss"]},
            "error_pct",
            higher_is_better=False,
            extra={"linear": bool(self.model.linear)},
            pictures=self.pictures,
        )

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """``out/best`` or ``out/last``: weights, config, vocabulary and counters; ``resumable``
        (``last``): the optimizer, torch's RNG and the random-noise stream too."""
        extras = (self.optimizer, {"noise": self.noise}) if resumable else (None, None)
        save_checkpoint(self.out / name, self.model, self.cfg, self.vocab, state, *extras)

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""


def save_checkpoint(
    directory: Path,
    model: MemN2N,
    cfg: MemnetConfig,
    vocab: BabiVocab,
    state: TrainerState,
    optimizer: torch.optim.Optimizer | None = None,
    generators: dict[str, torch.Generator] | None = None,
) -> None:
    """A checkpoint: the weights (with the ``linear`` flag), the config, ``vocab.json`` and the
    counters (``best`` is the validation error %); with an
    ``optimizer``, what ``--resume`` reads (:func:`attnkit.training.resumable.trainer_files`)."""
    import json

    check_weights(model, f"epoch {state.epoch} (update {state.step}): {directory} not written")

    def extra(tmp: Path) -> None:
        (tmp / VOCAB_FILE).write_text(json.dumps(vocab.to_json()), encoding="utf-8")

    trainer, tensors = trainer_files(state, optimizer, generators)
    ckpt.write_checkpoint(
        directory, FAMILY, model.state_dict(), cfg.to_dict(), trainer, tensors, extra
    )


@torch.no_grad()
def clip_each_weight(parameters, limit: float) -> None:
    """Scale each parameter's gradient down to norm ``limit`` where it is above: a matrix's
    spectral norm (its largest singular value, MATLAB's ``norm`` in the paper's reference code),
    a vector's length. A gradient that is not finite is left for the loop's guard to skip."""
    for p in parameters:
        if p.grad is None or not bool(torch.isfinite(p.grad).all()):
            continue
        g = p.grad
        norm = torch.linalg.matrix_norm(g, ord=2) if g.dim() == 2 else torch.linalg.vector_norm(g)
        if norm > limit:
            g.mul_(limit / norm)
